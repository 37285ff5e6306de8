package driver

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	_ "github.com/corobench/corobench/scenarios/rows"
)

func TestGCOnIsRefusedForTheAsmRowOnly(t *testing.T) {
	_, err := MeasureWith(bodies.PingPong, scenarios.StackfulAsm, nil, Options{Benchtime: time.Millisecond, GCOn: true})
	if reason, ok := scenarios.IsNotSupported(err); !ok || reason == "" {
		t.Fatalf("stackful-asm with the collector on: err = %v, want not supported with a reason", err)
	}
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, row := range []scenarios.Row{scenarios.StackfulCoro, scenarios.Stackless, scenarios.GoroutineSingle} {
		if _, err := MeasureWith(bodies.PingPong, row, nil, Options{Benchtime: time.Millisecond, GCOn: true}); err != nil {
			t.Errorf("%s with the collector on: %v", row, err)
		}
	}
}

func TestNextItersGrowsTowardBenchtime(t *testing.T) {
	cases := []struct {
		n       int
		elapsed time.Duration
		want    int
	}{
		{1, time.Microsecond, 100},            // capped at 100× growth
		{100, time.Millisecond, 2400},         // 10µs each: 20ms/10µs = 2000, +20%
		{1000, time.Second, 1001},             // already slow: grow by one
		{1 << 29, time.Nanosecond, 1<<29 + 1}, // under 1ns each rounds to 1ns: already past benchtime, grow by one
		{10, 0, 1000},                         // no time measured: treat as 1ns each, capped at 100×
	}
	for _, c := range cases {
		if got := nextIters(c.n, c.elapsed, 20*time.Millisecond); got != c.want {
			t.Errorf("nextIters(%d, %v) = %d, want %d", c.n, c.elapsed, got, c.want)
		}
	}
}

// withRowGOMAXPROCS sets GOMAXPROCS as benchrun does for row's cells, for
// the rest of the test.
func withRowGOMAXPROCS(t *testing.T, row scenarios.Row) {
	old := runtime.GOMAXPROCS(row.GOMAXPROCS())
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// touchScenario is a scenario outside the registry whose timed region
// touches pages fresh pages of an anonymous mapping per operation (pages
// == 0: touches nothing, only counts), to check the fault count.
func touchScenario(pages int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "touch", Bench: "Touch", FixedIters: 4,
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}, scenarios.FaultsMetric},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			if pages == 0 {
				env.ResetTimer()
				var sum uint64
				for i := 0; i < env.N; i++ {
					sum += uint64(i) * uint64(i)
				}
				env.StopTimer()
				touchSink = sum
				return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N)}, nil
			}
			page := syscall.Getpagesize()
			size := pages * page * env.N
			mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				return scenarios.Outcome{}, err
			}
			defer syscall.Munmap(mem)
			// Huge pages would serve many touches with one fault.
			_ = syscall.Madvise(mem, 15 /* MADV_NOHUGEPAGE */)
			env.ResetTimer()
			for i := 0; i < pages*env.N; i++ {
				mem[i*page] = 1
			}
			env.StopTimer()
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N)}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
}

