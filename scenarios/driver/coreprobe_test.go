package driver

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
)

// TestCoreSharedMark checks the core mark on hand-made readings: a run is
// marked when either reading's ratio is over CoreSharedRatio, and a
// missing reading (probe off, or a loop that read 0) gives no verdict.
func TestCoreSharedMark(t *testing.T) {
	unshared := CoreReading{ALU: 0.98, Chain: 0.98}
	shared := CoreReading{ALU: 1.75, Chain: 0.98}
	atMark := CoreReading{ALU: CoreSharedRatio, Chain: 1}
	for _, c := range []struct {
		name          string
		before, after CoreReading
		want          bool
	}{
		{"probe off", CoreReading{}, CoreReading{}, false},
		{"unshared both", unshared, unshared, false},
		{"shared before", shared, unshared, true},
		{"shared after", unshared, shared, true},
		{"shared both", shared, shared, true},
		{"at the mark is not over it", atMark, atMark, false},
		{"no chain reading", CoreReading{ALU: 2}, CoreReading{ALU: 2}, false},
		{"a slow chain (an interrupt in each burst) is not a shared core", unshared, CoreReading{ALU: 0.98, Chain: 1.5}, false},
	} {
		if got := CoreShared(Signal{CoreBefore: c.before, CoreAfter: c.after}, CoreSharedRatio); got != c.want {
			t.Errorf("%s: CoreShared(%+v, %+v) = %v, want %v", c.name, c.before, c.after, got, c.want)
		}
	}
}

// TestCoreLimit: with no base the limit is CoreSharedRatio; otherwise it
// is the base times 1 + three times the unshared readings' relative
// width, at least 2% over the base and at most 10%: a tight mode (0.918,
// width 0.2%) gets 2%, a wider one (width 2%) 6%, a wide one (width 5%)
// 10%. A core slower at the throughput-bound loop even unshared (base
// 1.4) is not marked at its own ratio.
func TestCoreLimit(t *testing.T) {
	for _, c := range []struct{ base, spread, want float64 }{
		{0, 0, CoreSharedRatio},
		{0, 0.05, CoreSharedRatio},
		{0.918, 0.002, 0.918 * 1.02},
		{1, 0.02, 1.06},
		{0.97, 0.05, 0.97 * CoreSharedRatio},
		{1.5, 0, 1.5 * 1.02},
	} {
		if got := CoreLimit(c.base, c.spread); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("CoreLimit(%v, %v) = %v, want %v", c.base, c.spread, got, c.want)
		}
	}
	slowCore := CoreReading{ALU: 1.4, Chain: 1} // unshared, on a core with fewer ports
	sig := Signal{CoreBefore: slowCore, CoreAfter: slowCore}
	if CoreShared(sig, CoreLimit(1.4, 0.005)) {
		t.Error("a run at the machine's own unshared ratio is marked")
	}
	if !CoreShared(Signal{CoreBefore: CoreReading{ALU: 1.45, Chain: 1}}, CoreLimit(1.4, 0.005)) {
		t.Error("a run 3.6% over a tight base is not marked")
	}
}

// withCoreScript replaces the core probe with readings taken from script in
// order, and fails the test if asked for more; it returns how many were
// taken.
func withCoreScript(t *testing.T, script ...CoreReading) *int {
	old := coreReader
	t.Cleanup(func() { coreReader = old })
	n := new(int)
	coreReader = func() CoreReading {
		if *n >= len(script) {
			t.Fatalf("core probe read %d times; the script has %d readings", *n+1, len(script))
		}
		*n++
		return script[*n-1]
	}
	return n
}

// TestCoreMarkRetakesSharedRuns: with Options.CoreMark, a timed run whose
// core probe read a shared core is disturbed, re-taken and left out of
// the median, through the same machinery as a runqueue wait; the warm-up
// runs read no probe (two readings per timed run, re-takes included).
// The wait mark is scripted clean, so the core readings alone decide.
func TestCoreMarkRetakesSharedRuns(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	withTimedBudget(t, 1000) // the scripted readings decide, not a loaded machine's set-up times
	u, s := CoreReading{ALU: 1, Chain: 1}, CoreReading{ALU: 1.8, Chain: 1}
	const T, F = true, false
	for _, c := range []struct {
		name      string
		readings  []CoreReading // before and after of each timed run
		want      []bool
		disturbed bool
	}{
		{"none shared", []CoreReading{u, u, u, u, u, u, u, u, u, u}, []bool{F, F, F, F, F}, false},
		{"one shared before", []CoreReading{u, u, s, u, u, u, u, u, u, u}, []bool{F, T, F, F, F}, false},
		{"one shared after", []CoreReading{u, u, u, u, u, s, u, u, u, u}, []bool{F, F, T, F, F}, false},
		{"three shared: one clean re-take", []CoreReading{s, s, s, u, u, s, u, u, u, u, u, u}, []bool{T, T, T, F, F, F}, false},
		{"all shared: a shared process", []CoreReading{s, s, s, s, s, s, s, s, s, s}, []bool{T, T, T, T, T}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			taken := withCoreScript(t, c.readings...)
			calls := 0
			sm, err := MeasureWith(countingScenario(&calls), scenarios.GoroutineSingle, nil,
				Options{Benchtime: 200 * time.Millisecond, Runs: DefaultRuns, CoreMark: true, Disturbed: func(Signal) bool { return false }})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sm.DisturbedRuns, c.want) || sm.Disturbed != c.disturbed || !sm.Judged {
				t.Errorf("verdicts %v, disturbed %v, judged %v: want %v, disturbed %v, judged", sm.DisturbedRuns, sm.Disturbed, sm.Judged, c.want, c.disturbed)
			}
			if *taken != 2*len(sm.Runs) {
				t.Errorf("%d core readings for %d timed runs: want two each and none in the warm-up", *taken, len(sm.Runs))
			}
			for i, sig := range sm.Signals {
				if sig.CoreBefore != c.readings[2*i] || sig.CoreAfter != c.readings[2*i+1] {
					t.Errorf("run %d: readings %+v/%+v, want the script's %+v/%+v", i, sig.CoreBefore, sig.CoreAfter, c.readings[2*i], c.readings[2*i+1])
				}
			}
		})
	}
}

