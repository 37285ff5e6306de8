package driver

import (
	"runtime"
	"slices"
	"strings"
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

// TestFinalHooksBracketOneCountedRun: FinalStart/FinalStop are called once,
// around one run with the iteration count found by the warm-up runs (which
// run outside them), and the figures returned are that run's; a FixedIters
// scenario's one run is the bracketed one.
func TestFinalHooksBracketOneCountedRun(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, fixed := range []int{0, 3} {
		inside, starts, stops := false, 0, 0
		var runs []int // N of each run, negative when outside the hooks
		s := touchScenario(0)
		s.FixedIters = fixed
		body := s.Blocking
		s.Blocking = func(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			if inside {
				runs = append(runs, env.N)
			} else {
				runs = append(runs, -env.N)
			}
			return body(rt, env)
		}
		opts := Options{Benchtime: time.Millisecond,
			FinalStart: func() error { starts++; inside = true; return nil },
			FinalStop:  func() { stops++; inside = false },
		}
		sm, err := MeasureWith(s, scenarios.GoroutineSingle, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		last := runs[len(runs)-1]
		if starts != 1 || stops != 1 || last != sm.Iters {
			t.Errorf("FixedIters=%d: %d starts, %d stops, runs %v, returned N=%d: want one bracketed run, last, with the returned N", fixed, starts, stops, runs, sm.Iters)
		}
		if fixed == 0 && (len(runs) < 2 || runs[len(runs)-2] != -last) {
			t.Errorf("runs %v: want the bracketed run to repeat the last warm-up run's N outside the hooks", runs)
		}
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
}