// TestFaultsPerOpCountsTheTimedRegion: touching 32 fresh pages per
// operation reads at least 32 minflt/op; touching none reads well under
// one (the clock and the counters themselves fault rarely, if ever).
func TestFaultsPerOpCountsTheTimedRegion(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, c := range []struct {
		pages  int
		lo, hi float64
	}{{32, 32, 40}, {0, 0, 0.5}} {
		s := touchScenario(c.pages)
		sm, err := Measure(s, scenarios.GoroutineSingle, nil, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if got := sm.Values[1]; got < c.lo || got > c.hi {
			t.Errorf("%d pages touched per op: %s = %v, want in [%v, %v]", c.pages, scenarios.FaultsUnit, got, c.lo, c.hi)
		}
	}
}

// TestFinalHooksFollowTheTimerOfOneCountedRun: FinalStart, FinalStop and
// FinalReset follow the timer of one run only, made with the iteration
// count the warm-up runs found (they run without them), and the figures
// returned are that run's; a FixedIters scenario's one run is the hooked
// one. The driver resets the timer before the body (nothing to drop yet,
// then a start), and the body resets it after its set-up (the open
// segment closed, dropped, a new one started), then stops it.
func TestFinalHooksFollowTheTimerOfOneCountedRun(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, fixed := range []int{0, 3} {
		var events []string
		var timed time.Duration // FinalStop's durations since the last reset
		var runs []int          // N of each run, negative for a run with no hook call
		s := touchScenario(0)
		s.FixedIters = fixed
		body := s.Blocking
		s.Blocking = func(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			before := len(events)
			out, err := body(rt, env)
			if len(events) > before {
				runs = append(runs, env.N)
			} else {
				runs = append(runs, -env.N)
			}
			return out, err
		}
		opts := Options{Benchtime: time.Millisecond,
			FinalStart: func() error { events = append(events, "start"); return nil },
			FinalStop:  func(d time.Duration) { events = append(events, "stop"); timed += d },
			FinalReset: func() { events = append(events, "reset"); timed = 0 },
		}
		sm, err := MeasureWith(s, scenarios.GoroutineSingle, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"reset", "start", "stop", "reset", "start", "stop"}; !slices.Equal(events, want) {
			t.Errorf("FixedIters=%d: hook calls %v, want %v", fixed, events, want)
		}
		if elapsed := sm.Values[0] * float64(sm.Iters); math.Abs(float64(timed)-elapsed) > 1 {
			t.Errorf("FixedIters=%d: FinalStop's durations add up to %v, the run's timed region is %vns", fixed, timed, elapsed)
		}
		last := runs[len(runs)-1]
		if last != sm.Iters || slices.ContainsFunc(runs[:len(runs)-1], func(n int) bool { return n > 0 }) {
			t.Errorf("FixedIters=%d: runs %v, returned N=%d: want the hooks in the last run only, with the returned N", fixed, runs, sm.Iters)
		}
		if fixed == 0 && (len(runs) < 2 || runs[len(runs)-2] != -last) {
			t.Errorf("runs %v: want the hooked run to repeat the last warm-up run's N without the hooks", runs)
		}
	}
}

// TestFinalHooksFollowAFreshRuntimeCell: a FreshRuntime cell's hooked run
// opens and closes them once per iteration, as its body starts and
// stops the timer, with nothing in between; an error from FinalStart
// ends the measurement with it, and the hooks are not called again.
func TestFinalHooksFollowAFreshRuntimeCell(t *testing.T) {
	var events []string
	s := &scenarios.Scenario{
		Name: "fresh", Bench: "Fresh", FixedIters: 3,
		Metrics:      []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
		FreshRuntime: func(map[string]string) bool { return true },
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			events = append(events, "set-up")
			env.StartTimer()
			env.StopTimer()
			return scenarios.Outcome{Ops: 1, Checksum: uint64(env.Iter)}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N * (env.N - 1) / 2) },
	}
	opts := Options{Benchtime: time.Millisecond,
		FinalStart: func() error { events = append(events, "start"); return nil },
		FinalStop:  func(time.Duration) { events = append(events, "stop") },
		FinalReset: func() { events = append(events, "reset") },
	}
	if _, err := MeasureWith(s, scenarios.StackfulAsm, nil, opts); err != nil {
		t.Fatal(err)
	}
	want := slices.Repeat([]string{"set-up", "start", "stop"}, 3)
	if !slices.Equal(events, want) {
		t.Errorf("hook calls %v, want %v", events, want)
	}
	events = nil
	opts.FinalStart = func() error { events = append(events, "start"); return fmt.Errorf("no profiler") }
	if _, err := MeasureWith(s, scenarios.StackfulAsm, nil, opts); err == nil || !strings.Contains(err.Error(), "no profiler") {
		t.Errorf("FinalStart failing: err %v, want its error", err)
	}
	if want := []string{"set-up", "start", "set-up", "set-up"}; !slices.Equal(events, want) {
		t.Errorf("after FinalStart failed: hook calls %v, want %v", events, want)
	}
}

// touchSink keeps touchScenario's counting loop from being optimised away.
var touchSink uint64

