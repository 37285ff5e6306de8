package bodies

import (
	"fmt"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// AwaitReady: the fast path of awaiting a completed future against a wait
// that must suspend.
var AwaitReady = register(&scenarios.Scenario{
	Name:    "await-ready",
	Bench:   "AwaitReady",
	Summary: "Awaiting an already-completed future (the fast path: no suspend) against a pending one.",
	Doc: "state=ready: one coroutine awaits a future that has already completed, N times: the fast path, " +
		"no suspend and no switch (goroutines: a receive from a closed channel). state=pending: two " +
		"coroutines take turns, each resolving the other's future and then awaiting its own, which is " +
		"still pending, so every await suspends and is woken by the other side: one switch per await " +
		"(goroutines: a closed channel per future, re-made after each await, so one allocation per await; " +
		"on goroutine-multi the other side can resolve before the await starts, and the await then " +
		"takes the fast path). ns/await is per await, one-way.",
	Claim: "Fast path: if the awaited event already fired, the coroutine is not suspended and no switch " +
		"happens (docs/design.md §1: suspend).",
	Params: []scenarios.Param{{
		Key: "state", Full: []string{"ready", "pending"},
		Doc: "whether the awaited future has completed when the await starts",
	}},
	Metrics:      []scenarios.Metric{{Unit: "ns/await", Kind: scenarios.TimePerOp}},
	Blocking:     awaitReadyBlocking,
	StateMachine: awaitReadyStateMachine,
	Want:         awaitReadyWant,
})

// readyValue is the value the completed future of state=ready holds.
const readyValue = 0xa11ce

// awaitReadyWant: ready mixes readyValue+i for each await i; pending is
// pingpong's order (the main side mixes 2i, the partner 2i+1), carried by
// the futures' values.
func awaitReadyWant(env *scenarios.Env) uint64 {
	if env.Params["state"] == "ready" {
		var sum uint64
		for i := 0; i < env.N; i++ {
			sum = mix(sum, readyValue+uint64(i))
		}
		return sum
	}
	return mixSequence(2 * env.N)
}

func checkAwaitState(env *scenarios.Env) (ready bool, err error) {
	switch s := env.Params["state"]; s {
	case "ready":
		return true, nil
	case "pending":
		return false, nil
	default:
		return false, fmt.Errorf("await-ready: state=%q is not a future state: use state=ready or state=pending", s)
	}
}

func awaitReadyBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	ready, err := checkAwaitState(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	fs, ok := rt.(scenarios.Futures)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Futures", "the row has no futures")
	}
	n := env.N
	var sum uint64
	if ready {
		f := fs.NewFuture()
		f.Resolve(readyValue)
		env.ResetTimer()
		for i := 0; i < n; i++ {
			sum = mix(sum, f.Await()+uint64(i))
		}
		env.StopTimer()
		return scenarios.Outcome{Ops: int64(n), Checksum: sum}, nil
	}
	// mine is what the main side awaits, theirs what the partner awaits.
	// Each side resets its own future after waking, before it resolves the
	// other's, so a future is never resolved twice without a Reset.
	mine, theirs := fs.NewFuture(), fs.NewFuture()
	rt.Go(func() {
		for i := 0; i < n; i++ {
			v := theirs.Await()
			theirs.Reset()
			sum = mix(sum, v+1)
			mine.Resolve(uint64(2*i + 2))
		}
	})
	env.ResetTimer()
	v := uint64(0)
	for i := 0; i < n; i++ {
		sum = mix(sum, v)
		theirs.Resolve(v)
		v = mine.Await()
		mine.Reset()
	}
	env.StopTimer()
	return scenarios.Outcome{Ops: 2 * int64(n), Checksum: sum}, nil
}

func awaitReadyStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	ready, err := checkAwaitState(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	s := stackless.New()
	defer s.Close()
	var sum uint64
	if ready {
		var f stackless.Event
		f.Resolve(uint64(readyValue))
		if err := s.Spawn(&readyAwaiter{n: env.N, f: &f, sum: &sum}); err != nil {
			return scenarios.Outcome{}, err
		}
		env.ResetTimer()
		err := s.Run()
		env.StopTimer()
		return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, err
	}
	var mine, theirs stackless.Event
	if err := s.Spawn(&futureSide{n: env.N, main: true, sum: &sum, await: &mine, resolve: &theirs}); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Spawn(&futureSide{n: env.N, sum: &sum, await: &theirs, resolve: &mine}); err != nil {
		return scenarios.Outcome{}, err
	}
	env.ResetTimer()
	err = s.Run()
	env.StopTimer()
	return scenarios.Outcome{Ops: 2 * int64(env.N), Checksum: sum}, err
}

// readyAwaiter awaits the completed future f, n times.
type readyAwaiter struct {
	stackless.Coro
	i, n    int
	waiting bool
	f       *stackless.Event
	sum     *uint64
}

func (t *readyAwaiter) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		v, _ := c.Result().(uint64)
		*t.sum = mix(*t.sum, v+uint64(t.i))
		t.i++
	}
	if t.i == t.n {
		return c.Done()
	}
	t.waiting = true
	return c.Await(t.f)
}

// futureSide is one side of state=pending, as in awaitReadyBlocking: the
// main side mixes and resolves first, then awaits; the partner awaits,
// then mixes and resolves. The value travels in the side's own field (the
// Event carries no value here, to avoid boxing a uint64 per resolve).
type futureSide struct {
	stackless.Coro
	i, n           int
	main, waiting  bool
	v              uint64 // main side: the value mixed next
	sum            *uint64
	await, resolve *stackless.Event
}

func (t *futureSide) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		t.waiting = false
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
		t.await.Reset()
		if t.main {
			t.v = uint64(2*t.i + 2)
		} else {
			*t.sum = mix(*t.sum, uint64(2*t.i+1))
			t.resolve.Resolve(nil)
		}
		t.i++
	}
	if t.i == t.n {
		return c.Done()
	}
	if t.main {
		*t.sum = mix(*t.sum, t.v)
		t.resolve.Resolve(nil)
	}
	t.waiting = true
	return c.Await(t.await)
}
