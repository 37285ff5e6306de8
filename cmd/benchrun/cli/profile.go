package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"
)

// profileEnv marks a profile process that benchrun profile re-executed
// with the row's GODEBUG: if it still lacks the setting, it refuses
// instead of re-executing again.
const profileEnv = "COROBENCH_PROFILE_REEXEC"

// runProfile is `benchrun profile`: it measures ONE cell in this process,
// as a cell's child process does (driver.MeasureWith, the same GC policy
// and checksum), with a CPU profile of the timed region only, and prints
// the profiled runs' figures, what the profile holds and how to read it.
//
// The profile follows the Env's timer exactly (driver.Options.FinalStart,
// FinalStop, FinalReset, which the driver hangs on scenarios.Env's timer
// of one run made once the iteration count is found): the profiler runs
// while the timer does, one profile per timed segment, and the segments
// are merged into the -o file (profiler). So no warm-up run is in it, nor
// the body's untimed set-up, teardown or pauses, nor a FreshRuntime
// cell's runtime creations. A cell whose run has a fixed count and may be
// repeated (a Shutdown cycle, a fresh runtime's spawns: profileRepeats)
// is measured again and again until -benchtime of timed time is in the
// profile or -wall has passed.
//
// Process settings: a row's cells run with its GOMAXPROCS and GODEBUG
// (scenarios.Row.CellGOMAXPROCS: a pool cell has more Ps; GODEBUG).
// GOMAXPROCS is set here with runtime.GOMAXPROCS, which takes effect at
// once. GODEBUG cannot be (the runtime reads most of its settings at
// start-up), so for a row that has one (stackful-asm: gcshrinkstackoff=1) the command re-executes this
// binary with the row's GODEBUG, as the harness starts its children. The
// asm row's GC fence is the stackful runtime's own and the driver's GC
// policy is the run's, so the profiled run is the child's run.
func runProfile(args []string, stdout, stderr io.Writer) int {
	fs := subFlags("profile", "", stderr)
	scenarioName := fs.String("scenario", "", "the scenario (one name; see benchrun --list)")
	implName := fs.String("impl", "", "the row (one of "+strings.Join(scenarios.RowNames(), ", ")+")")
	params := paramFlags{}
	fs.Var(params, "param", "a parameter's value: key=value (repeatable; one value each); a parameter not given takes the first value of its full sweep")
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, "the timed time to profile: one run of it, or, for a cell of fixed size that is repeated (shutdown, spawn), runs until the profile holds this much")
	wall := fs.Duration("wall", 2*time.Minute, "stop repeating runs after this much wall time, -benchtime gathered or not (the runs' untimed set-up counts here)")
	gcOn := fs.Bool("gc-on", false, "leave the collector on during the timed run (as a run's --gc-on)")
	cpuOut := fs.String("o", "cpu.pprof", "file for the CPU profile of the timed region")
	memOut := fs.String("memprofile", "", "also write the allocation profile (pprof allocs) to this file")
	windowsOut := fs.String("windows", "", "also write each timed segment's CLOCK_MONOTONIC interval to this file, one per line in perf's --time form (start,stop in seconds), for a perf record -k CLOCK_MONOTONIC of this command: see the README's \"Profiling a cell\"")
	if code, done := parseSub(fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "benchrun profile: "+format+"\n%s\n", append(a, usageLine("profile"))...)
		return ExitUsage
	}
	cell, err := profileCell(fs, *scenarioName, *implName, params)
	if err != nil {
		return usageErr("%v", err)
	}
	switch {
	case *benchtime <= 0:
		return usageErr("-benchtime %v: need a positive duration such as 200ms", *benchtime)
	case *wall <= 0:
		return usageErr("-wall %v: need a positive duration such as 5m", *wall)
	case *cpuOut == "":
		return usageErr("-o is empty: name the CPU profile's file, for example cpu.pprof")
	}

	if g := cell.row.GODEBUG(); g != "" && !hasGODEBUG(os.Getenv("GODEBUG"), g) {
		if os.Getenv(profileEnv) != "" {
			fmt.Fprintf(stderr, "benchrun profile: row %s needs GODEBUG=%s, which this re-executed process still lacks (GODEBUG=%q); refusing to measure it in a process its cells never run in\n",
				cell.row, g, os.Getenv("GODEBUG"))
			return ExitUsage
		}
		return reexecProfile(args, g, stdout, stderr)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cell.row.CellGOMAXPROCS(cell.s)))

	f, err := os.Create(*cpuOut)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
		return ExitFailed
	}
	defer f.Close()
	prof := &profiler{labels: labelMode(cell)}
	opts := driver.Options{
		Benchtime: *benchtime,
		GCOn:      *gcOn,
		Loadgen:   scenarios.ReexecLoadgen(harness.LoadgenSubcommand),
	}
	sm, pr, err := profileRuns(cell, opts, prof, *benchtime, *wall)
	name := cell.s.BenchName(cell.row, cell.params)
	if reason, ok := scenarios.IsNotSupported(err); ok {
		fmt.Fprintf(stderr, "benchrun profile: %s: not supported: %s\n", name, reason)
		return ExitFailed
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %s: %v\n", name, err)
		return ExitFailed
	}
	st, err := prof.write(f)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %s: %v\n", *cpuOut, err)
		return ExitFailed
	}
	if *memOut != "" {
		if err := writeAllocs(*memOut); err != nil {
			fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
			return ExitFailed
		}
	}
	if *windowsOut != "" {
		if err := os.WriteFile(*windowsOut, []byte(prof.windowsText()), 0o644); err != nil {
			fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
			return ExitFailed
		}
	}

	fmt.Fprintf(stdout, "%s  %d iterations", name, sm.Iters)
	if pr.runs > 1 {
		fmt.Fprintf(stdout, " in %d runs (figures: their mean)", pr.runs)
	}
	fmt.Fprintf(stdout, " (GOMAXPROCS=%d", cell.row.CellGOMAXPROCS(cell.s))
	if g := cell.row.GODEBUG(); g != "" {
		fmt.Fprintf(stdout, ", GODEBUG=%s", g)
	}
	fmt.Fprintln(stdout, ")")
	for i, m := range cell.s.Metrics {
		u := units.Parse(m.Unit)
		fmt.Fprintf(stdout, "  %-14s %s\n", m.Unit, u.ScaleFor(sm.Values[i]).Format(sm.Values[i]))
	}
	fmt.Fprintf(stdout, "CPU profile of the timed region: %s\n", *cpuOut)
	fmt.Fprintf(stdout, "  %d samples (one per %v of CPU time) over %v timed, in %d timed segments",
		st.samples, time.Second/profileHz, st.timed.Round(time.Microsecond), st.segments)
	if pr.runs > 1 {
		fmt.Fprintf(stdout, " of %d runs", pr.runs)
	}
	fmt.Fprintf(stdout, "; %d samples left out: the timer's own bookkeeping, the profiler's goroutine", st.dropped)
	if prof.labels {
		fmt.Fprintf(stdout, ", and what ran between the segments (one profile per run; only the body's goroutine's samples taken while its timer ran are kept)")
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "  it holds the timed region only: no warm-up run, none of the body's untimed set-up, teardown or pauses\n"+
		"  the figures are the profiled runs', so they include the profiler's cost (SIGPROF at %d Hz; its start and stop around each segment are outside the clock)\n", profileHz)
	fmt.Fprintf(stdout, "  read it with: go tool pprof -top %s   (or -list FUNC, -web)\n", *cpuOut)
	if !prof.labels && st.segments > 0 && st.timed/time.Duration(st.segments) < time.Second/profileHz {
		fmt.Fprintf(stdout, "  its segments average %v, under the sampling period: the kernel checks the profiler's timer at its tick and the profiler restarts\n"+
			"  for each segment, so short segments get fewer samples than their CPU time, their late parts more than their early ones (a larger size gives longer segments)\n",
			(st.timed / time.Duration(st.segments)).Round(time.Microsecond))
	}
	if st.samples < fewSamples {
		fmt.Fprintf(stdout, "  few samples: a longer -benchtime gives more (one sample per %v of CPU time in the timed region)\n", time.Second/profileHz)
	}
	if pr.capped {
		fmt.Fprintf(stderr, "benchrun profile: %s: stopped at -wall %v with %v of -benchtime %v timed in %d runs (their untimed set-up took the rest); the profile holds what was gathered: raise -wall for more\n",
			name, *wall, st.timed.Round(time.Microsecond), *benchtime, pr.runs)
	}
	if *windowsOut != "" {
		fmt.Fprintf(stdout, "timed windows: %s (%d, CLOCK_MONOTONIC, each around one timed segment: from the profiler's start to its stop, the timer's clock reads inside)\n", *windowsOut, len(prof.windows))
		fmt.Fprintf(stdout, "  with this command run under perf record -k CLOCK_MONOTONIC, read perf's samples in them only: perf report --time \"$(paste -sd' ' %s)\"\n", *windowsOut)
		if len(prof.windows) > maxPerfWindows {
			fmt.Fprintf(stdout, "  %d windows may be too long for one argument (perf takes them as one; Linux caps an argument at 128 KiB): filter perf script's sample times by the file instead\n", len(prof.windows))
		}
	}
	if *memOut != "" {
		fmt.Fprintf(stdout, "allocation profile: %s (every allocation of this process, warm-up runs and set-up included, sampled at the default rate)\n", *memOut)
		fmt.Fprintf(stdout, "  read it with: go tool pprof -sample_index=alloc_objects -top %s\n", *memOut)
	}
	return ExitOK
}