// TestFreshRuntimeCallsTheBodyPerIteration: a FreshRuntime cell runs each
// iteration in its own RunBlocking, with Env.Iter its index, adds up the
// calls' outcomes, and times only what the body times; a row whose runs
// share state reports not supported, with its reason.
func TestFreshRuntimeCallsTheBodyPerIteration(t *testing.T) {
	var iters []int
	s := &scenarios.Scenario{
		Name: "fresh", Bench: "Fresh", FixedIters: 5,
		Metrics:      []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
		FreshRuntime: func(map[string]string) bool { return true },
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			iters = append(iters, env.Iter)
			time.Sleep(time.Millisecond) // untimed: must not count
			env.StartTimer()
			env.StopTimer()
			return scenarios.Outcome{Ops: 1, Checksum: uint64(env.Iter)}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N * (env.N - 1) / 2) },
	}
	_, err := Measure(s, scenarios.StackfulCoro, nil, time.Millisecond)
	if reason, ok := scenarios.IsNotSupported(err); !ok || !strings.Contains(reason, "fresh runtime") {
		t.Errorf("stackful-coro (runs share Go's goroutine free list): err %v, want not supported naming the fresh runtime", err)
	}
	iters = nil
	sm, err := Measure(s, scenarios.StackfulAsm, nil, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(iters, []int{0, 1, 2, 3, 4}) {
		t.Errorf("body called with Iter %v, want 0..4 once each", iters)
	}
	if sm.Values[0] >= float64(time.Millisecond) {
		t.Errorf("%v ns/op: the untimed sleep was timed", sm.Values[0])
	}
	// Each iteration's timed window is a segment of the run's, counted
	// in its signal.
	if len(sm.Signals) != 1 || sm.Signals[0].Segments.Segments != 5 {
		t.Errorf("signals %+v, want one run of 5 timed segments", sm.Signals)
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{[]float64{5, 1, 100, 3, 2}, 3}, // odd: the middle one, whatever the order
		{[]float64{4, 1, 3, 2}, 2.5},    // even: the mean of the two middle ones
		{[]float64{7}, 7},
		{[]float64{2, 2, 9}, 2},
	}
	for _, c := range cases {
		in := slices.Clone(c.in)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input: %v", in)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

// scriptedScenario's body sleeps its timed region (so one iteration fills
// any run's share of a small bench time: the warm-up is one run) and
// reports, as its one body-measured metric, script[call] for the call-th
// call of the body (call 0 is the warm-up).
func scriptedScenario(script []float64, calls *[]int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "scripted", Bench: "Scripted",
		Metrics: []scenarios.Metric{{Unit: "v", Kind: scenarios.BodyMeasured}, {Unit: "ns/op", Kind: scenarios.TimePerOp}},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			i := len(*calls)
			*calls = append(*calls, env.N)
			env.ResetTimer()
			time.Sleep(time.Duration(env.N) * time.Millisecond)
			env.StopTimer()
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N), Values: map[string]float64{"v": script[i]}}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
}

