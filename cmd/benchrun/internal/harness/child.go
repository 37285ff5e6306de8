package harness

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// ChildSubcommand is the hidden benchrun subcommand that runs one cell.
const ChildSubcommand = "cell"

// cellErrorPrefix starts the line on which a failed child states its error,
// so the parent can tell it from whatever else the child printed.
const cellErrorPrefix = "benchrun cell error: "

// childReport is the one JSON line a child writes to stdout.
type childReport struct {
	Iters       int       `json:"iters,omitempty"`
	Values      []float64 `json:"values,omitempty"`
	Unsupported string    `json:"unsupported,omitempty"`
	// Runs is each timed run's headline figure and what the run was
	// exposed to (driver.Signal), in run order.
	Runs []runReport `json:"runs,omitempty"`
	// Judged: a disturbance mark applied (driver.Sample.Judged).
	// Disturbed: the process had no clean majority of timed runs, so
	// its figure is of a disturbed machine (driver.Sample.Disturbed).
	Judged    bool `json:"judged,omitempty"`
	Disturbed bool `json:"disturbed,omitempty"`
}

// droppedRuns counts the timed runs the mark found disturbed.
func (r childReport) droppedRuns() (dropped int) {
	for _, run := range r.Runs {
		if run.Disturbed {
			dropped++
		}
	}
	return dropped
}

// runReport is one timed run in a childReport; durations in ns.
type runReport struct {
	Value    float64 `json:"v"`
	Wall     int64   `json:"wall"`
	RunDelay int64   `json:"delay"`
	AllDelay int64   `json:"alldelay"`
	CPU      int64   `json:"cpu"`
	Own      int64   `json:"own"`  // the process's other threads' CPU time (driver.Signal.Own)
	Wait     int64   `json:"wait"` // the wait the mark judges (driver.Signal.Wait)
	Nivcsw   int64   `json:"nivcsw"`
	// MemBefore, MemAfter: the memory probe's readings around the run
	// (driver.Signal.MemBefore, MemAfter), ns per load; 0 when off.
	MemBefore float64 `json:"mb,omitempty"`
	MemAfter  float64 `json:"ma,omitempty"`
	// CoreBefore, CoreAfter: the core probe's readings around the run
	// (driver.Signal.CoreBefore, CoreAfter), ns per iteration of its
	// throughput-bound loop and of its latency-bound one; 0 when off.
	CoreALUBefore   float64 `json:"cab,omitempty"`
	CoreChainBefore float64 `json:"ccb,omitempty"`
	CoreALUAfter    float64 `json:"caa,omitempty"`
	CoreChainAfter  float64 `json:"cca,omitempty"`
	// CoreShared: the core probe's readings were over the run's limit
	// (driver.Signal.CoreShared), whether or not the mark judged them.
	CoreShared bool `json:"cs,omitempty"`
	// Disturbed: the mark found this run disturbed.
	Disturbed bool `json:"disturbed,omitempty"`
	// The run's timed segments (driver.Signal.Segments): how many, how
	// many preempted (their thread switched involuntarily inside them)
	// or moved between threads, and the timed time of all and of the
	// preempted ones (ns).
	Segments      int   `json:"seg,omitempty"`
	Preempted     int   `json:"pre,omitempty"`
	Moved         int   `json:"moved,omitempty"`
	Timed         int64 `json:"timed,omitempty"`
	PreemptedTime int64 `json:"pret,omitempty"`
}

// segments is the run log's note of the run's timed segments.
func (r runReport) segments() string {
	if r.Segments == 0 {
		return ""
	}
	s := fmt.Sprintf(", timed %v in %d segments, %d preempted (%v)", time.Duration(r.Timed), r.Segments, r.Preempted, time.Duration(r.PreemptedTime))
	if r.Moved > 0 {
		s += fmt.Sprintf(", %d moved between threads", r.Moved)
	}
	return s
}

