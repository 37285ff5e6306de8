package driver

import (
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
)

// TestProbeLineSpreadsTheChain: the probe's lines for consecutive
// counters stay inside the buffer, rarely repeat, and are not neighbours
// (a prefetcher following a stride or a page would make the reading the
// prefetcher's speed, not the memory's). A hash that returned c&mask
// (every next line adjacent) or a constant fails it.
func TestProbeLineSpreadsTheChain(t *testing.T) {
	mask := uint64(memProbeBytes/64 - 1)
	const n = 10000
	seen := map[uint64]bool{}
	near, prev := 0, probeLine(0, mask)
	for c := uint64(1); c <= n; c++ {
		l := probeLine(c, mask)
		if l > mask {
			t.Fatalf("counter %d: line %d past the buffer's %d lines", c, l, mask+1)
		}
		seen[l] = true
		if d := int64(l) - int64(prev); d > -64 && d < 64 { // the same 4 KiB page
			near++
		}
		prev = l
	}
	// n random lines of mask+1 repeat ~n²/2(mask+1) = 48 times: ≥ 99% distinct.
	if len(seen) < n*99/100 {
		t.Errorf("%d distinct lines of %d loads: want ≥ 99%%", len(seen), n)
	}
	// Random successors share a page with chance 127/(mask+1) ≈ 0.01%.
	if near > n/100 {
		t.Errorf("%d of %d successive loads within 4 KiB of each other: want < 1%%", near, n)
	}
}

// TestMemProbeReadsAroundTimedRunsOnly: with Options.MemProbe every timed
// run's signal carries a reading before and after it, and without it none;
// a scenario that measures resident memory gets none either (the buffer
// would be in its figure).
func TestMemProbeReadsAroundTimedRunsOnly(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	var calls []int
	sm, err := MeasureWith(scriptedScenario(make([]float64, 100), &calls), scenarios.GoroutineSingle, nil, Options{Benchtime: 5 * time.Millisecond, NoMark: true, MemProbe: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sm.Signals) == 0 {
		t.Fatal("no timed runs")
	}
	for i, sig := range sm.Signals {
		if !(sig.MemBefore > 0 && sig.MemAfter > 0) {
			t.Errorf("probe on: run %d read %v before, %v after: want two readings", i, sig.MemBefore, sig.MemAfter)
		}
	}
	calls = nil
	sm, err = MeasureWith(scriptedScenario(make([]float64, 100), &calls), scenarios.GoroutineSingle, nil, Options{Benchtime: 5 * time.Millisecond, NoMark: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, sig := range sm.Signals {
		if sig.MemBefore != 0 || sig.MemAfter != 0 {
			t.Errorf("probe off: run %d read %v before, %v after: want none", i, sig.MemBefore, sig.MemAfter)
		}
	}
	mem := &scenarios.Scenario{
		Name: "resident", Bench: "Resident",
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}, {Unit: "B/op", Kind: scenarios.BodyMeasured}},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			env.ResetTimer()
			time.Sleep(time.Duration(env.N) * time.Microsecond)
			env.StopTimer()
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N), Values: map[string]float64{"B/op": 1}}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
	if !measuresResidentMemory(mem) {
		t.Fatal("the hand-made scenario does not measure resident memory: the case below tests nothing")
	}
	sm, err = MeasureWith(mem, scenarios.GoroutineSingle, nil, Options{Benchtime: 5 * time.Millisecond, NoMark: true, MemProbe: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, sig := range sm.Signals {
		if sig.MemBefore != 0 || sig.MemAfter != 0 {
			t.Errorf("resident memory: run %d read %v before, %v after: want none", i, sig.MemBefore, sig.MemAfter)
		}
	}
}
