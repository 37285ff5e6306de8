// Package driver measures one cell (scenario × row × parameter values) in
// the current process, the way benchrun's child processes do: it grows the
// iteration count until one run lasts at least its share of the bench time
// (these runs are the warm-up), then makes several timed runs with that
// count and reports, per metric, their median; every run under one GC
// policy for every row (a forced GC, a heap pre-grown to what the run will
// allocate, then the collector held off for the run; gcpolicy.go), and
// every run held to its checksum. It is the measurement apart from the
// workloads (the scenario bodies, package scenarios/bodies) and the
// runtimes (package scenarios/rows), which it reaches only through the
// scenarios registry. See docs/design.md §6 (Measurement).
package driver

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/corobench/corobench/scenarios"
)

// DefaultRuns is how many timed runs a cell makes in one process after its
// warm-up, each of at least Benchtime/DefaultRuns (JMH's measurement
// iterations inside a fork); fewer, each longer, when a run's untimed
// set-up is so long that five would take more than timedBudget bench
// times (runsFor). The process reports the median of each
// metric over them: a burst of another tenant's work that hits one or two
// runs does not move the process's figure, where it moved the mean of one
// long run. Odd, so that the median is one run's figure. Why one figure per
// process and not one per run: benchstat takes each result line for an
// independent sample, and the runs of one process are not independent of
// each other (they share the process's address layout, its CPU and the
// stretch of time it ran in); the processes are the samples.
const DefaultRuns = 5

// Options tune Measure.
type Options struct {
	// Benchtime is the least total duration of the timed runs: each of
	// the Runs timed runs lasts at least Benchtime/Runs.
	Benchtime time.Duration
	// Runs is the number of timed runs after the warm-up; 0 means
	// DefaultRuns. A fixed-iteration cell runs once whatever it says
	// unless its scenario's RerunFixed allows more (then Runs runs, or
	// 0: as many as its budget holds, at least minFixedRuns), and so
	// does a run with FinalStart set (one run of Benchtime).
	Runs int
	// GCOn selects GCPolicyOn instead of GCPolicy.
	GCOn bool
	// Loadgen starts the echo scenario's load generator in a process of
	// its own (see ReexecLoadgen). Nil: the echo scenario fails, saying so.
	Loadgen scenarios.LoadgenCommand
	// FinalStart, FinalStop and FinalReset, when FinalStart is set, follow
	// the timer (scenarios.TimerHooks) of one more run made once the
	// iteration count is found (a FixedIters scenario: its one run), whose
	// figures MeasureWith then returns: the profiler's hook (benchrun
	// profile). FinalStart is called each time that run's timer starts,
	// before the counters and the clock are read; FinalStop each time it
	// stops, after them, with the segment's timed duration; FinalReset (if set) when the body resets the
	// timer, with nothing open: what was gathered since the run began is
	// to be dropped. So they hold the timed region and nothing else: no
	// warm-up run, no collection, none of the body's untimed set-up,
	// teardown or pauses; a FreshRuntime cell's run opens and closes them
	// once per iteration. They run on the body's goroutine and stack (a
	// fiber's on the stackful rows). An error from FinalStart ends the
	// measurement with it; the run's later timer calls then skip them.
	FinalStart func() error
	FinalStop  func(timed time.Duration)
	FinalReset func()
	// Disturbed marks a timed run disturbed from its Signal (disturb.go).
	// Nil means the default mark, Disturbed, for a cell on one P that is
	// one runnable thread and reports a time (judgedByDefault), and no
	// mark for the others (their own threads wait for each other).
	// A disturbed run is re-taken (at most half the planned runs more,
	// within the cell's timed budget) and left out of the median; a
	// process left without a clean majority says so (Sample.Disturbed).
	Disturbed func(Signal) bool
	// NoMark turns the disturbance mark off (Disturbed too): every run
	// counts, as before the mark existed. For tests whose figures do not
	// matter and must not depend on the machine's load.
	NoMark bool
	// MemProbe takes the memory probe's reading (memprobe.go) just before
	// and just after each timed run's body, outside its timed region and
	// its schedstat window, on the body's thread, into Signal.MemBefore
	// and MemAfter. Its buffer (64 MiB) is mapped and touched once, before
	// the warm-up. Ignored for a scenario that measures resident memory
	// (the buffer would be counted). Its loads evict much of the caches
	// before each run, so a run of a few µs (a Shutdown cycle) starts
	// colder than without it: a diagnostic, not for figures to quote.
	MemProbe bool
	// CoreProbe takes the core probe's reading (coreprobe.go: a
	// throughput-bound and a latency-bound register loop, ~0.2 ms) just
	// before and just after each timed run's body, outside its timed
	// region and its schedstat window, on the body's CPU, into
	// Signal.CoreBefore and CoreAfter.
	CoreProbe bool
	// CoreMark reads the core probe (CoreProbe) and adds the core mark
	// (CoreShared: a reading that says another thread shared the core)
	// to the disturbance mark of a cell that has one (judge): such a run
	// is re-taken and left out as a disturbed one is.
	CoreMark bool
	// CoreLimit is the Ratio above which a core probe reading marks its
	// run (CoreLimit: benchrun sets it from the run-wide base it reads
	// before the first cell); 0 means CoreSharedRatio.
	CoreLimit float64

	// wants is the measurement's memo of Scenario.Want (wantMemo),
	// made by MeasureWith; nil (a test's runOnce) computes Want for
	// every run.
	wants *wantMemo
}