// waitShare is the share of the run's wall time its body's thread waited
// for other tasks: the figure the mark judges (driver.Signal.DelayShare,
// the process's own threads' time taken off the wait on one CPU).
// A report without the wait and own fields (a child from before they
// existed, a scripted one) is judged by its run delay whole, as then:
// a real child reports Wait = RunDelay whenever Own is 0.
func (r runReport) waitShare() float64 {
	wait := r.Wait
	if wait == 0 && r.Own == 0 {
		wait = r.RunDelay
	}
	return float64(wait) / float64(max(1, r.Wall))
}

// memProbe is the run log's note of the memory probe's readings around
// the run, "" when the probe was off.
func (r runReport) memProbe() string {
	if r.MemBefore == 0 && r.MemAfter == 0 {
		return ""
	}
	return fmt.Sprintf(", mem probe %.1f/%.1f ns/load", r.MemBefore, r.MemAfter)
}

// coreProbe is the run log's note of the core probe's readings around the
// run (its loops' ratio, 1.0 on an unshared core of the VM it was made
// on), "" when the probe was off.
func (r runReport) coreProbe() string {
	before, after, ok := r.coreRatios()
	if !ok {
		return ""
	}
	return fmt.Sprintf(", core probe %.2f/%.2f", before, after)
}

// segTotals sums the timed segments of a cell's counted repetitions
// (every timed run of each: the median leaves none of their time out of
// the figure's level).
type segTotals struct {
	segments, preempted  int
	timed, preemptedTime time.Duration
}

func (t *segTotals) add(rep childReport) {
	for _, r := range rep.Runs {
		t.segments += r.Segments
		t.preempted += r.Preempted
		t.timed += time.Duration(r.Timed)
		t.preemptedTime += time.Duration(r.PreemptedTime)
	}
}

// shortSegment is the longest mean timed segment whose preemptions the
// reps line reports. A segment longer than a scheduler tick (1–4 ms) is
// preempted by the tick as a matter of course (a 26 ms Switch run: 2–4
// times), and the disturbance mark judges its run; a shorter one (a
// FreshRuntime lifecycle of ~2 µs, a Shutdown cycle) is preempted only
// when another thread wakes inside it, and one such preemption can
// weigh as much as tens of segments.
const shortSegment = time.Millisecond

// text is the reps line's note of the preempted segments (see
// scenarios.SegmentCounts): "" unless the cell's segments are short and
// some were preempted.
func (t segTotals) text() string {
	if t.segments == 0 || t.preempted == 0 || t.timed/time.Duration(t.segments) >= shortSegment {
		return ""
	}
	return fmt.Sprintf("; preempted: %d of %d timed segments (%.1f%%), %.1f%% of the timed time", t.preempted, t.segments,
		100*float64(t.preempted)/float64(t.segments), 100*float64(t.preemptedTime)/float64(max(1, t.timed)))
}

// coreTotals holds a cell's timed runs' core probe readings, over every
// repetition that gave a report, counted or not: the conditions the cell
// met, which its reps line states so that the results file says how much
// of a figure was taken on a shared core, mark or no mark. ratios is each
// run's higher reading (before or after it); marked counts the runs the
// child found over the run's limit (runReport.CoreShared), which is what
// --core-mark judged by.
type coreTotals struct {
	ratios []float64
	marked int
}

func (t *coreTotals) add(rep childReport) {
	for _, r := range rep.Runs {
		if before, after, ok := r.coreRatios(); ok {
			t.ratios = append(t.ratios, max(before, after))
			if r.CoreShared {
				t.marked++
			}
		}
	}
}

// text is the reps line's note of them ("" when the probe was off). With
// the mark, the runs the mark found shared, against the core-probe line's
// limit; without it, the runs with a reading over base's limit, which the run
// takes from its own readings once every cell is done
// (runCoreBase.settle). The report reads it (report.repsCoreShared, its twin).
func (t coreTotals) text(marking bool, base runCoreBase) string {
	if len(t.ratios) == 0 {
		return ""
	}
	if marking {
		return fmt.Sprintf("; core shared: %d of %d timed runs (a core probe reading over the run's limit: the %s line's, or the run log's last before the repetition)", t.marked, len(t.ratios), results.KeyCoreProbe)
	}
	limit, shared := base.limit(), 0
	for _, r := range t.ratios {
		if r > limit {
			shared++
		}
	}
	return fmt.Sprintf("; core shared: %d of %d timed runs (a core probe reading over %.3f, %s)", shared, len(t.ratios), limit, base.limitText())
}