// TestCoreMarkOnlyWhereJudged: the core mark joins a mark that applies
// (the default one on one P, or Options.Disturbed); on one P it also
// judges alone a scenario the default mark does not judge (exec), but
// only a run whose process was on one CPU, and never one that declares
// CoreMarkOff (memory); it makes no mark on two Ps or with NoMark; and
// without CoreMark the default mark ignores the core readings.
func TestCoreMarkOnlyWhereJudged(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	sw, _ := scenarios.Lookup("switch")
	mem, _ := scenarios.Lookup("memory")
	exec, _ := scenarios.Lookup("exec")
	if exec.NotJudged == "" || exec.CoreMarkOff != "" || mem.CoreMarkOff == "" {
		t.Fatalf("the test wants exec judged by the core mark alone and memory by neither mark")
	}
	shared := Signal{CoreBefore: CoreReading{ALU: 1.8, Chain: 1}, CoreAfter: CoreReading{ALU: 1, Chain: 1}, CoreShared: true, OneCPU: true} // runOnce sets the verdict
	if mark := judge(sw, Options{CoreMark: true}); mark == nil || !mark(shared) || mark(Signal{}) {
		t.Error("one P, CoreMark: want the default mark with the core mark")
	}
	if mark := judge(sw, Options{}); mark == nil || mark(shared) {
		t.Error("one P, no CoreMark: want the default mark alone")
	}
	if judge(sw, Options{CoreMark: true, NoMark: true}) != nil {
		t.Error("NoMark with CoreMark left a mark")
	}
	if judge(mem, Options{CoreMark: true}) != nil {
		t.Error("CoreMark made a mark for a scenario that declares CoreMarkOff")
	}
	if mark := judge(mem, Options{CoreMark: true, Disturbed: func(Signal) bool { return false }}); mark == nil || !mark(shared) {
		t.Error("CoreMark did not join Options.Disturbed")
	}
	mark := judge(exec, Options{CoreMark: true})
	if mark == nil || !mark(shared) {
		t.Fatal("exec on one P with CoreMark: a shared core on one CPU not marked")
	}
	unpinned := shared
	unpinned.OneCPU = false
	if mark(unpinned) || mark(Signal{OneCPU: true}) {
		t.Error("exec: marked a run off one CPU, or one on an unshared core")
	}
	if judge(exec, Options{}) != nil || judge(exec, Options{CoreMark: true, NoMark: true}) != nil {
		t.Error("exec: a mark without CoreMark, or with NoMark")
	}
	runtime.GOMAXPROCS(2)
	if judge(sw, Options{CoreMark: true}) != nil || judge(exec, Options{CoreMark: true}) != nil {
		t.Error("CoreMark made a mark on two Ps")
	}
}

// TestCoreProbeReadsAroundTimedRunsOnly: with Options.CoreProbe (the real
// probe) every timed run carries two readings of both loops, and without
// it none; CoreProbe alone marks nothing.
func TestCoreProbeReadsAroundTimedRunsOnly(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, on := range []bool{true, false} {
		var calls []int
		sm, err := MeasureWith(scriptedScenario(make([]float64, 100), &calls), scenarios.GoroutineSingle, nil,
			Options{Benchtime: 5 * time.Millisecond, Disturbed: func(Signal) bool { return false }, CoreProbe: on})
		if err != nil {
			t.Fatal(err)
		}
		if len(sm.Signals) == 0 {
			t.Fatal("no timed runs")
		}
		for i, sig := range sm.Signals {
			read := sig.CoreBefore.ALU > 0 && sig.CoreBefore.Chain > 0 && sig.CoreAfter.ALU > 0 && sig.CoreAfter.Chain > 0
			none := sig.CoreBefore == CoreReading{} && sig.CoreAfter == CoreReading{}
			if on && !read || !on && !none {
				t.Errorf("probe %v: run %d read %+v before, %+v after", on, i, sig.CoreBefore, sig.CoreAfter)
			}
			if sm.DisturbedRuns[i] {
				t.Errorf("probe %v without CoreMark: run %d marked", on, i)
			}
		}
	}
}