// Sample is the measurement of one cell in one process: Iters iterations
// per timed run, and the values of the scenario's metrics, each the median
// over the timed runs.
type Sample struct {
	Iters  int
	Values []float64 // in the order of Scenario.Metrics
	// Runs holds each timed run's values, in run order (one entry for a
	// FixedIters scenario), so a reader can see the spread inside the
	// process that the median hides.
	Runs [][]float64
	// Signals holds each timed run's exposure to the rest of the machine
	// (disturb.go), and DisturbedRuns the mark's verdict on it, in the
	// order of Runs. Runs made in place of disturbed ones follow the
	// planned ones.
	Signals       []Signal
	DisturbedRuns []bool
	// Judged says whether a disturbance mark applied (a cell on one P,
	// or Options.Disturbed set). Disturbed says that fewer than a
	// majority of the planned runs were clean even after the re-takes:
	// Values is then the median of every run, a figure of the disturbed
	// machine, which the harness does not count as a sample of the cell.
	Judged, Disturbed bool
}

// Measure runs one cell in this process. It grows the iteration count as
// testing.B does until a run lasts at least benchtime/DefaultRuns (these
// runs are the warm-up; a fixed-iteration cell has none, and runs once
// unless its scenario's RerunFixed allows more), then makes
// DefaultRuns timed runs with that count and returns the median of each
// metric over them. A checksum mismatch is an error; so is a row that does
// not support the scenario (a *NotSupportedError).
func Measure(s *scenarios.Scenario, row scenarios.Row, params map[string]string, benchtime time.Duration) (*Sample, error) {
	return MeasureWith(s, row, params, Options{Benchtime: benchtime})
}