// runCoreBase is, without the mark, the run's own base for the core probe:
// the unshared core's ratio (unsharedRatio) among every reading of every
// timed run (thousands in a full run, taken over all of its minutes),
// against which the reps lines count a cell's runs on a shared core. A
// base read before the first cell (corebase.go) is what the mark needs,
// since a child judges its runs as they end; a record can wait for the
// whole run's readings, which no stretch of a busy sibling covers.
type runCoreBase struct {
	readings []float64
	ratio    float64 // unsharedRatio(readings), set by settle
	spread   float64 // unsharedSpread(readings, ratio), set by settle
}

func (b *runCoreBase) add(rep childReport) {
	for _, r := range rep.Runs {
		if before, after, ok := r.coreRatios(); ok {
			b.readings = append(b.readings, before, after)
		}
	}
}

// settle takes the base from the readings gathered so far.
func (b *runCoreBase) settle() {
	b.ratio = unsharedRatio(b.readings)
	b.spread = unsharedSpread(b.readings, b.ratio)
}

// refresh is, with the mark, the limit for the children still to come:
// the run's readings so far (the ones read before the first cell, which
// seed them, and every timed run's since) give a base and a width as the
// first readings did, and far more of them. A base read while the
// sibling was busy for most of its 2.4 s is loose (2026-12-07 16:52: of
// 240 readings the 2nd percentile was 0.929 and the median of those
// within 10% of it 0.988, so the limit went to the 10% cap, 1.022), while
// the whole run's readings held their unshared mode at 0.92 (the 2nd to
// the 30th percentile of 24682), which gives 0.938.
func (b *runCoreBase) refresh() float64 {
	b.settle()
	return b.limit()
}

// limit is driver.CoreLimit of the base: 2–10% over it.
func (b runCoreBase) limit() float64 { return driver.CoreLimit(b.ratio, b.spread) }

func (b runCoreBase) limitText() string {
	if b.ratio <= 0 {
		return fmt.Sprintf("no readings to take a base from: %.2f", driver.CoreSharedRatio)
	}
	return fmt.Sprintf("%.1f%% over the %s of the run's %d readings, %.3f: %s", 100*(b.limit()/b.ratio-1), unsharedRank, len(b.readings), b.ratio, marginRule(b.spread, "those", "it"))
}

// coreRatios is the run's two core probe ratios; ok is false when the
// probe was off.
func (r runReport) coreRatios() (before, after float64, ok bool) {
	if r.CoreALUBefore == 0 && r.CoreALUAfter == 0 {
		return 0, 0, false
	}
	before = driver.CoreReading{ALU: r.CoreALUBefore, Chain: r.CoreChainBefore}.Ratio()
	after = driver.CoreReading{ALU: r.CoreALUAfter, Chain: r.CoreChainAfter}.Ratio()
	return before, after, true
}

// runReports is a sample's timed runs as the child reports them.
func runReports(sm *driver.Sample) []runReport {
	var out []runReport
	for i, sig := range sm.Signals {
		r := runReport{Wall: int64(sig.Wall), RunDelay: int64(sig.RunDelay), AllDelay: int64(sig.AllDelay), CPU: int64(sig.CPU), Own: int64(sig.Own), Wait: int64(sig.Wait()), Nivcsw: sig.Nivcsw, MemBefore: sig.MemBefore, MemAfter: sig.MemAfter,
			CoreALUBefore: sig.CoreBefore.ALU, CoreChainBefore: sig.CoreBefore.Chain, CoreALUAfter: sig.CoreAfter.ALU, CoreChainAfter: sig.CoreAfter.Chain, CoreShared: sig.CoreShared,
			Segments: sig.Segments.Segments, Preempted: sig.Segments.Preempted, Moved: sig.Segments.Moved, Timed: int64(sig.Segments.Time), PreemptedTime: int64(sig.Segments.PreemptedTime)}
		if i < len(sm.Runs) && len(sm.Runs[i]) > 0 {
			r.Value = sm.Runs[i][0]
		}
		if i < len(sm.DisturbedRuns) {
			r.Disturbed = sm.DisturbedRuns[i]
		}
		out = append(out, r)
	}
	return out
}