// TestTimedRunsReportTheirMedian: after the warm-up the driver makes Runs
// timed runs with the warm-up's iteration count, and each metric is the
// median over them (the warm-up's figure, an outlier here, is not one of
// them).
func TestTimedRunsReportTheirMedian(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, c := range []struct {
		runs int
		want float64
	}{{5, 5}, {3, 5}, {1, 1000}} {
		var calls []int
		script := []float64{-1e9, 1000, 5, 1, 100, 3, 2}
		s := scriptedScenario(script, &calls)
		sm, err := MeasureWith(s, scenarios.GoroutineSingle, nil, Options{Benchtime: time.Millisecond, Runs: c.runs, NoMark: true})
		if err != nil {
			t.Fatal(err)
		}
		runs := orDefault(c.runs, DefaultRuns)
		if len(calls) != 1+runs || len(sm.Runs) != runs {
			t.Fatalf("Runs=%d: body called with N %v, %d runs reported: want one warm-up and %d timed runs", c.runs, calls, len(sm.Runs), runs)
		}
		for i, n := range calls {
			if n != calls[0] || n != sm.Iters {
				t.Errorf("Runs=%d: call %d has N=%d, warm-up N=%d, reported Iters=%d: want one count", c.runs, i, n, calls[0], sm.Iters)
			}
		}
		for i, v := range sm.Runs {
			if v[0] != script[1+i] {
				t.Errorf("Runs=%d: run %d reported %v, want %v", c.runs, i, v[0], script[1+i])
			}
		}
		if sm.Values[0] != c.want {
			t.Errorf("Runs=%d: value %v, want the median of %v = %v", c.runs, sm.Values[0], script[1:1+runs], c.want)
		}
		if sm.Values[1] < float64(time.Millisecond) {
			t.Errorf("Runs=%d: %v ns/op for a 1 ms sleep", c.runs, sm.Values[1])
		}
	}
	// Runs=0: DefaultRuns for a cell whose runs are cheap (each run here
	// is a ~40 ms sleep plus its set-up, in a budget of 1000 bench
	// times: under -race on a loaded machine, two bench times held 3;
	// TestRunsForHoldsTheBudget tests the budget's arithmetic).
	withTimedBudget(t, 1000)
	var calls []int
	sm, err := MeasureWith(scriptedScenario(make([]float64, 100), &calls), scenarios.GoroutineSingle, nil, Options{Benchtime: 200 * time.Millisecond, NoMark: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sm.Runs) != DefaultRuns {
		t.Errorf("default: %d timed runs (calls with N %v), want %d", len(sm.Runs), calls, DefaultRuns)
	}
	calls = nil
	if _, err := MeasureWith(scriptedScenario(nil, &calls), scenarios.GoroutineSingle, nil, Options{Benchtime: time.Millisecond, Runs: -1}); err == nil || !strings.Contains(err.Error(), "Runs") {
		t.Errorf("Runs=-1: err %v, want one naming Options.Runs", err)
	}
}

// allocScenario's body allocates and writes pages fresh blocks of one page
// each per operation and keeps them (a body whose figure, on fresh heap
// pages, is first-touch faults).
func allocScenario(pages int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "alloc", Bench: "Alloc",
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}, scenarios.FaultsMetric},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			page := os.Getpagesize()
			keep := make([][]byte, 0, pages*env.N)
			env.ResetTimer()
			for range pages * env.N {
				b := make([]byte, page)
				b[0] = 1
				keep = append(keep, b)
			}
			env.StopTimer()
			allocSink = keep
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N)}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
}

var allocSink [][]byte