// MeasureWith is Measure with all options.
func MeasureWith(s *scenarios.Scenario, row scenarios.Row, params map[string]string, opts Options) (*Sample, error) {
	if err := checkParams(s, params); err != nil {
		return nil, err
	}
	if d, ok := row.Def(); ok && opts.GCOn && d.NoGCOn != "" {
		return nil, scenarios.NotSupported("%s", d.NoGCOn)
	}
	if opts.Runs < 0 {
		return nil, fmt.Errorf("driver: Options.Runs %d: want 0 (the default, %d) or more timed runs", opts.Runs, DefaultRuns)
	}
	opts.wants = newWantMemo()
	gc := newGCPolicy(opts.GCOn)
	gc.cold = measuresResidentMemory(s)
	defer gc.end()
	if opts.MemProbe && gc.cold {
		// Its 64 MiB would be the process's resident memory too.
		opts.MemProbe = false
	}
	if opts.CoreMark {
		opts.CoreProbe = true
	}
	if opts.MemProbe {
		// Mapped and touched before the warm-up (if the cell has one),
		// whose runs then push the buffer out of the caches before the
		// first timed run.
		if _, err := theMemProbe(); err != nil {
			return nil, fmt.Errorf("driver: the memory probe's buffer: %w", err)
		}
	}
	warmOpts := opts
	warmOpts.MemProbe = false // the warm-up runs are not reported: no readings
	warmOpts.CoreProbe = false
	hooked := opts.FinalStart != nil
	if fixed := s.Iters(params); fixed > 0 {
		// No warm-up run to learn the heap the run needs from (its size
		// is its parameter, and a run before it could leave it warm):
		// pre-grow a fixed floor. Not for a Cycles scenario: its caller
		// repeats this measurement and drops the first, so the later
		// cycles reuse the heap of the ones before, and a floor regrown
		// each cycle (the scavenger returns it between measurements)
		// doubled its cost.
		warm := uint64(fixedWarmHeap)
		if s.Cycles {
			warm = 0
		}
		r, err := runOnce(s, row, params, fixed, opts, gc, warm, hooked)
		if err != nil {
			return nil, err
		}
		mark := judge(s, opts)
		r.judge(mark)
		if hooked || !rerunsFixed(s, row, params) {
			return summarize(s, []*run{r}, mark != nil, 1)
		}
		// A cell whose every run is a whole measurement in a runtime
		// of its own (Scenario.RerunFixed): more runs, as many as its
		// budget holds but at least minFixedRuns, the first one among
		// them, and their median, as for every other cell. Each later
		// run starts with the same floor of warm heap, or what the
		// first took if more.
		runs := orDefault(opts.Runs, max(minFixedRuns, runsFor(r.wall, opts.Benchtime)))
		return timedRuns(s, row, params, fixed, opts, gc, mark, runs, []*run{r}, r, func(last *run) uint64 {
			return max(warm, last.heapFor(fixed))
		})
	}
	runs := orDefault(opts.Runs, DefaultRuns)
	each := opts.Benchtime / time.Duration(runs)
	if hooked {
		// The profiler wants one run of the whole bench time.
		runs, each = 1, opts.Benchtime
	}
	const maxIters = 1 << 30
	n := 1
	var last *run
	var warmMark func(Signal) bool // see warmRetakes
	if !opts.NoMark && opts.Disturbed == nil && judgedByDefault(s) {
		warmMark = warmDisturbed
	}
	for retakes := 0; ; {
		r, err := runOnce(s, row, params, n, warmOpts, gc, last.heapFor(n), false)
		if err != nil {
			return nil, err
		}
		last = r.follows(last)
		if r.env.Elapsed() >= each && warmMark != nil && warmMark(r.sig) && retakes < warmRetakes {
			retakes++
			continue // the same count again: see warmRetakes
		}
		if r.env.Elapsed() >= each || n >= maxIters {
			break
		}
		n = nextIters(n, r.env.Elapsed(), each)
	}
	if !hooked && opts.Runs == 0 {
		// As many timed runs as the cell's budget holds: a cell whose
		// every run has a long untimed set-up (Yield n=262144 spawns
		// its coroutines anew in each) makes fewer, each longer, so
		// that the timed time stays the bench time.
		if runs = runsFor(last.wall, opts.Benchtime); runs < DefaultRuns {
			if each = opts.Benchtime / time.Duration(runs); last.env.Elapsed() < each {
				n = nextIters(n, last.env.Elapsed(), each)
			}
		}
	}
	// The warm-up is over: the runs that count, with the same count.
	mark := judge(s, opts)
	if hooked {
		r, err := runOnce(s, row, params, n, opts, gc, last.heapFor(n), true)
		if err != nil {
			return nil, err
		}
		r.follows(last)
		r.judge(mark)
		return summarize(s, []*run{r}, mark != nil, 1)
	}
	return timedRuns(s, row, params, n, opts, gc, mark, runs, nil, last, func(last *run) uint64 { return last.heapFor(n) })
}

