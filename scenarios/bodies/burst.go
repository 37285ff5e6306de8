package bodies

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// burstIdle is the idle spell between the two bursts: long enough for a
// time-driven trimmer to act, short enough for the quick budget.
const burstIdle = 10 * time.Millisecond

// Burst: the memory a runtime keeps after a burst, and what the next burst
// costs (the adaptive pool).
var Burst = register(&scenarios.Scenario{
	Name:    "burst",
	Bench:   "Burst",
	Summary: "RSS kept after a burst of n coroutines and an idle spell, and the next burst's spawn cost.",
	Doc: fmt.Sprintf("A burst of n coroutines, each touching 1 KiB of stack (stackless: of state) and "+
		"suspending until all n are up, then released to finish; an idle spell of %v; a second identical "+
		"burst. B/coroutine is the resident set kept after the first burst and the idle spell, above the level "+
		"before it, divided by n: what the runtime holds on to (stack pool, free gs, dead task structs: the "+
		"collector is off in every row, so nothing is reclaimed by a GC). ns/spawn is the second burst's cost "+
		"from its first spawn until all n are suspended, divided by n: the price of what was kept or given back. "+
		"With the default stack pool (trimming by operation count, no time-based window) the stackful-asm row "+
		"keeps its stacks through an idle spell.", burstIdle),
	NotJudged:   "its headline is a byte count, which a runqueue wait does not move",
	CoreMarkOff: "its headline is a byte count, which a shared core does not move",
	Claim: "Context pool: finished contexts go back to a pool instead of being unmapped (docs/design.md §1); a pool that " +
		"follows the recent peak gives memory back after a burst (impl/stackful/stackpool).",
	Params: []scenarios.Param{{
		// --quick runs n=10000 only: a 100000 cell costs ~1 s on a 2-core
		// machine (the first touch of ~0.5 GB), over the quick budget.
		Key: "n", Full: []string{"10000", "100000"}, Quick: []string{"10000"},
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes,
		Doc: "coroutines per burst",
	}},
	Metrics: []scenarios.Metric{
		{Unit: "B/coroutine", Kind: scenarios.BodyMeasured},
		{Unit: "ns/spawn", Kind: scenarios.TimePerOp},
	},
	FixedIters:   1,
	Blocking:     burstBlocking,
	StateMachine: burstStateMachine,
	Want:         func(env *scenarios.Env) uint64 { return 2 * sumTouched(env.Int("n")) },
})

func burstBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	g, ok := rt.(scenarios.Gates)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Gates", "the row has no broadcast gate")
	}
	n := env.Int("n")
	var sum atomic.Uint64
	rss0 := residentBytes()
	burst := func(timed bool) {
		gate, done := g.NewGate(), rt.NewSignal()
		if timed {
			env.ResetTimer()
		}
		suspendedCrowd(rt, n, gate, &sum, done)
		if timed {
			env.StopTimer()
		}
		gate.Open()
		done.Wait()
	}
	burst(false)
	rt.Sleep(burstIdle)
	rss1 := residentBytes()
	burst(true)
	return scenarios.Outcome{Ops: int64(n), Checksum: sum.Load(), Values: map[string]float64{
		"B/coroutine": max(0, float64(rss1-rss0)/float64(n)),
	}}, nil
}

// burstStateMachine: each burst spawns n fresh memoryTasks (the natural
// way; their structs become garbage when they finish) and runs them to the
// end; between the bursts the scheduler idles.
func burstStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	n := env.Int("n")
	s := stackless.New()
	defer s.Close()
	var sum uint64
	burst := func(timed bool) error {
		var gate stackless.Event
		if timed {
			env.ResetTimer()
		}
		for i := 0; i < n; i++ {
			if err := s.Spawn(&memoryTask{id: uint64(i), gate: &gate, sum: &sum}); err != nil {
				return err
			}
		}
		// The opener runs once every task has suspended (FIFO queue).
		if err := s.Spawn(&gateOpener{gate: &gate, measure: env.StopTimer}); err != nil {
			return err
		}
		return s.Run()
	}
	rss0 := residentBytes()
	if err := burst(false); err != nil {
		return scenarios.Outcome{}, err
	}
	time.Sleep(burstIdle)
	rss1 := residentBytes()
	if err := burst(true); err != nil {
		return scenarios.Outcome{}, err
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum, Values: map[string]float64{
		"B/coroutine": max(0, float64(rss1-rss0)/float64(n)),
	}}, nil
}