// profiledCell is the one cell benchrun profile measures.
type profiledCell struct {
	s      *scenarios.Scenario
	row    scenarios.Row
	params map[string]string
}

// profileCell resolves and validates the cell as a run does (the same
// lookups, the parameters' declared types and ranges, the memory check),
// and requires exactly one of each.
func profileCell(fs *flag.FlagSet, scenarioName, implName string, params paramFlags) (profiledCell, error) {
	if fs.NArg() > 0 {
		return profiledCell{}, fmt.Errorf("unexpected argument %q: the cell is named by flags only", fs.Arg(0))
	}
	if scenarioName == "" || implName == "" {
		return profiledCell{}, errors.New("name the cell: -scenario NAME -impl ROW [-param key=value ...]")
	}
	ss, err := selectScenarios(scenarioName)
	if err != nil {
		return profiledCell{}, err
	}
	rows, err := selectRows(implName)
	if err != nil {
		return profiledCell{}, err
	}
	if len(ss) != 1 || len(rows) != 1 {
		return profiledCell{}, fmt.Errorf("-scenario %s -impl %s names %d scenarios and %d rows: profile one cell at a time", scenarioName, implName, len(ss), len(rows))
	}
	if err := checkOverrides(ss, params); err != nil {
		return profiledCell{}, err
	}
	s := ss[0]
	cell := map[string]string{}
	for _, p := range s.Params {
		vs, ok := params[p.Key]
		switch {
		case !ok:
			cell[p.Key] = p.Full[0]
		case len(vs) != 1:
			return profiledCell{}, fmt.Errorf("-param %s=%s gives %d values: a profile is of one cell; name one value", p.Key, strings.Join(vs, ","), len(vs))
		default:
			cell[p.Key] = vs[0]
		}
	}
	if err := s.CheckCell(cell, memAvailable()); err != nil {
		return profiledCell{}, err
	}
	return profiledCell{s: s, row: rows[0], params: cell}, nil
}

