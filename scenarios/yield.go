package scenarios

import (
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
)

// Yield: n coroutines yielding round-robin.
var Yield = register(&Scenario{
	Name:  "yield",
	Bench: "Yield",
	Doc: "n coroutines each yield N times; the run queue is round-robin, so every yield is one switch to the " +
		"next coroutine in line. ns/switch is one-way: the timed region (from when all n have started to when " +
		"the last has finished) divided by n×N; it includes the n coroutines' exits, which are n of the n×(N+1) " +
		"transfers. The queue's length is n, so large n shows the cost of a cold run queue and of cache misses " +
		"on n stacks or states.",
	Claim: "A full-context switch costs ~10–20 ns on modern x86; stackful 15–200 ns vs stackless 10–50 ns (seed tables); " +
		"per-switch cost at 30k coroutines vs 1 (ANCHORS.md: libcopp).",
	Params: []Param{{
		Key: "n", Full: []string{"2", "64", "4096", "262144"}, Quick: []string{"2", "4096"},
		Doc: "coroutines yielding in turn",
	}},
	Metrics:      []Metric{{Unit: "ns/switch", Kind: TimePerOp}},
	Blocking:     yieldBlocking,
	StateMachine: yieldStateMachine,
	Want:         yieldWant,
})

// yieldWant: coroutine j mixes (j, round) for rounds 0..N-1 in order into
// its own sum; the sums are added, because on goroutine-multi the
// coroutines run in parallel and finish in any order. Each coroutine's own
// sequence is fixed, so a lost or repeated round still changes the sum.
func yieldWant(env *Env) uint64 {
	n := env.Int("n")
	var total uint64
	for j := 0; j < n; j++ {
		total += yieldSum(uint64(j), env.N)
	}
	return total
}

func yieldSum(j uint64, rounds int) uint64 {
	sum := j
	for r := 0; r < rounds; r++ {
		sum = mix(sum, uint64(r))
	}
	return sum
}

func yieldBlocking(rt Blocking, env *Env) (Outcome, error) {
	n, rounds := env.Int("n"), env.N
	var started, finished atomic.Int64
	var total atomic.Uint64
	done := rt.NewSignal()
	for j := 0; j < n; j++ {
		id := uint64(j)
		rt.Go(func() {
			started.Add(1)
			rt.Yield() // wait here until every coroutine has started
			sum := id
			for r := 0; r < rounds; r++ {
				sum = mix(sum, uint64(r))
				rt.Yield()
			}
			total.Add(sum)
			if finished.Add(1) == int64(n) {
				done.Fire()
			}
		})
	}
	// Every coroutine starts and parks in its first Yield; the timed region
	// begins when they are all in the queue. (On goroutine-multi "started"
	// races with that Yield by a few instructions.)
	for started.Load() < int64(n) {
		rt.Yield()
	}
	env.ResetTimer()
	done.Wait()
	env.StopTimer()
	return Outcome{Ops: int64(n) * int64(rounds), Checksum: total.Load()}, nil
}

// yieldStateMachine is the stackless twin: n tasks, each yielding N times.
// A starter task, spawned last, runs once every task has started and
// yielded, and starts the timer.
func yieldStateMachine(env *Env) (Outcome, error) {
	n, rounds := env.Int("n"), env.N
	s := stackless.New()
	defer s.Close()
	var total uint64
	tasks := make([]yieldTask, n)
	for j := range tasks {
		tasks[j] = yieldTask{rounds: rounds, sum: uint64(j), total: &total}
		if err := s.Spawn(&tasks[j]); err != nil {
			return Outcome{}, err
		}
	}
	if err := s.Spawn(&timerStart{env: env}); err != nil {
		return Outcome{}, err
	}
	err := s.Run()
	env.StopTimer()
	return Outcome{Ops: int64(n) * int64(rounds), Checksum: total}, err
}

// yieldTask is the body of yieldBlocking's coroutines as a state machine:
// state 0 is the start (yield once to wait for the others), then each
// resume is a round.
type yieldTask struct {
	stackless.Coro
	started bool
	r       int
	rounds  int
	sum     uint64
	total   *uint64
}

func (t *yieldTask) Resume(c *stackless.Context) stackless.Step {
	if !t.started {
		t.started = true
		return c.Yield()
	}
	if t.r < t.rounds {
		t.sum = mix(t.sum, uint64(t.r))
		t.r++
		return c.Yield()
	}
	*t.total += t.sum
	return c.Done()
}

// timerStart is a task that starts the timer when it first runs, and
// finishes.
type timerStart struct {
	stackless.Coro
	env *Env
}

func (t *timerStart) Resume(c *stackless.Context) stackless.Step {
	t.env.ResetTimer()
	return c.Done()
}
