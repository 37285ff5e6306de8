package bodies

import (
	"fmt"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// microtaskBatch is how many microtasks (or coroutines) are queued before
// the queuing coroutine reaches a suspend point that runs them.
const microtaskBatch = 64

// Microtask: a microtask against a coroutine doing the same tiny work.
var Microtask = register(&scenarios.Scenario{
	Name:    "microtask",
	Bench:   "Microtask",
	Summary: "A microtask against a coroutine doing the same tiny work.",
	Doc: fmt.Sprintf("N tiny pieces of work (a checksum step), queued %d at a time by one coroutine, which "+
		"then reaches a suspend point. kind=microtask: each piece is one reusable microtask enqueued again; the "+
		"batch runs FIFO at the suspend point, in the current context, with no switch (the queuing coroutine "+
		"yields with nobody else ready, so it continues at once). kind=coroutine: each piece is a coroutine "+
		"spawned for it, and the queuing coroutine waits until the batch has finished: spawn, switch, finish. "+
		"ns/task is per piece of work. Goroutines have no microtask queue.", microtaskBatch),
	Claim: "Microtasks run FIFO before each switch, in the current context, never switching (docs/design.md §1, microtasks): a " +
		"microtask should cost a fraction of a coroutine.",
	Params: []scenarios.Param{{
		Key: "kind", Full: []string{"microtask", "coroutine"},
		Doc: "what runs each piece of work",
	}},
	Metrics:      []scenarios.Metric{{Unit: "ns/task", Kind: scenarios.TimePerOp}},
	Blocking:     microtaskBlocking,
	StateMachine: microtaskStateMachine,
	Want:         microtaskWant,
})

// microtaskWant: microtasks run FIFO on one thread, so their checksum is
// the ordered mix of 0..N-1; coroutines may run in parallel
// (goroutine-multi), so theirs is spawn's order-independent sum.
func microtaskWant(env *scenarios.Env) uint64 {
	if env.Params["kind"] == "microtask" {
		return mixSequence(env.N)
	}
	return spawnWant(env)
}

func checkMicrotaskKind(env *scenarios.Env) (microtask bool, err error) {
	switch k := env.Params["kind"]; k {
	case "microtask":
		return true, nil
	case "coroutine":
		return false, nil
	default:
		return false, fmt.Errorf("microtask: kind=%q is not a kind: use kind=microtask or kind=coroutine", k)
	}
}

func microtaskBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	isMicrotask, err := checkMicrotaskKind(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	n := env.N
	if !isMicrotask {
		env.ResetTimer()
		var sum uint64
		for base := 0; base < n; base += microtaskBatch {
			sum += spawnRound(rt, base, min(microtaskBatch, n-base), false)
		}
		env.StopTimer()
		return scenarios.Outcome{Ops: int64(n), Checksum: sum}, nil
	}
	mt, ok := rt.(scenarios.Microtasks)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Microtasks", "the row has no microtask queue")
	}
	var sum, seq uint64
	m := mt.NewMicrotask(func() {
		sum = mix(sum, seq)
		seq++
	})
	env.ResetTimer()
	for i := 0; i < n; i++ {
		m.Enqueue()
		if (i+1)%microtaskBatch == 0 {
			rt.Yield()
		}
	}
	rt.Yield()
	env.StopTimer()
	if seq != uint64(n) {
		return scenarios.Outcome{}, fmt.Errorf("microtask: %d of %d microtasks ran by the last suspend point", seq, n)
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum}, nil
}

func microtaskStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	isMicrotask, err := checkMicrotaskKind(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	s := stackless.New()
	defer s.Close()
	q := &microtaskQueuer{n: env.N}
	if isMicrotask {
		q.m = stackless.NewMicrotask(func() error {
			q.sum = mix(q.sum, q.seq)
			q.seq++
			return nil
		}, nil)
	} else {
		q.tasks = make([]spawnTask, microtaskBatch)
		for i := range q.tasks {
			q.tasks[i].sum = &q.sum
		}
	}
	if err := s.Spawn(q); err != nil {
		return scenarios.Outcome{}, err
	}
	env.ResetTimer()
	err = s.Run()
	env.StopTimer()
	if isMicrotask && q.seq != uint64(env.N) {
		return scenarios.Outcome{}, fmt.Errorf("microtask: %d of %d microtasks ran by the end of the run", q.seq, env.N)
	}
	return scenarios.Outcome{Ops: int64(env.N), Checksum: q.sum}, err
}

// microtaskQueuer queues microtaskBatch pieces of work per resume, as
// microtasks (m set) or as spawned tasks (re-spawning the finished structs
// of tasks), then yields: the microtasks run at that suspend point, the
// tasks are queued ahead of it.
type microtaskQueuer struct {
	stackless.Coro
	n, i     int
	sum, seq uint64
	m        *stackless.Microtask
	tasks    []spawnTask
}

func (t *microtaskQueuer) Resume(c *stackless.Context) stackless.Step {
	if t.i >= t.n {
		return c.Done()
	}
	batch := min(microtaskBatch, t.n-t.i)
	for k := 0; k < batch; k++ {
		if t.m != nil {
			if err := c.Scheduler().EnqueueMicrotask(t.m); err != nil {
				return c.Fail(err)
			}
			continue
		}
		t.tasks[k].id = uint64(t.i + k)
		if err := c.Spawn(&t.tasks[k]); err != nil {
			return c.Fail(err)
		}
	}
	t.i += batch
	return c.Yield()
}