// warmRetakes is how many times in a row a warm-up run that would end the
// warm-up (its timed time filled a timed run's share of the bench time) is
// made again at the same count because the disturbance mark found it
// disturbed. Such a run's timed time can be mostly another task's: the
// first warm-up run (one iteration) of Priority n=1000 on stackful-coro,
// in a process that gave 42.5% of its wall time to other tasks, took over
// the 20 ms share and ended the warm-up at one iteration, so every timed
// run of that process (0.22–0.36 ms timed each) read a single wake, the
// run's first: 1873–2754 ns/wake, where the other 26 processes of the
// cell read 263–451 ns (the cell's CV 102%). Made again, the run reads
// its own length and the count grows from it. The runqueue mark only, not the
// core mark: a shared core slowed Priority's runs by up to 2.4×, which
// moves the count by as much, not 60×. Two, as maxRetakes(DefaultRuns):
// a disturbance that outlasts them is the timed runs' mark's to judge.
// Only where the default mark judges the timed runs: a caller's own mark
// (Options.Disturbed) judges timed runs only.
const warmRetakes = 2

// warmDisturbed is the warm-up's mark (warmRetakes): the default one; a
// variable so that a test can script its verdicts.
var warmDisturbed = Disturbed

// minFixedRuns is the fewest timed runs a fixed-iteration cell that may
// rerun makes (Scenario.RerunFixed), whatever its budget: three, so that
// its figure is a median, one run's, and a run hit by a transient (or a
// process's first run, slower where the process itself is cold) does not
// set it. Such a cell's run can take several bench fifths of untimed
// set-up (Spawn alive=10000 pool=warm on stackful-asm: a cold round of
// fresh stacks before its warm ones, ~75 ms a run), where the budget
// alone would give it two runs and a mean.
const minFixedRuns = 3

// rerunsFixed says whether the fixed-iteration cell makes more than one
// timed run on row (Scenario.RerunFixed).
func rerunsFixed(s *scenarios.Scenario, row scenarios.Row, params map[string]string) bool {
	switch s.Rerun(params) {
	case scenarios.RerunAlways:
		return true
	case scenarios.RerunIfFresh:
		d, ok := row.Def()
		return !ok || d.SharedAcrossRuns == ""
	}
	return false
}

// timedRuns makes the timed runs of n iterations until there are runs of
// them (timed holds the ones already made, each judged), then re-takes
// disturbed ones (mark) while that can still give a clean majority and
// the cell's timed budget holds, and summarizes them. last is the run
// made just before (the last warm-up run, or timed's last), and heap
// gives the warm heap of the run after last: the first timed run's too.
func timedRuns(s *scenarios.Scenario, row scenarios.Row, params map[string]string, n int, opts Options, gc *gcPolicy, mark func(Signal) bool, runs int, timed []*run, last *run, heap func(last *run) uint64) (*Sample, error) {
	var spent time.Duration
	for _, r := range timed {
		spent += r.wall
	}
	for len(timed) < runs {
		r, err := runOnce(s, row, params, n, opts, gc, heap(last), false)
		if err != nil {
			return nil, err
		}
		r.judge(mark)
		timed, last = append(timed, r), r.follows(last)
		spent += r.wall
	}
	if mark != nil {
		// Re-take disturbed runs while that can still give the process
		// a majority of clean runs and the budget holds: a disturbance
		// shorter than a run or two is waited out here, one that lasts
		// the process's life is left to the harness (another process).
		for retakes := 0; retakes < maxRetakes(runs); retakes++ {
			clean := cleanRuns(timed)
			if clean >= majority(runs) || clean+maxRetakes(runs)-retakes < majority(runs) ||
				spent+last.wall > time.Duration(timedBudget)*opts.Benchtime {
				break
			}
			r, err := runOnce(s, row, params, n, opts, gc, heap(last), false)
			if err != nil {
				return nil, err
			}
			r.judge(mark)
			timed, last = append(timed, r), r.follows(last)
			spent += r.wall
		}
	}
	return summarize(s, timed, mark != nil, runs)
}