// childArgs are the arguments that make benchrun run cell c as a child.
func childArgs(c Cell, opts Options) []string {
	args := []string{ChildSubcommand,
		"-scenario", c.Scenario.Name,
		"-impl", string(c.Row),
		"-params", scenarios.FormatParams(c.Params),
		"-benchtime", opts.Benchtime.String(),
	}
	if opts.GCOn {
		args = append(args, "-gc-on")
	}
	if opts.MemProbe {
		args = append(args, "-mem-probe")
	}
	if opts.CoreProbe {
		args = append(args, "-core-probe")
	}
	if opts.CoreMark {
		args = append(args, "-core-mark")
	}
	if (opts.CoreProbe || opts.CoreMark) && opts.coreLimit > 0 {
		args = append(args, "-core-limit", strconv.FormatFloat(opts.coreLimit, 'g', -1, 64))
	}
	return args
}

// ChildMain is the body of `benchrun cell`: it measures one cell in this
// process and writes a childReport line to stdout. A row that does not
// support the scenario is a report, not a failure; any other error goes to
// stderr with exit status 1.
func ChildMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun "+ChildSubcommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", "", "scenario name")
	impl := fs.String("impl", "", "row")
	params := fs.String("params", "", "key=value,... parameter values")
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, "minimum duration of the timed run")
	gcOn := fs.Bool("gc-on", false, "leave the collector on during the timed run (GC-safe rows only)")
	noMark := fs.Bool("no-disturbance-mark", false, "count every timed run, disturbed or not (tests)")
	memProbe := fs.Bool("mem-probe", false, "read the memory probe before and after each run (driver.Options.MemProbe)")
	coreProbe := fs.Bool("core-probe", false, "read the core probe before and after each run (driver.Options.CoreProbe)")
	coreMark := fs.Bool("core-mark", false, "read the core probe and mark a run whose core was shared disturbed (driver.Options.CoreMark)")
	coreLimit := fs.Float64("core-limit", 0, "the core probe ratio above which a run's core was shared (driver.Options.CoreLimit; 0: driver.CoreSharedRatio)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s, ok := scenarios.Lookup(*name)
	if !ok {
		fmt.Fprintf(stderr, "benchrun %s: unknown scenario %q\n", ChildSubcommand, *name)
		return 2
	}
	row, ok := scenarios.ParseRow(*impl)
	if !ok {
		fmt.Fprintf(stderr, "benchrun %s: unknown row %q\n", ChildSubcommand, *impl)
		return 2
	}
	p, err := scenarios.ParseParams(*params)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun %s: %v\n", ChildSubcommand, err)
		return 2
	}
	if want := row.CellGOMAXPROCS(s); runtime.GOMAXPROCS(0) != want {
		// Run by hand (the harness sets GOMAXPROCS in the child's
		// environment, childEnv): give the cell the Ps it has under the
		// harness, as profile does. Left at the machine's count, a
		// single-P row's body alternated between two threads
		// (stackful-coro Priority, session 10: the runtime's monitor
		// preempted it ~15 times a second).
		runtime.GOMAXPROCS(want)
	}
	measure := func() (*driver.Sample, error) {
		return driver.MeasureWith(s, row, p, driver.Options{Benchtime: *benchtime, GCOn: *gcOn, NoMark: *noMark, MemProbe: *memProbe, CoreProbe: *coreProbe, CoreMark: *coreMark, CoreLimit: *coreLimit, Loadgen: scenarios.ReexecLoadgen(LoadgenSubcommand)})
	}
	var sm *driver.Sample
	if s.Cycles {
		start := time.Now()
		sm, err = measureCycles(measure, *benchtime, func() time.Duration { return time.Since(start) })
	} else {
		sm, err = measure()
	}
	var rep childReport
	if reason, ok := scenarios.IsNotSupported(err); ok {
		rep.Unsupported = reason
	} else if err != nil {
		// The first line is the reason the parent records (failureReason);
		// the whole error, panics' stacks included, follows for the log.
		msg := fmt.Sprintf("%s: %v", s.BenchName(row, p), err)
		first, rest, _ := strings.Cut(msg, "\n")
		fmt.Fprintf(stderr, "%s%s\n", cellErrorPrefix, first)
		if rest != "" {
			fmt.Fprintln(stderr, rest)
		}
		return 1
	} else {
		rep.Iters, rep.Values, rep.Runs = sm.Iters, sm.Values, runReports(sm)
		rep.Judged, rep.Disturbed = sm.Judged, sm.Disturbed
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintf(stderr, "benchrun %s: writing the report: %v\n", ChildSubcommand, err)
		return 1
	}
	return 0
}