// TestWarmHeapSparesFirstTouchFaults: a run that allocates 16 pages per
// operation faults about 16 times per operation on a heap just returned to
// the OS, and under an eighth of that when the policy has pre-grown the
// heap to what the same run took before. Fault counts, not times: the
// test does not depend on the machine's load.
func TestWarmHeapSparesFirstTouchFaults(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	const pages, n = 16, 500
	s := allocScenario(pages)
	gc := newGCPolicy(false)
	defer gc.end()
	debug.FreeOSMemory()
	cold, err := runOnce(s, scenarios.GoroutineSingle, nil, n, Options{}, gc, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if cold.heap < pages*n*uint64(os.Getpagesize()) {
		t.Errorf("the run took %d bytes of heap, want at least the %d pages it kept", cold.heap, pages*n)
	}
	allocSink = nil
	debug.FreeOSMemory()
	warm, err := runOnce(s, scenarios.GoroutineSingle, nil, n, Options{}, gc, cold.heapFor(n), false)
	if err != nil {
		t.Fatal(err)
	}
	allocSink = nil
	coldF, warmF := float64(cold.env.Faults())/n, float64(warm.env.Faults())/n
	if coldF < pages/2 {
		t.Fatalf("on a released heap: %.2f faults/op for %d fresh pages/op: the premise of the test (fresh pages fault) does not hold", coldF, pages)
	}
	if warmF > coldF/8 {
		t.Errorf("pre-grown heap (%d bytes free and touched): %.2f faults/op, against %.2f on a released heap: want under an eighth", gc.warm, warmF, coldF)
	}
	// Through Measure: every timed run is warm, the first one too.
	sm, err := Measure(s, scenarios.GoroutineSingle, nil, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range sm.Runs {
		if v[1] > pages/8 {
			t.Errorf("Measure: timed run %d read %.2f faults/op for %d pages/op", i, v[1], pages)
		}
	}
}

// TestPolicyHoldsTheCollectorOffWithAWarmHeap: before leaves the collector
// off and at least the asked-for heap free and touched; end restores the
// collector's percent.
func TestPolicyHoldsTheCollectorOffWithAWarmHeap(t *testing.T) {
	old := debug.SetGCPercent(77)
	defer debug.SetGCPercent(old)
	gc := newGCPolicy(false)
	const want = 48 << 20
	debug.FreeOSMemory()
	gc.before(want)
	free := residentFree()
	pct := debug.SetGCPercent(-1)
	gc.after()
	gc.end()
	if pct != -1 {
		t.Errorf("collector percent %d during the run, want -1 (off)", pct)
	}
	if free < want || gc.warm < want {
		t.Errorf("free touched heap %d (policy saw %d), want at least %d", free, gc.warm, want)
	}
	if p := debug.SetGCPercent(77); p != 77 {
		t.Errorf("after end the collector's percent is %d, want the 77 it had", p)
	}
}

// TestScavengerLeavesTheWarmHeapAlone: once the policy has grown a warm
// heap, its forced collections (one before every timed run) and the time
// between them give none of it back to the OS: the scavenger's goal stays
// unbounded, so it has nothing to do and sleeps on no timer (a pending
// timer costs every goroutine switch a clock read). With the real percent
// set for each collection, the scavenger released warm pages during it.
func TestScavengerLeavesTheWarmHeapAlone(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	gc := newGCPolicy(false)
	defer gc.end()
	const want = 64 << 20
	gc.before(want)
	defer gc.after()
	released := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapReleased
	}
	r0, free0 := released(), residentFree()
	if free0 < want-want/9 { // before's own margin
		t.Fatalf("the policy grew %d bytes of free touched heap, want %d: the premise does not hold", free0, want)
	}
	for range 4 {
		gc.collect()
		time.Sleep(10 * time.Millisecond) // the scavenger's turn, if it had work
	}
	if r1 := released(); r1 > r0 {
		t.Errorf("the scavenger gave back %d bytes of the warm heap across 4 forced collections (free touched heap %d -> %d): its goal is not unbounded", r1-r0, free0, residentFree())
	}
}

// TestGoroutinesStartAtTheDefaultStack: whatever the depth of the
// driver's caller, goroutines started in a run get Go's default 2 KiB
// stack; without the ballast a deep caller makes them start bigger (which
// is what the ballast is for).
func TestGoroutinesStartAtTheDefaultStack(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "adaptivestackstart=0") {
		t.Skip("GODEBUG turns adaptive starting stacks off")
	}
	perG := func(ballast int) float64 {
		gc := newGCPolicy(false)
		gc.ballast = ballast
		defer gc.end()
		deep(256, func() { gc.before(0) }) // a caller ~64 KiB deep
		defer gc.after()
		const n = 2000
		gate := make(chan struct{})
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		var started sync.WaitGroup
		started.Add(n)
		for range n {
			go func() { started.Done(); <-gate }()
		}
		started.Wait()
		runtime.ReadMemStats(&ms1)
		close(gate)
		return float64(ms1.StackInuse-ms0.StackInuse) / n
	}
	// The premise: without the ballast, this Go starts goroutines bigger
	// after a collection that scanned a deep caller.
	without := perG(0)
	if without <= 2048*1.25 {
		t.Fatalf("without the ballast: %.0f B of stack per goroutine: this Go did not grow the starting stack for a deep caller, so the test shows nothing", without)
	}
	with := perG(stackBallast)
	switch {
	case raceOn && with >= without:
		// The race detector's bigger frames make even a parked
		// goroutine's stack deep: the ballast lowers the average, not
		// to 2 KiB.
		t.Errorf("race build: %.0f B of stack per goroutine with the ballast, %.0f B without: want less", with, without)
	case !raceOn && with > 2048*1.25:
		t.Errorf("with the ballast: %.0f B of stack per goroutine (%.0f B without), want Go's default 2048", with, without)
	}
}

// deep calls f from depth frames of 256 bytes each.
func deep(depth int, f func()) {
	var pad [256]byte
	if depth == 0 {
		f()
		return
	}
	deep(depth-1, f)
	deepSink = pad[depth%256]
}

var deepSink byte

// TestResidentMemoryScenariosRunCold: the scenarios that measure the
// growth of the resident set (memory, burst) get no warm heap, the others
// do.
func TestResidentMemoryScenariosRunCold(t *testing.T) {
	for _, s := range scenarios.All {
		want := s.Name == "memory" || s.Name == "burst"
		if got := measuresResidentMemory(s); got != want {
			t.Errorf("%s: measuresResidentMemory = %v, want %v", s.Name, got, want)
		}
	}
	gc := newGCPolicy(false)
	gc.cold = true
	defer gc.end()
	debug.FreeOSMemory()
	gc.before(64 << 20)
	gc.after()
	if gc.warm >= 64<<20 {
		t.Errorf("a cold policy left %d bytes of warm heap, want none grown", gc.warm)
	}
}