// judge is the mark that applies to this measurement of s: opts.Disturbed,
// or for a cell judgedByDefault the default mark (Disturbed), or none;
// with opts.CoreMark, a mark also finds a run whose core was shared
// (CoreShared) disturbed.
func judge(s *scenarios.Scenario, opts Options) func(Signal) bool {
	var mark func(Signal) bool
	switch {
	case opts.NoMark:
		return nil
	case opts.Disturbed != nil:
		mark = opts.Disturbed
	case judgedByDefault(s):
		mark = Disturbed
	case opts.CoreMark && coreJudged(s):
		return coreSharedOnOneCPU
	}
	if mark != nil && opts.CoreMark {
		wait := mark
		mark = func(sig Signal) bool { return wait(sig) || sig.CoreShared }
	}
	return mark
}

// majority is how many clean runs a process of planned timed runs needs
// for its figure to be theirs: more than half of them.
func majority(planned int) int { return planned/2 + 1 }

// maxRetakes caps the runs made in place of disturbed ones: half the
// planned runs (2 of 5), which turns a process whose disturbance hit 3
// of 5 runs into a clean one if it was over by then, and costs little
// when it was not.
func maxRetakes(planned int) int { return planned / 2 }

// judge records mark's verdict on the run (nil: no mark, clean).
func (r *run) judge(mark func(Signal) bool) {
	r.bad = mark != nil && mark(r.sig)
}

// cleanRuns counts the runs not found disturbed.
func cleanRuns(runs []*run) int {
	n := 0
	for _, r := range runs {
		if !r.bad {
			n++
		}
	}
	return n
}

// timedBudget is what a cell's timed runs may take in one process, in bench
// times, their set-up, checksum and GC policy included.
//
// A variable only so that the tests of the re-takes and of the run count,
// whose verdicts are scripted, can make it large: there the budget must
// not decide, whatever a loaded machine (or -race) makes of the runs'
// set-up. TestRetakesHoldTheBudget and TestRunsForHoldsTheBudget test it.
var timedBudget int64 = 2

// runsFor is how many timed runs fit the budget when one run takes wall
// (set-up included): DefaultRuns when they all fit, fewer (at least one)
// when they do not, and always an odd count: an even count that fits is
// rounded up to the next odd one, so that the process's figure, their
// median, is one run's figure and not the mean of the two middle ones.
// Why: a cell's runs can be bimodal inside a process (Switch on
// stackful-asm, in the sample of 20261129T034223Z: runs of 4.5–4.8 and
// of 6.1–6.3 ns in one process), and the mean of a fast and a slow run
// is a figure no run had: that process read 5.47 ns, 1.16× the next
// slowest of 13, with 4 planned runs because its last warm-up run (a
// slow one, with its forced collection) took over 2/5 of the budget.
// The budget is then exceeded by at most one run.
func runsFor(wall, benchtime time.Duration) int {
	if wall <= 0 {
		return DefaultRuns
	}
	n := int(max(1, min(DefaultRuns, timedBudget*int64(benchtime)/int64(wall))))
	if n%2 == 0 {
		n++ // DefaultRuns is odd, so n stays at most DefaultRuns
	}
	return n
}

// orDefault returns v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// nextIters predicts the iteration count that fills benchtime, as
// testing.B's predictN does: aim 20% over, grow at most 100× and at least
// by one.
func nextIters(n int, elapsed, benchtime time.Duration) int {
	per := elapsed.Nanoseconds() / int64(n)
	if per <= 0 {
		per = 1
	}
	next := int(benchtime.Nanoseconds() / per)
	next += next / 5
	next = min(next, 100*n)
	next = max(next, n+1)
	return min(next, 1<<30)
}

func checkParams(s *scenarios.Scenario, params map[string]string) error {
	for k := range params {
		if _, ok := s.Param(k); !ok {
			return fmt.Errorf("scenario %s has no parameter %q (it has: %v)", s.Name, k, s.ParamKeys())
		}
	}
	for _, p := range s.Params {
		if _, ok := params[p.Key]; !ok {
			return fmt.Errorf("scenario %s needs parameter %q", s.Name, p.Key)
		}
	}
	return nil
}

