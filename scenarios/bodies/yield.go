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
	Doc: "n coroutines each yield N times, then wait on an end gate; the run queue is round-robin, so each " +
		"yield is one switch to the next coroutine in line. ns/switch is one-way: the timed region runs from the " +
		"moment every coroutine has been released and has yielded once (untimed) until the first coroutine " +
		"returns from its N-th yield, divided by n×N. On one thread with a FIFO run queue every coroutine has " +
		"then made its N yields and none has reached the gate, so the region holds exactly the n×N yields: the " +
		"gate waits and the exits come after it (goroutine-multi runs its coroutines in parallel, so a few may " +
		"still be a yield behind when the first finishes: a share of about one in N of the count). Before, the " +
		"region ended when the last coroutine reached the gate, so it held n gate waits as well, a switch of " +
		"another kind that costs more: at n=262144, where the driver's N is 1 or 2, they were a half or all of " +
		"the figure (stackful-asm 252 ns per switch at N=2 against 148 at N=22, `benchrun cell -scenario yield " +
		"-impl stackful-asm -params n=262144`, -benchtime 100ms against 1s). The release (a start gate's " +
		"broadcast wake of all n, blocking rows) and that first yield are outside it too: a timed release made " +
		"the whole figure a gate's wake-and-wait pass at N=1. The state-machine twin, which has no start gate, " +
		"starts its timer after each task's first yield. The queue's length is n, so large n shows a long run " +
		"queue and cache and TLB misses on n stacks or states.",
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
	y := &yieldRun{n: int64(n), rt: rt, gate: g.NewGate(), endGate: g.NewGate(), done: rt.NewSignal(), env: env}
	for j := 0; j < n; j++ {
		id := uint64(j)
		rt.Go(func() {
			y.start()
			sum := id
			for r := 0; r < rounds; r++ {
				sum = mix(sum, uint64(r))
				rt.Yield()
			}
			y.finish(sum)
		})
	}
	for y.started.Load() < int64(n) {
		rt.Yield()
	}
	y.gate.Open()
	for y.through.Load() < int64(n) {
		rt.Yield()
	}
	env.ResetTimer()
	y.timing.Store(true)
	y.done.Wait()
	env.StopTimer() // a no-op: the first coroutine back from its last yield stopped it
	y.endGate.Open()
	return scenarios.Outcome{Ops: int64(n) * int64(rounds), Checksum: y.total.Load()}, nil
}

// yieldRun is what yieldBlocking's coroutines share, and how they start
// and end: started counts the coroutines waiting at the start gate,
// through those past it, timing says main has started the timer, stopped
// that a coroutine has stopped it, finished those done with their rounds,
// and total adds their sums.
type yieldRun struct {
	started, through, finished atomic.Int64
	timing, stopped            atomic.Bool
	total                      atomic.Uint64
	n                          int64
	rt                         scenarios.Blocking
	gate, endGate              scenarios.Gate
	done                       scenarios.Signal
	env                        *scenarios.Env
}

// start is a coroutine's untimed start: it waits at the start gate, then
// counts itself through and yields until main has started the timer, so
// no coroutine runs a timed round before it. On one P it yields
// exactly once: main is in line behind the n woken coroutines and starts
// the timer when they are all through, and round-robin brings each back
// after main; on goroutine-multi, whose coroutines run in parallel, some
// yield more, untimed.
//
// start and finish are functions of their own, not inlined, and what the
// coroutines share is one struct, so that the coroutine's frame, whose
// stack lines every timed yield touches, holds the loop and little else
// (0x78 bytes when the start was inline and the end was not; with two
// more captured counters it grew to 0x88, and goroutine-single's Yield
// n=4096 read 11% more per switch, interleaved A/B, 12 processes each).
//
//go:noinline
func (y *yieldRun) start() {
	y.started.Add(1)
	y.gate.Wait()
	y.through.Add(1)
	y.rt.Yield()
	for !y.timing.Load() {
		y.rt.Yield()
	}
}

// finish is a coroutine's end, back from its last yield. The first to get
// here stops the clock: on one thread, round-robin, every yield of the
// rounds has been made by then and no coroutine has reached the end gate
// (see the scenario's Doc). The clock is stopped on that coroutine's
// thread, which on goroutine-multi may not be main's: the segment then
// counts as moved between threads (a note in the run log, not a mark).
// Then it adds its sum and waits, untimed, at the end gate until all have
// finished their rounds; it exits after that.
//
//go:noinline
func (y *yieldRun) finish(sum uint64) {
	if y.stopped.CompareAndSwap(false, true) {
		y.env.StopTimer()
	}
	y.total.Add(sum)
	if y.finished.Add(1) == y.n {
		y.done.Fire()
	}
	y.endGate.Wait()
}

// yieldStateMachine is the stackless twin: n tasks, each yielding N times
// and then waiting on the end gate. A starter task, spawned last, runs
// once every task has started and yielded, and starts the timer; the
// first task back from its last yield stops it (yieldRun.finish's
// reasoning), and the last to finish its rounds opens the gate.
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
	stopped     bool // the first task back from its last yield stopped the timer
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
		if t.r < t.rounds {
			t.sum = mix(t.sum, uint64(t.r))
			t.r++
			return c.Yield()
		}
		sh := t.shared
		if !sh.stopped {
			sh.stopped = true
			sh.env.StopTimer()
		}
		sh.total += t.sum
		sh.finished++
		if sh.finished == sh.n {
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