// TestRunsForHoldsTheBudget: as many runs as fit two bench times, at most
// DefaultRuns, at least one, and always odd (an even count that fits is
// rounded up), so that the median is one run's figure.
func TestRunsForHoldsTheBudget(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		wall, benchtime time.Duration
		want            int
	}{
		{25 * ms, 100 * ms, DefaultRuns}, // 8 would fit: the default
		{40 * ms, 100 * ms, 5},           // exactly 200 ms
		{45 * ms, 100 * ms, 5},           // 4 fit: one more, odd
		{60 * ms, 100 * ms, 3},           // 3 fit
		{80 * ms, 100 * ms, 3},           // 2.5 fit: 2, one more
		{150 * ms, 100 * ms, 1},
		{3 * time.Second, 100 * ms, 1}, // never none
		{0, 100 * ms, DefaultRuns},     // nothing measured
	}
	for _, c := range cases {
		if got := runsFor(c.wall, c.benchtime); got != c.want {
			t.Errorf("runsFor(%v, %v) = %d, want %d", c.wall, c.benchtime, got, c.want)
		}
	}
}

// TestSlowSetUpMakesFewerLongerRuns: a cell whose every run has an
// untimed set-up longer than the bench time makes one timed run, grown to
// the whole bench time.
func TestSlowSetUpMakesFewerLongerRuns(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	var calls []int
	var timed []time.Duration // each call's timed time, as the driver read it
	s := &scenarios.Scenario{
		Name: "slow", Bench: "Slow",
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			calls = append(calls, env.N)
			time.Sleep(100 * time.Millisecond) // untimed set-up
			env.ResetTimer()
			time.Sleep(time.Duration(env.N) * time.Millisecond)
			env.StopTimer()
			timed = append(timed, env.Elapsed())
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N)}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
	// Bench time 40 ms: the warm-up stops once a run's timed region
	// lasts 8 ms (N of 8 or so); a run takes over 100 ms, more than the
	// 80 ms budget, so one timed run, grown toward 40 ms: grown, that is,
	// unless the warm-up's last run already lasted 40 ms. Its sleep of N
	// ms can: on a loaded machine one of 8 ms was timed at 40 ms or more
	// (a full go test ./... beside other work read calls [1 7 8 8]), and
	// then the driver rightly keeps its count. So the count the test wants
	// follows the warm-up's timed time as the driver read it.
	const benchtime = 40 * time.Millisecond
	sm, err := MeasureWith(s, scenarios.GoroutineSingle, nil, Options{Benchtime: benchtime, NoMark: true})
	if err != nil {
		t.Fatal(err)
	}
	warm, warmTimed := calls[len(calls)-2], timed[len(timed)-2]
	if len(sm.Runs) != 1 || calls[len(calls)-1] != sm.Iters {
		t.Errorf("calls with N %v, %d timed runs of N=%d: want one timed run, the last call", calls, len(sm.Runs), sm.Iters)
	}
	t.Logf("calls with N %v, timed %v", calls, timed)
	if grown := sm.Iters > warm; grown != (warmTimed < benchtime) {
		t.Errorf("calls with N %v, timed %v: the warm-up's last run (N=%d) was timed at %v, and the timed run has N=%d; want more iterations exactly when that run was shorter than the bench time %v", calls, timed, warm, warmTimed, sm.Iters, benchtime)
	}
}