// run is one run of a cell: its Env (time, allocations and faults of the
// timed region), the body's outcome, and the heap it used.
type run struct {
	env *scenarios.Env
	out scenarios.Outcome
	// heap is how much the run took from Go's page heap for objects and
	// stacks (HeapInuse + StackInuse, after − before: with the collector
	// off nothing is freed), set-up included. 0 under GCPolicyOn.
	heap uint64
	// baseN and baseHeap are the iteration count and heap of the latest
	// earlier run of the measurement whose count differs from this one's
	// (0: none), the second point of heapFor's line.
	baseN    int
	baseHeap uint64
	// wall is what the run took in all: GC policy, set-up, body,
	// checksum.
	wall time.Duration
	// sig is what the body was exposed to (disturb.go), and bad the
	// mark's verdict on it (judged once, when a timed run ends).
	sig Signal
	bad bool
}

// heapFor is the free, already-touched heap a run of n iterations should
// start with: this run's heap, plus what the iterations beyond this run's
// count add at the rate per iteration between this run and its base (none
// when the heap did not grow with the count, or there is no base yet), an
// eighth over (the size classes of a bigger run need not fill as neatly).
// A nil run (the first warm-up run) asks for none.
//
// Why a line through two runs and not this run's heap scaled by n/N (this
// rule until it was found out): most of a run's heap is its set-up (n
// coroutines, their stacks and records), which does not grow with N, and
// the warm-up grows N up to 100× a step, so the scaling asked for up to
// 100× the heap the runs took, and the heap kept it: Priority n=1000 on
// stackful-coro took 2.5–3.3 MiB a run and was given 211 MiB (157 ms to
// grow), Yield n=4096 on stackful-asm 3.1 MiB and 357 MiB (196 ms), and
// every later run then paid 6–22 ms to occupy and collect the free heap
// (up to 86 s of a full run). A line through two counts keeps what does
// grow with N: a body that allocates per iteration gets the heap of its
// count. With one run only (the second warm-up run), nothing is scaled:
// a run that allocates per iteration faults in that warm-up run, and
// the next one has its line.
func (r *run) heapFor(n int) uint64 {
	if r == nil || r.env.N <= 0 {
		return 0
	}
	want := float64(r.heap)
	if r.baseN > 0 && r.baseN != r.env.N {
		if per := (float64(r.heap) - float64(r.baseHeap)) / float64(r.env.N-r.baseN); per > 0 {
			want += per * float64(n-r.env.N)
		}
	}
	want = max(want, 0)
	want += want / 8
	return uint64(min(want, float64(maxWarmHeap)))
}

// follows records that r was made after last (nil: r is the first run):
// r's base is last if their counts differ, else last's base.
func (r *run) follows(last *run) *run {
	if last == nil || last.env == nil {
		return r
	}
	if last.env.N != r.env.N {
		r.baseN, r.baseHeap = last.env.N, last.heap
	} else {
		r.baseN, r.baseHeap = last.baseN, last.baseHeap
	}
	return r
}

// runOnce runs the row's body once with n iterations under the GC policy,
// with at least warm bytes of free, touched heap (GCPolicy); final makes
// opts.FinalStart, FinalStop and FinalReset follow its timer.
func runOnce(s *scenarios.Scenario, row scenarios.Row, params map[string]string, n int, opts Options, gc *gcPolicy, warm uint64, final bool) (*run, error) {
	start := time.Now()
	env := &scenarios.Env{N: n, Params: params, Loadgen: opts.Loadgen}
	gc.before(warm)
	heap0 := gc.heapInUse()
	var memBefore float64
	if opts.MemProbe {
		memBefore = probe.read() // MeasureWith mapped it
	}
	var hooks *finalHooks
	if final {
		hooks = &finalHooks{opts: opts}
		env.SetHooks(hooks.timerHooks())
	}
	var coreBefore CoreReading
	if opts.CoreProbe {
		coreBefore = coreReader()
	}
	bodyStart := time.Now()
	sched := readSched()
	env, out, err := runBody(s, row, params, env)
	sig := sched.since(bodyStart)
	if opts.CoreProbe {
		sig.CoreBefore, sig.CoreAfter = coreBefore, coreReader()
		sig.CoreShared = CoreShared(sig, cmp.Or(opts.CoreLimit, CoreSharedRatio))
	}
	if env != nil {
		sig.Segments = env.Segments()
	}
	if opts.MemProbe {
		sig.MemBefore, sig.MemAfter = memBefore, probe.read()
	}
	if hooks != nil {
		// A body's error can leave its timer running (callBody stops
		// it otherwise); close the hooks before the checksum.
		hooks.stop(0)
		err = errors.Join(err, hooks.err)
	}
	gc.after()
	if err != nil {
		return nil, err
	}
	r := &run{out: out, sig: sig}
	if heap1 := gc.heapInUse(); heap1 > heap0 {
		r.heap = heap1 - heap0
	}
	if err := check(s, row, env, out, opts.wants); err != nil {
		return nil, err
	}
	r.env, r.wall = env, time.Since(start)
	return r, nil
}

