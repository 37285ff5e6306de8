package bodies

import (
	"fmt"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// Shutdown: n blocked coroutines; graceful shutdown until every cleanup has
// run.
var Shutdown = register(&scenarios.Scenario{
	Name:    "shutdown",
	Bench:   "Shutdown",
	Summary: "n blocked coroutines; graceful shutdown until every cleanup has run.",
	Doc: "n coroutines block on something that never happens, each with a deferred cleanup (stackless: a " +
		"cleanup state). The timed region runs from the start of a graceful shutdown until the last cleanup " +
		"has run: stackful, stackless: the scheduler's Shutdown cancels every coroutine, each wakes with the " +
		"cancellation and runs its cleanup; goroutines: the idiomatic cancellation, one context whose Done " +
		"channel every goroutine selects on, cancelled once, each goroutine then returning through its " +
		"defers. ns/coroutine divides by n; the checksum counts the cleanups (an order-independent sum). " +
		"A shutdown ends its runtime, so one run is one cycle: benchrun repeats the cycle in each process, each time with a " +
		"fresh runtime and n freshly blocked coroutines, until the bench time is filled (at least twice; short cycles until four are warm " +
		"or four bench times are spent), drops the first, " +
		"cold cycle and reports the mean of the others.",
	Claim: "Graceful shutdown: set the flag, deliver a cancellation to every coroutine, let them run their " +
		"cleanup (docs/design.md §1, graceful shutdown).",
	Params: []scenarios.Param{{
		// --quick runs n=1000 only: a 100000 cycle costs 0.4–0.7 s on a
		// 2-core machine (spawning and blocking them), and a cell runs at
		// least two cycles: over the quick budget.
		Key: "n", Full: []string{"1000", "100000"}, Quick: []string{"1000"},
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes,
		Doc: "blocked coroutines",
	}},
	Metrics:      []scenarios.Metric{{Unit: "ns/coroutine", Kind: scenarios.TimePerOp}},
	FixedIters:   1,
	Cycles:       true,
	Blocking:     shutdownBlocking,
	StateMachine: shutdownStateMachine,
	Want:         func(env *scenarios.Env) uint64 { return spawnWantN(env.Int("n")) },
})

// spawnWantN is the sum of spawnValue(id) for id in 0..n-1.
func spawnWantN(n int) uint64 {
	var sum uint64
	for i := 0; i < n; i++ {
		sum += spawnValue(uint64(i))
	}
	return sum
}

func shutdownBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	sd, ok := rt.(scenarios.Shutdowns)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Shutdowns", "the row has no graceful shutdown")
	}
	n := env.Int("n")
	scope, done := sd.NewShutdownScope(), rt.NewSignal()
	var started, cleaned atomic.Int64
	var sum, uncancelled atomic.Uint64
	for i := 0; i < n; i++ {
		id := uint64(i)
		rt.Go(func() {
			defer func() {
				sum.Add(spawnValue(id))
				if cleaned.Add(1) == int64(n) {
					done.Fire()
				}
			}()
			started.Add(1)
			if !scope.Block() {
				uncancelled.Add(1)
			}
		})
	}
	for started.Load() < int64(n) {
		rt.Yield()
	}
	env.ResetTimer()
	scope.Shutdown()
	done.Wait()
	env.StopTimer()
	if u := uncancelled.Load(); u != 0 {
		return scenarios.Outcome{}, fmt.Errorf("shutdown: %d coroutines woke without a cancellation", u)
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum.Load()}, nil
}

func shutdownStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	n := env.Int("n")
	s := stackless.New()
	defer s.Close()
	var never stackless.Event
	var sum uint64
	var uncancelled int
	tasks := make([]blockedTask, n)
	for i := range tasks {
		tasks[i] = blockedTask{id: uint64(i), never: &never, sum: &sum, uncancelled: &uncancelled}
		if err := s.Spawn(&tasks[i]); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	// The stopper runs after every task has blocked (FIFO queue), starts
	// the timer and the shutdown.
	if err := s.Spawn(&shutdownStarter{env: env}); err != nil {
		return scenarios.Outcome{}, err
	}
	err := s.Run()
	env.StopTimer()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	if uncancelled != 0 {
		return scenarios.Outcome{}, fmt.Errorf("shutdown: %d tasks woke without a cancellation", uncancelled)
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum}, nil
}

// blockedTask waits on an event nobody fires; its cleanup state runs when
// the shutdown cancels it.
type blockedTask struct {
	stackless.Coro
	waiting     bool
	id          uint64
	never       *stackless.Event
	sum         *uint64
	uncancelled *int
}

func (t *blockedTask) Resume(c *stackless.Context) stackless.Step {
	if !t.waiting {
		t.waiting = true
		return c.Await(t.never)
	}
	// Cleanup state.
	if !c.Cancelled() {
		*t.uncancelled++
	}
	*t.sum += spawnValue(t.id)
	return c.Done()
}

// shutdownStarter starts the timer and the graceful shutdown.
type shutdownStarter struct {
	stackless.Coro
	env *scenarios.Env
}

func (t *shutdownStarter) Resume(c *stackless.Context) stackless.Step {
	t.env.ResetTimer()
	c.Shutdown()
	return c.Done()
}
