package driver

import (
	"testing"

	"github.com/corobench/corobench/scenarios"
)

// mkRun is a run of n iterations that took heap bytes, made after last.
func mkRun(n int, heap uint64, last *run) *run {
	r := &run{env: &scenarios.Env{N: n}, heap: heap}
	return r.follows(last)
}

func TestHeapForScalesOnlyWhatGrowsWithN(t *testing.T) {
	const mib = 1 << 20
	eighth := func(b float64) uint64 { return uint64(b + b/8) }
	// Set-up only: the heap does not grow with N, so a run 100× longer
	// asks for the same heap (the old rule asked for 100×).
	r1 := mkRun(1, 3*mib, nil)
	r2 := mkRun(57, 3*mib, r1)
	if got, want := r2.heapFor(5700), eighth(3*mib); got != want {
		t.Errorf("set-up only: heapFor(5700) = %d, want %d", got, want)
	}
	// The heap shrank a little between the two runs (size classes, the
	// driver's own allocations): still this run's heap, not less.
	r3 := mkRun(100, 2*mib, mkRun(1, 3*mib, nil))
	if got, want := r3.heapFor(10000), eighth(2*mib); got != want {
		t.Errorf("shrinking heap: heapFor(10000) = %d, want %d", got, want)
	}
	// Set-up of 1 MiB and 4 KiB per iteration: the line through the two
	// runs gives the heap of the count asked for.
	const setup, per = 1 * mib, 4096
	h := func(n int) uint64 { return setup + per*uint64(n) }
	a := mkRun(1, h(1), nil)
	b := mkRun(100, h(100), a)
	if got, want := b.heapFor(10000), eighth(float64(h(10000))); got != want {
		t.Errorf("per-iteration growth: heapFor(10000) = %d, want %d", got, want)
	}
	// Timed runs repeat one count: each keeps the base of the last run
	// with another count, so the line holds.
	c := mkRun(10000, h(10000), b)
	d := mkRun(10000, h(10000), c)
	if d.baseN != 100 || d.baseHeap != h(100) {
		t.Errorf("same-count run: base (%d, %d), want (100, %d)", d.baseN, d.baseHeap, h(100))
	}
	if got, want := d.heapFor(10000), eighth(float64(h(10000))); got != want {
		t.Errorf("same-count run: heapFor(10000) = %d, want %d", got, want)
	}
	// One run only: no line, nothing scaled.
	if got, want := a.heapFor(100), eighth(float64(h(1))); got != want {
		t.Errorf("first run: heapFor(100) = %d, want %d", got, want)
	}
	// The cap holds.
	big := mkRun(2, 600*mib, mkRun(1, 300*mib, nil))
	if got := big.heapFor(1000); got != maxWarmHeap {
		t.Errorf("heapFor past the cap = %d, want %d", got, uint64(maxWarmHeap))
	}
	var none *run
	if got := none.heapFor(100); got != 0 {
		t.Errorf("nil run: heapFor = %d, want 0", got)
	}
}

// setupScenario's body keeps setup bytes of one-page blocks for its whole
// run (its set-up) and allocates nothing per iteration.
func setupScenario(setup int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "setup", Bench: "Setup",
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			keep := make([][]byte, 0, setup/8192)
			for range setup / 8192 {
				keep = append(keep, make([]byte, 8192))
			}
			env.ResetTimer()
			var sum uint64
			for i := range env.N {
				sum += uint64(len(keep[i%len(keep)]))
			}
			env.StopTimer()
			return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) * 8192 },
	}
}

// TestSetUpHeapIsNotScaledWithN: after the warm-up's steps (N = 1, then
// 100× a step) of real runs whose heap is all set-up, the warm heap asked
// for a run 100× longer is about the set-up, not 100× it. Heap sizes, not
// times. (The process's free heap is not checked: other tests leave
// theirs.)
func TestSetUpHeapIsNotScaledWithN(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	const setup = 4 << 20
	s := setupScenario(setup)
	gc := newGCPolicy(false)
	defer gc.end()
	var last *run
	for _, n := range []int{1, 100, 10000} {
		r, err := runOnce(s, scenarios.GoroutineSingle, nil, n, Options{}, gc, last.heapFor(n), false)
		if err != nil {
			t.Fatal(err)
		}
		if r.heap < setup {
			t.Fatalf("N=%d: the run took %d bytes of heap, want at least its %d of set-up", n, r.heap, setup)
		}
		last = r.follows(last)
	}
	if want := last.heapFor(1000000); want > 2*setup {
		t.Errorf("after N = 1, 100, 10000: heapFor(10^6) = %d bytes, want under twice the %d of set-up", want, setup)
	}
}