// finalHooks turns Options.FinalStart, FinalStop and FinalReset into the
// timer hooks of the profiled run: FinalStop only after a FinalStart that
// succeeded, and nothing more once one failed (err).
type finalHooks struct {
	opts Options
	open bool
	err  error
}

func (h *finalHooks) timerHooks() *scenarios.TimerHooks {
	return &scenarios.TimerHooks{Start: h.start, Stop: h.stop, Reset: h.reset}
}

func (h *finalHooks) start() {
	if h.err != nil || h.open {
		return
	}
	if h.err = h.opts.FinalStart(); h.err == nil {
		h.open = true
	}
}

func (h *finalHooks) stop(timed time.Duration) {
	if h.open {
		h.open = false
		h.opts.FinalStop(timed)
	}
}

func (h *finalHooks) reset() {
	if h.err == nil && h.opts.FinalReset != nil {
		h.opts.FinalReset()
	}
}

// runBody runs the state-machine body or, on the row's runtime, the
// blocking one: once, timed from before the body starts (the body resets
// the timer after its set-up), or, for a FreshRuntime cell, once per
// iteration.
func runBody(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env) (*scenarios.Env, scenarios.Outcome, error) {
	if s.FreshRuntime != nil && s.FreshRuntime(params) {
		return runFresh(s, row, params, env)
	}
	out, err := callBody(s, row, params, env, true)
	return env, out, err
}

// runFresh calls the body once per iteration, each in a fresh runtime
// (Scenario.FreshRuntime), and adds up the calls' outcomes. The timer is
// the body's alone: it times its iteration with StartTimer/StopTimer.
//
// An iteration whose timed segment was preempted (scenarios.SegmentCounts)
// is counted, not re-taken, and shows in Env.Segments. Re-taking was
// measured and rejected: on Spawn alive=1 pool=cold on stackful-asm,
// 1–2% of the lifecycles were preempted and averaged 20–37 µs of wall
// time against 1.6–1.8 µs, but their thread's own CPU time inside the
// window was 12.6–16.3 µs against 1.9–2.1 µs for the others
// (CLOCK_THREAD_CPUTIME_ID around each segment): the preemptions fall in
// the lifecycles that are long on their own (the row's fresh stack
// slabs and faults), so leaving them out would leave the row's slow
// lifecycles out too. The README's "Preempted segments" has the figures.
func runFresh(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env) (*scenarios.Env, scenarios.Outcome, error) {
	if d, ok := row.Def(); ok && d.SharedAcrossRuns != "" {
		return nil, scenarios.Outcome{}, scenarios.NotSupported("this cell needs a fresh runtime per iteration, and %s", d.SharedAcrossRuns)
	}
	var total scenarios.Outcome
	for i := 0; i < env.N; i++ {
		env.Iter = i
		out, err := callBody(s, row, params, env, false)
		if err != nil {
			return nil, total, err
		}
		total.Ops += out.Ops
		total.Checksum += out.Checksum // wrapping: Want adds the same way
	}
	return env, total, nil
}