// maxCycles bounds the cycles of a Cycles scenario in one child;
// minWarmCycles is how many warm cycles a child aims for when each is
// short (see measureCycles).
const (
	maxCycles     = 1000
	minWarmCycles = 4
)

// measureCycles runs a Cycles scenario's one-shot measurement again and
// again in this process (each run a fresh runtime and a fresh set-up, as
// driver.MeasureWith builds them): at least twice, then until elapsed()
// reaches benchtime or maxCycles runs; and while fewer than minWarmCycles
// warm runs are in, until elapsed() reaches minWarmCycles × benchtime, so
// that a cycle of about the bench time (a short --quick bench time and a
// runtime slow to set up) still gets several warm runs, and a cycle much
// longer than it (n=100000) stops at two. The first run is the cold one
// (first-touch page faults, lazy initialisation), a warm-up as the
// driver's growth runs are for other scenarios: it is dropped. The sample
// is the mean of each metric over the other runs (over the undisturbed
// ones when they are a majority; else over all, and the sample is
// disturbed), and its Iters the sum of their iterations, so a figure is
// never one cold shot of a millisecond.
// A failed run fails the cell.
func measureCycles(measure func() (*driver.Sample, error), benchtime time.Duration, elapsed func() time.Duration) (*driver.Sample, error) {
	var runs []*driver.Sample
	more := func() bool {
		e, warm := elapsed(), len(runs)-1
		switch {
		case len(runs) < 2:
			return true
		case len(runs) >= maxCycles:
			return false
		case e < benchtime:
			return true
		}
		return warm < minWarmCycles && e < time.Duration(minWarmCycles)*benchtime
	}
	for more() {
		sm, err := measure()
		if err != nil {
			return nil, err
		}
		runs = append(runs, sm)
	}
	warm := runs[1:]
	// A cycle is one timed run; a disturbed one (driver.Sample.Disturbed)
	// is left out of the mean when the clean ones are a majority, and the
	// whole process is marked disturbed when they are not.
	use := warm
	var clean []*driver.Sample
	judged := false
	for _, sm := range warm {
		judged = judged || sm.Judged
		if !sm.Disturbed {
			clean = append(clean, sm)
		}
	}
	out := &driver.Sample{Values: make([]float64, len(warm[0].Values)), Judged: judged}
	if 2*len(clean) > len(warm) {
		use = clean
	} else {
		out.Disturbed = judged
	}
	for _, sm := range warm {
		out.Runs = append(out.Runs, sm.Runs...)
		out.Signals = append(out.Signals, sm.Signals...)
		out.DisturbedRuns = append(out.DisturbedRuns, sm.DisturbedRuns...)
	}
	for _, sm := range use {
		out.Iters += sm.Iters
		for i, v := range sm.Values {
			out.Values[i] += v
		}
	}
	for i := range out.Values {
		out.Values[i] /= float64(len(use))
	}
	return out, nil
}
