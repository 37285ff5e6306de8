package bodies

import (
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// Yield: n coroutines yielding round-robin.
var Yield = register(&scenarios.Scenario{
	Name:    "yield",
	Bench:   "Yield",
	Summary: "n coroutines yielding round-robin; cost per switch as n grows (cache and TLB pressure).",
	Doc: "n coroutines each give up the CPU N times: N-1 yields, then a wait on an end gate; the run queue is " +
		"round-robin, so each is one switch to the next coroutine in line. ns/switch is one-way: the timed " +
		"region, from the moment every coroutine has been released and has yielded once (untimed) to the last " +
		"one reaching the end gate, divided by n×N; their exits come after it. The release (a start gate's " +
		"broadcast wake of all n, blocking rows) and that first yield are outside it: at n=262144 the driver's " +
		"N is 1 on stackful-coro and the goroutine rows, and a timed release made the whole figure a gate's " +
		"wake-and-wait pass with no yield in it (stackful-coro 544-618 ns at N=1 against 441-469 at N=8; taking " +
		"the release out moved its median 774 -> 640 ns, goroutine-single's 782 -> 698). The " +
		"state-machine twin, which has no gate, already started its timer after each task's first yield. The " +
		"queue's length is n, so large n shows a long run queue and cache and TLB misses on n stacks or states.",
	Claim: "A full-context switch costs ~10–20 ns on modern x86; stackful 15–200 ns vs stackless 10–50 ns (docs/design.md §1, the claims); " +
		"per-switch cost at 30k coroutines vs 1 (docs/design.md §8: libcopp).",
	Params: []scenarios.Param{{
		Key: "n", Full: []string{"2", "64", "4096", "262144"}, Quick: []string{"2", "4096"},
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes,
		Doc: "coroutines yielding in turn",
	}},
	Metrics:      []scenarios.Metric{{Unit: "ns/switch", Kind: scenarios.TimePerOp}},
	Blocking:     yieldBlocking,
	StateMachine: yieldStateMachine,
	Want:         yieldWant,
})

// yieldWant: coroutine j mixes (j, round) for rounds 0..N-1 in order into
// its own sum; the sums are added, because on goroutine-multi the
// coroutines run in parallel and finish in any order. Each coroutine's own
// sequence is fixed, so a lost or repeated round still changes the sum.
func yieldWant(env *scenarios.Env) uint64 {
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

func yieldBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	g, ok := rt.(scenarios.Gates)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Gates", "the row has no broadcast gate")
	}
	n, rounds := env.Int("n"), env.N
	start := yieldStart{rt: rt, gate: g.NewGate()}
	var finished atomic.Int64
	var total atomic.Uint64
	endGate, done := g.NewGate(), rt.NewSignal()
	for j := 0; j < n; j++ {
		id := uint64(j)
		rt.Go(func() {
			start.wait()
			sum := id
			for r := 0; r < rounds-1; r++ {
				sum = mix(sum, uint64(r))
				rt.Yield()
			}
			sum = mix(sum, uint64(rounds-1))
			total.Add(sum)
			if finished.Add(1) == int64(n) {
				done.Fire()
			}
			// The last of this coroutine's switches: it suspends and the
			// next in line runs, as after a yield. Exits come after the
			// timed region.
			endGate.Wait()
		})
	}
	for start.started.Load() < int64(n) {
		rt.Yield()
	}
	start.gate.Open()
	for start.through.Load() < int64(n) {
		rt.Yield()
	}
	env.ResetTimer()
	start.timing.Store(true)
	done.Wait()
	env.StopTimer()
	endGate.Open()
	return scenarios.Outcome{Ops: int64(n) * int64(rounds), Checksum: total.Load()}, nil
}

// yieldStart is how yieldBlocking's coroutines start: started counts the
// coroutines waiting at the start gate, through those past it, and timing
// says main has started the timer.
type yieldStart struct {
	started, through atomic.Int64
	timing           atomic.Bool
	rt               scenarios.Blocking
	gate             scenarios.Gate
}

// wait is a coroutine's untimed start: it waits at the start gate, then
// counts itself through and yields until main has started the timer, so
// no coroutine runs a timed round before it. On one P it yields
// exactly once: main is in line behind the n woken coroutines and starts
// the timer when they are all through, and round-robin brings each back
// after main; on goroutine-multi, whose coroutines run in parallel, some
// yield more, untimed. It is a function of its own, not inlined, and the
// counters share one struct, so that the coroutine's frame, whose stack
// lines every timed yield touches, stays the size it was before this
// start existed (0x78 bytes; it takes no argument but its receiver, so the
// frame's outgoing-argument area stays one word): with the start inline
// and two more captured counters it grew to 0x88, and goroutine-single's
// Yield n=4096 read 11% more per switch (interleaved A/B, 12 processes
// each).
//
//go:noinline
func (s *yieldStart) wait() {
	s.started.Add(1)
	s.gate.Wait()
	s.through.Add(1)
	s.rt.Yield()
	for !s.timing.Load() {
		s.rt.Yield()
	}
}

// yieldStateMachine is the stackless twin: n tasks, each yielding N-1
// times and then waiting on the end gate. A starter task, spawned last,
// runs once every task has started and yielded, and starts the timer; the
// last task to finish its rounds stops it and opens the gate.
func yieldStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	n, rounds := env.Int("n"), env.N
	s := stackless.New()
	defer s.Close()
	shared := &yieldShared{n: n, env: env}
	tasks := make([]yieldTask, n)
	for j := range tasks {
		tasks[j] = yieldTask{rounds: rounds, sum: uint64(j), shared: shared}
		if err := s.Spawn(&tasks[j]); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	if err := s.Spawn(&startTimerTask{env: env}); err != nil {
		return scenarios.Outcome{}, err
	}
	err := s.Run()
	return scenarios.Outcome{Ops: int64(n) * int64(rounds), Checksum: shared.total}, err
}

// yieldShared is the state yieldTasks share.
type yieldShared struct {
	n, finished int
	total       uint64
	endGate     stackless.Event
	env         *scenarios.Env
}

// yieldTask is the body of yieldBlocking's coroutines as a state machine.
type yieldTask struct {
	stackless.Coro
	state  uint8 // 0: not started; 1: in its rounds; 2: waiting at the end gate
	r      int
	rounds int
	sum    uint64
	shared *yieldShared
}

func (t *yieldTask) Resume(c *stackless.Context) stackless.Step {
	switch t.state {
	case 0:
		t.state = 1
		return c.Yield() // wait until every task has started
	case 1:
		t.sum = mix(t.sum, uint64(t.r))
		t.r++
		if t.r < t.rounds {
			return c.Yield()
		}
		sh := t.shared
		sh.total += t.sum
		sh.finished++
		if sh.finished == sh.n {
			sh.env.StopTimer()
			sh.endGate.Resolve(nil)
			return c.Done()
		}
		t.state = 2
		return c.Await(&sh.endGate)
	default:
		return c.Done()
	}
}

// startTimerTask is a task that starts the timer when it first runs, and
// finishes.
type startTimerTask struct {
	stackless.Coro
	env *scenarios.Env
}

func (t *startTimerTask) Resume(c *stackless.Context) stackless.Step {
	t.env.ResetTimer()
	return c.Done()
}