// TestFixedCellsRerunAsTheirScenarioSays: a fixed-iteration cell makes one
// timed run unless its scenario's RerunFixed allows more; RerunAlways
// makes at least minFixedRuns on every row, each a new call of the body
// (a new runtime), and reports their median; RerunIfFresh does so only on
// a row whose runs start from nothing (not goroutine-single, which keeps
// Go's dead goroutines), and the state-machine row is such a row.
func TestFixedCellsRerunAsTheirScenarioSays(t *testing.T) {
	for _, c := range []struct {
		rerun scenarios.Rerun
		row   scenarios.Row
		want  int // body calls
	}{
		{scenarios.RerunNever, scenarios.GoroutineSingle, 1},
		{scenarios.RerunNever, scenarios.Stackless, 1},
		{scenarios.RerunAlways, scenarios.GoroutineSingle, minFixedRuns},
		{scenarios.RerunAlways, scenarios.Stackless, minFixedRuns},
		{scenarios.RerunIfFresh, scenarios.GoroutineSingle, 1},
		{scenarios.RerunIfFresh, scenarios.Stackless, minFixedRuns},
	} {
		t.Run(fmt.Sprintf("%d/%s", c.rerun, c.row), func(t *testing.T) {
			withRowGOMAXPROCS(t, c.row)
			script := []float64{9, 1, 5, 7, 7}
			var calls int
			body := func(env *scenarios.Env) (scenarios.Outcome, error) {
				v := script[calls]
				calls++
				env.ResetTimer()
				env.StopTimer()
				return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N), Values: map[string]float64{"v": v}}, nil
			}
			s := &scenarios.Scenario{
				Name: "fixed", Bench: "Fixed", ItersFor: func(map[string]string) int { return 3 },
				RerunFixed: func(map[string]string) scenarios.Rerun { return c.rerun },
				Metrics:    []scenarios.Metric{{Unit: "v", Kind: scenarios.BodyMeasured}},
				Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
					return body(env)
				},
				StateMachine: body,
				Want:         func(env *scenarios.Env) uint64 { return uint64(env.N) },
			}
			// A bench time so short that the budget alone would allow
			// one run: the floor gives the rerunning cells theirs.
			sm, err := MeasureWith(s, c.row, nil, Options{Benchtime: time.Nanosecond, NoMark: true})
			if err != nil {
				t.Fatal(err)
			}
			if calls != c.want || len(sm.Runs) != c.want || sm.Iters != 3 {
				t.Fatalf("body called %d times, %d runs reported, Iters %d: want %d of 3 iterations", calls, len(sm.Runs), sm.Iters, c.want)
			}
			want := map[int]float64{1: 9, minFixedRuns: 5}[c.want] // median of 9 1 5
			if sm.Values[0] != want {
				t.Errorf("figure %v over runs %v, want their median %v", sm.Values[0], sm.Runs, want)
			}
		})
	}
}

// TestDisturbedWarmUpRunIsMadeAgain: a warm-up run that fills a timed
// run's share of the bench time only because it was held up (here a sleep
// in its timed region, which the warm-up's mark, scripted, calls
// disturbed, as the default mark calls a long runqueue wait) does not set
// the timed runs' count: it is made again at the same count, and the warm-up grows on from
// the undisturbed run. A mark that finds every run disturbed gets
// warmRetakes such runs, then the count stands.
func TestDisturbedWarmUpRunIsMadeAgain(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, always := range []bool{false, true} {
		var calls []int
		held := false // whether the last call was held up
		s := &scenarios.Scenario{
			Name: "held", Bench: "Held",
			Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
			Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
				calls = append(calls, env.N)
				held = always || len(calls) == 1
				env.ResetTimer()
				if held {
					// Twice the share (Benchtime / Runs): the run fills
					// it whatever its count.
					time.Sleep(200 * time.Millisecond)
				}
				// 1 ms an iteration: the count stays small (a loop of ns
				// iterations took it to 10^8, and once, beside the other
				// packages' tests, a run of it past the test's timeout).
				time.Sleep(time.Duration(env.N) * time.Millisecond)
				env.StopTimer()
				return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N)}, nil
			},
			Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
		}
		old := warmDisturbed
		warmDisturbed = func(Signal) bool { return held }
		sm, err := MeasureWith(s, scenarios.GoroutineSingle, nil, Options{Benchtime: 100 * time.Millisecond, Runs: 1})
		warmDisturbed = old
		if err != nil {
			t.Fatal(err)
		}
		if always {
			if want := []int{1, 1, 1, 1}; !slices.Equal(calls, want) {
				t.Errorf("every run held up: calls with N %v, want %v (the first run, %d more at its count, one timed run)", calls, want, warmRetakes)
			}
			continue
		}
		if len(calls) < 3 || calls[0] != 1 || calls[1] != 1 || sm.Iters <= 1 {
			t.Errorf("first run held up: calls with N %v, timed runs of N=%d: want the first run made again at N=1, and the timed runs' count grown past it", calls, sm.Iters)
		}
	}
}