// hasGODEBUG reports whether the GODEBUG value env contains every
// key=value of want.
func hasGODEBUG(env, want string) bool {
	have := strings.Split(env, ",")
	for _, kv := range strings.Split(want, ",") {
		if !slices.Contains(have, kv) {
			return false
		}
	}
	return true
}

// reexecProfile runs this binary again with the same arguments and the
// row's GODEBUG added (and GOMAXPROCS as the harness sets it), marked so
// that it does not re-execute once more.
func reexecProfile(args []string, godebug string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: cannot re-execute with the row's GODEBUG=%s: %v\n", godebug, err)
		return ExitFailed
	}
	cmd := exec.Command(exe, append([]string{"profile"}, args...)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	if old := os.Getenv("GODEBUG"); old != "" {
		godebug = old + "," + godebug // later settings win
	}
	cmd.Env = append(env, "GODEBUG="+godebug, profileEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintf(stderr, "benchrun profile: re-executing with GODEBUG=%s: %v\n", godebug, err)
		return ExitFailed
	}
	return ExitOK
}

// writeAllocs writes the allocs profile after a collection: the heap
// profile is published at the end of a GC cycle, and the driver held the
// collector off during the run.
func writeAllocs(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileHz is the CPU profile's sampling rate: runtime/pprof's, which
// has no way to set another without the runtime printing a warning each
// time a profile starts (runtime.SetCPUProfileRate), and Linux delivers
// no more than its tick rate anyway (CONFIG_HZ; 250 here).
const profileHz = 100

// fewSamples is the sample count under which benchrun profile suggests a
// longer -benchtime.
const fewSamples = 100

// profileRun says what profileRuns did: how many profiled runs it made,
// and whether it stopped at the wall-time cap.
type profileRun struct {
	runs   int
	capped bool
}

// profileRepeats says whether the cell's profile gathers several runs:
// a cell whose run has a fixed count (no warm-up to grow it to
// -benchtime) and that a cell's child repeats in one process: a Cycles
// scenario, a FreshRuntime cell, or one whose scenario lets it rerun on
// this row (Scenario.RerunFixed). Any other fixed cell (memory, burst, a
// cold cell of a row whose runs share state) is one run, as in a child.
func profileRepeats(cell profiledCell) bool {
	s := cell.s
	if s.Iters(cell.params) == 0 {
		return false
	}
	if s.Cycles || (s.FreshRuntime != nil && s.FreshRuntime(cell.params)) {
		return true
	}
	switch s.Rerun(cell.params) {
	case scenarios.RerunAlways:
		return true
	case scenarios.RerunIfFresh:
		d, ok := cell.row.Def()
		return !ok || d.SharedAcrossRuns == ""
	}
	return false
}

// labelMode says whether the cell's profile is taken in label mode (see
// profiler): a cell whose timed segments are short (a FreshRuntime cell's
// one lifecycle, a Cycles scenario's one operation: µs to ms, under or
// near the kernel's tick) on a row that runs the body's coroutines on its
// one goroutine (stackful-asm, stackless), so that the body's goroutine's
// label is the whole timed region. The goroutine rows and stackful-coro
// (whose coroutines are goroutines), and a row added with RegisterRow,
// get a profile per segment.
func labelMode(cell profiledCell) bool {
	short := cell.s.Cycles || (cell.s.FreshRuntime != nil && cell.s.FreshRuntime(cell.params))
	return short && (cell.row == scenarios.StackfulAsm || cell.row == scenarios.Stackless)
}

// profileRuns measures the cell with prof following the timer of each
// profiled run: one run of benchtime for a cell that grows its count (the
// driver's warm-up runs are not profiled), else (profileRepeats) runs
// again and again, each a fresh measurement as a cell's child makes them,
// until benchtime of timed time is in the profile or wall has passed, at
// least one; a Cycles scenario's first, cold cycle is made unprofiled
// first, as a child drops it. It returns the mean of each metric over the
// profiled runs and their total iterations.
func profileRuns(cell profiledCell, opts driver.Options, prof *profiler, benchtime, wall time.Duration) (*driver.Sample, profileRun, error) {
	start := time.Now()
	var pr profileRun
	if cell.s.Cycles {
		if _, err := driver.MeasureWith(cell.s, cell.row, cell.params, opts); err != nil {
			return nil, pr, err
		}
	}
	opts.FinalStart, opts.FinalStop, opts.FinalReset = prof.start, prof.stop, prof.reset
	repeat := profileRepeats(cell)
	var out *driver.Sample
	for {
		sm, err := driver.MeasureWith(cell.s, cell.row, cell.params, opts)
		prof.endRun()
		if err != nil {
			return nil, pr, err
		}
		if out == nil {
			out = &driver.Sample{Values: make([]float64, len(sm.Values))}
		}
		out.Iters += sm.Iters
		for i, v := range sm.Values {
			out.Values[i] += v
		}
		pr.runs++
		if !repeat || prof.timed() >= benchtime {
			break
		}
		if time.Since(start) >= wall {
			pr.capped = true
			break
		}
	}
	for i := range out.Values {
		out.Values[i] /= float64(pr.runs)
	}
	return out, pr, prof.err
}

// profiler gathers the CPU profile of the timed region: its start, stop
// and reset are driver.Options.FinalStart, FinalStop and FinalReset,
// which follow the Env's timer (scenarios.TimerHooks), and it has two ways
// of holding the timed region only.
//
// By default a profile per timed segment: the profiler runs exactly while
// the timer does, whatever goroutine or thread works (each segment is a
// runtime/pprof profile of its own, written to a buffer and parsed when
// it ends; write merges them). On Linux pprof.StopCPUProfile does not
// sleep (its writer blocks until the profile ends): a start, a stop and
// the parse cost ~1.4 ms a segment (1.06 ms without the parse, in a
// process doing nothing else), outside the clock. But the kernel checks a
// CPU-time timer only at its tick (CONFIG_HZ, 250 here: 4 ms), so a
// segment much shorter than that is hardly ever sampled: 7000 Spawn
// pool=cold segments of ~15 µs (108 ms timed) gave no sample at all.
//
// So with labels set (labelMode: a cell of short segments on a row that
// runs the body's coroutines on its one goroutine), one profile runs
// through the whole run, the timer's segments set a pprof label on the
// body's goroutine, and only the samples that carry it are kept: the
// kernel's timer then runs on across segments and samples them in
// proportion to their CPU time.
//
// The methods run on the body's goroutine (on a fiber's stack on the
// stackful rows), one at a time; endRun and write run once the driver has
// returned.
type profiler struct {
	labels bool // label mode (see above)
	on     bool // a profile is running
	buf    bytes.Buffer
	// runTimed is, in label mode, the timed time and segments of the
	// current run so far.
	runTimed time.Duration
	runSegs  int
	// run holds the pieces of the current run since its last reset,
	// kept those of the runs before it.
	run, kept []piece
	// base is the first piece's profile without its samples: the
	// merge's base, so that a profile without samples is still written.
	base    *profile.Profile
	err     error // the first profile that did not parse
	dropped int64 // samples outside the timed region (label mode)
	// runWindows holds the current run's timed segments since its last
	// reset as CLOCK_MONOTONIC intervals, windows those of the runs
	// before it (-windows): each from the end of start to the beginning
	// of stop, so it holds the timer's clock reads and the segment, and
	// the profiler's own start and stop stay outside.
	runWindows, windows []window
	winStart            int64 // the open segment's start
}

// window is one timed segment's interval on CLOCK_MONOTONIC, in ns.
type window struct{ start, stop int64 }

// maxPerfWindows is about how many windows fit one 128 KiB argument of
// perf report --time (~42 bytes each).
const maxPerfWindows = 3000

// monotonicNow reads CLOCK_MONOTONIC, the clock perf record -k
// CLOCK_MONOTONIC stamps its samples with (Go's time.Now keeps its
// monotonic reading relative to the process's start).
func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("benchrun profile: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// windowsText is the windows in perf's --time form, one per line:
// "start,stop" in seconds with nanoseconds.
func (p *profiler) windowsText() string {
	var b strings.Builder
	for _, w := range p.windows {
		fmt.Fprintf(&b, "%d.%09d,%d.%09d\n", w.start/1e9, w.start%1e9, w.stop/1e9, w.stop%1e9)
	}
	return b.String()
}

// piece is one profile: its timed duration and number of timed segments
// (one, but for label mode's profile of a whole run), and its profile if
// it holds samples.
type piece struct {
	d    time.Duration
	segs int
	p    *profile.Profile
}

// timedLabel is the pprof label label mode sets on the body's goroutine
// during a timed segment.
const timedLabel = "corobench-timer"

var timedCtx = pprof.WithLabels(context.Background(), pprof.Labels(timedLabel, "running"))

// start starts a segment (label mode: and the run's profile, if not yet
// running). Gosched lets the profile's writer goroutine start (it reads
// the process's mappings, then blocks until the profile ends) before the
// clock is read, instead of inside the timed region on a single P.
func (p *profiler) start() error {
	if !p.on {
		p.buf.Reset()
		if err := pprof.StartCPUProfile(&p.buf); err != nil {
			return err
		}
		p.on = true
		runtime.Gosched()
	}
	if p.labels {
		pprof.SetGoroutineLabels(timedCtx)
	}
	p.winStart = monotonicNow() // last: see runWindows
	return nil
}

// stop ends the segment, of d timed: its profile (label mode: its label).
func (p *profiler) stop(d time.Duration) {
	p.runWindows = append(p.runWindows, window{p.winStart, monotonicNow()}) // first: see runWindows
	if p.labels {
		pprof.SetGoroutineLabels(context.Background())
		p.runTimed += d
		p.runSegs++
		return
	}
	p.finish(d, 1)
}

// finish stops the running profile and keeps it as a piece of d timed in
// segs segments (label mode: only its samples taken in a segment).
func (p *profiler) finish(d time.Duration, segs int) {
	p.on = false
	pprof.StopCPUProfile()
	pp, err := profile.ParseData(p.buf.Bytes())
	if err != nil {
		if p.err == nil {
			p.err = fmt.Errorf("a CPU profile of the timed region: %w", err)
		}
		return
	}
	if p.base == nil {
		p.base = pp.Copy()
		p.base.Sample = nil
	}
	if p.labels {
		all := countSamples(pp)
		pp.Sample = slices.DeleteFunc(pp.Sample, func(s *profile.Sample) bool {
			return !slices.Contains(s.Label[timedLabel], "running")
		})
		for _, s := range pp.Sample {
			delete(s.Label, timedLabel)
		}
		p.dropped += all - countSamples(pp)
	}
	if len(pp.Sample) == 0 {
		pp = nil
	}
	p.run = append(p.run, piece{d: d, segs: segs, p: pp})
}

// reset drops the current run's pieces: the body reset its timer, so
// they were its set-up (label mode: the run's profile so far).
func (p *profiler) reset() {
	if p.on && p.labels {
		pprof.StopCPUProfile()
		p.on = false
	}
	p.run, p.runTimed, p.runSegs = p.run[:0], 0, 0
	p.runWindows = p.runWindows[:0]
}

// endRun ends the driver's run (label mode: keeps its profile) and keeps
// its pieces; the next run starts a fresh Env, whose reset drops only its
// own.
func (p *profiler) endRun() {
	if p.on {
		// Label mode's profile of the run; in the other mode a body
		// that failed with its timer running (the driver stops the
		// hooks, so not otherwise).
		p.finish(p.runTimed, p.runSegs)
	}
	p.kept = append(p.kept, p.run...)
	p.windows = append(p.windows, p.runWindows...)
	p.run, p.runTimed, p.runSegs, p.runWindows = nil, 0, 0, nil
}

// timed is the timed time of the pieces kept so far and of the current
// run's segments.
func (p *profiler) timed() time.Duration {
	d := p.runTimed
	for _, s := range slices.Concat(p.kept, p.run) {
		d += s.d
	}
	return d
}

// profileStats describes the profile write wrote.
type profileStats struct {
	samples, dropped int64
	segments         int
	timed            time.Duration
}

// bookkeeping matches the functions whose samples write leaves out: the
// timer's own work (its counters, the profiler's start and stop, which
// run inside StartTimer and StopTimer around the clock reads) and
// runtime/pprof's writer goroutine, woken by the samples themselves.
var bookkeeping = regexp.MustCompile(`^(github\.com/corobench/corobench/scenarios\.\(\*Env\)\.(Start|Stop|Reset)Timer|runtime/pprof\.profileWriter)$`)

// write merges the kept segments into one profile, leaves the
// bookkeeping out, sets its duration to the timed time, and writes it.
func (p *profiler) write(w io.Writer) (profileStats, error) {
	p.endRun()
	st := profileStats{timed: p.timed()}
	for _, s := range p.kept {
		st.segments += s.segs
	}
	if p.base == nil {
		return st, errors.New("the driver made no profiled run (no timed segment)")
	}
	srcs := []*profile.Profile{p.base}
	for _, s := range p.kept {
		if s.p != nil {
			srcs = append(srcs, s.p)
		}
	}
	merged, err := profile.Merge(srcs)
	if err != nil {
		return st, err
	}
	all := countSamples(merged)
	merged.FilterSamplesByName(nil, bookkeeping, nil, nil)
	st.samples = countSamples(merged)
	st.dropped = all - st.samples + p.dropped
	merged.DurationNanos = st.timed.Nanoseconds()
	return st, merged.Write(w)
}

// countSamples is the number of CPU samples in p (the first value of
// each sample is its count).
func countSamples(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}