// callBody calls the body once; timed starts the timer before it and
// stops it after.
func callBody(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env, timed bool) (scenarios.Outcome, error) {
	start, stop := env.ResetTimer, env.StopTimer
	if !timed {
		start, stop = func() {}, func() {}
	}
	var out scenarios.Outcome
	if row.RunsStateMachines() {
		if s.StateMachine == nil {
			return out, scenarios.NotSupported("scenario %s has no state-machine body yet", s.Name)
		}
		start()
		out, err := s.StateMachine(env)
		stop()
		return out, err
	}
	if s.Blocking == nil {
		return out, scenarios.NotSupported("scenario %s has no blocking body yet", s.Name)
	}
	var bodyErr error
	err := row.RunBlocking(scenarios.CellInfo{Scenario: s.Name, Params: params}, func(rt scenarios.Blocking) {
		start()
		out, bodyErr = s.Blocking(rt, env)
		stop()
	})
	return out, errors.Join(bodyErr, err)
}

// check holds a run to its checksum and operation count: every run, the
// warm-up's too, its checksum taken from wants (nil: Want itself).
func check(s *scenarios.Scenario, row scenarios.Row, env *scenarios.Env, out scenarios.Outcome, wants *wantMemo) error {
	if want := wants.want(s, env); out.Checksum != want {
		return fmt.Errorf("checksum mismatch: %s on %s with N=%d produced %#x, want %#x: the body did not do the work the scenario defines", s.Name, row, env.N, out.Checksum, want)
	}
	if out.Ops <= 0 {
		return fmt.Errorf("scenario %s on %s reported %d operations; the per-operation metrics need at least one", s.Name, row, out.Ops)
	}
	return nil
}

// summarize turns the timed runs into the process's sample: each
// metric's median over the clean runs when they are a majority of the
// planned runs, else over all of them with the sample marked disturbed,
// the earliest of them left out when they are an even count;
// and each run's values, signal and verdict. judged says a mark applied.
func summarize(s *scenarios.Scenario, runs []*run, judged bool, planned int) (*Sample, error) {
	sm := &Sample{Iters: runs[0].env.N, Values: make([]float64, len(s.Metrics)), Judged: judged}
	var use [][]float64
	for _, r := range runs {
		v, err := values(s, r.env, r.out)
		if err != nil {
			return nil, err
		}
		sm.Runs = append(sm.Runs, v)
		sm.Signals = append(sm.Signals, r.sig)
		sm.DisturbedRuns = append(sm.DisturbedRuns, r.bad)
		if !r.bad {
			use = append(use, v)
		}
	}
	if len(use) < majority(planned) {
		sm.Disturbed, use = true, sm.Runs
	}
	if len(use)%2 == 0 && len(use) > 1 {
		// An even count (a disturbed run left out of five, or six runs
		// in all when re-takes did not help): the earliest of them is
		// left out too, so that the median is one run's figure, as
		// runsFor's odd count intends, and not the mean of two runs from
		// two modes. The earliest because a process's first timed runs
		// are the ones its warm-up left least settled (cold Spawn cells
		// read 1.16–1.34× on their first run in the sample of
		// 20261129T034223Z).
		use = use[1:]
	}
	col := make([]float64, len(use))
	for i := range s.Metrics {
		for j, v := range use {
			col[j] = v[i]
		}
		sm.Values[i] = median(col)
	}
	return sm, nil
}

// median is the middle of xs (the mean of the two middle values when
// their count is even); it leaves xs as it was. NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// values is one run's figures, in the order of s.Metrics.
func values(s *scenarios.Scenario, env *scenarios.Env, out scenarios.Outcome) ([]float64, error) {
	vs := make([]float64, len(s.Metrics))
	for i, m := range s.Metrics {
		switch m.Kind {
		case scenarios.TimePerOp:
			vs[i] = float64(env.Elapsed().Nanoseconds()) / float64(out.Ops)
		case scenarios.AllocsPerOp:
			vs[i] = float64(env.Allocs()) / float64(out.Ops)
		case scenarios.FaultsPerOp:
			vs[i] = float64(env.Faults()) / float64(out.Ops)
		case scenarios.BodyMeasured:
			v, ok := out.Values[m.Unit]
			if !ok {
				return nil, fmt.Errorf("scenario %s did not report its metric %s", s.Name, m.Unit)
			}
			vs[i] = v
		}
	}
	return vs, nil
}
