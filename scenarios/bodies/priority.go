package bodies

import (
	"fmt"
	"time"

	"github.com/montanaflynn/stats"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// Priority: how soon a high-priority coroutine runs when woken behind n
// runnable normal ones.
var Priority = register(&scenarios.Scenario{
	Name:    "priority",
	Bench:   "Priority",
	Summary: "Wake-up latency of a high-priority coroutine queued behind n normal ones.",
	Doc: "n normal coroutines keep the run queue full (each yields in a loop); a high-priority coroutine " +
		"waits on an event. N times, the main coroutine reads the clock, fires the event and yields; the " +
		"high-priority coroutine, enqueued at the head, reads the clock when it runs. ns/wake is the mean " +
		"of the run's N one-way latencies (fire to run, from the time the fire was intended) that are no longer " +
		"than twice their median: the clock may read in steps (10 ns on AMD's TSC), so a median of readings is a " +
		"step, while the mean of readings, each rounded up or down at random, resolves below one. " +
		"The checksum counts the normal coroutines that ran in between (it must be 0 every time: a wake that " +
		"queued behind them fails the cell). Goroutines have no priorities: not supported.",
	Claim: "Queue and priorities: two priorities; high priority is enqueued at the head; dequeue always from " +
		"the head (docs/design.md §1, the scheduler).",
	Params: []scenarios.Param{{
		Key: "n", Full: []string{"1000"},
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes,
		Doc: "runnable normal coroutines ahead in the queue",
	}},
	Metrics:      []scenarios.Metric{{Unit: "ns/wake", Kind: scenarios.BodyMeasured}},
	Blocking:     priorityBlocking,
	StateMachine: priorityStateMachine,
	Want:         priorityWant,
})

// priorityWant: wake i mixes i and the number of normal coroutines that
// ran between its fire and its run, which must be 0.
func priorityWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.N; i++ {
		sum = mix(sum, priorityMixValue(i, 0))
	}
	return sum
}

func priorityMixValue(i int, normalsBetween uint64) uint64 { return uint64(i)<<32 | normalsBetween }

// wakeFigure returns the ns/wake figure of one run's one-way latencies
// (ns): the mean of the samples no longer than twice their median.
//
// Why not the median itself: the clock reads in steps. On AMD EPYC (the
// committed sample's machine, under KVM) the TSC advances in steps of 26
// cycles, 10 ns at 2.6 GHz, and time.Now with it, so every sample is a
// multiple of 10 ns (±1) and so is their median: stackless's ~35 ns wake
// read 30 in some processes and 40 in others, a 13% CV from the clock
// alone. A reading is the true latency rounded down or up to a step, up
// with a probability equal to the fraction of a step it covers, because
// the fire's phase against the clock's step is unrelated to the wake
// (each wake is behind n normal coroutines' yields). So the mean of the
// readings is the mean of the latencies, to well under a step. The
// median stays the cut: a sample over twice the median was a wake the
// CPU left for something else (an interrupt, a preemption), which a mean
// must not average in. Whether a sample near the cut is in or out moves
// the figure by a fraction of a step, not by a whole one.
func wakeFigure(samples []float64) (float64, error) {
	if len(samples) == 0 {
		return 0, fmt.Errorf("no latency samples")
	}
	median, err := stats.Percentile(samples, 50)
	if err != nil {
		return 0, err
	}
	var sum float64
	var kept int
	for _, v := range samples {
		if v <= 2*median {
			sum += v
			kept++
		}
	}
	// kept > 0: at least the samples at or below the median are kept
	// (the median is not negative: a latency is a later reading minus an
	// earlier one of a monotonic clock).
	return sum / float64(kept), nil
}

// priorityRun is the state both bodies share: the clock reading of the
// intended fire, the counter the normal coroutines bump, and the samples.
type priorityRun struct {
	n, wakes   int
	normalRuns uint64 // bumped by every normal coroutine each time it runs
	runsAtFire uint64
	firedAt    time.Time
	stop       bool
	sum        uint64
	samples    []float64 // preallocated: no allocation in the timed loop
	woken      int
}

func newPriorityRun(n, wakes int) *priorityRun {
	return &priorityRun{n: n, wakes: wakes, samples: make([]float64, wakes)}
}

// fire records the intended wake time; the caller fires the event next.
func (p *priorityRun) fire() {
	p.runsAtFire = p.normalRuns
	p.firedAt = time.Now()
}

// woke records one wake of the high-priority coroutine.
func (p *priorityRun) woke() {
	p.samples[p.woken] = float64(time.Since(p.firedAt).Nanoseconds())
	p.sum = mix(p.sum, priorityMixValue(p.woken, p.normalRuns-p.runsAtFire))
	p.woken++
}

func (p *priorityRun) outcome() (scenarios.Outcome, error) {
	if p.woken != p.wakes {
		return scenarios.Outcome{}, fmt.Errorf("priority: the high-priority coroutine woke %d times, want %d", p.woken, p.wakes)
	}
	figure, err := wakeFigure(p.samples)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return scenarios.Outcome{Ops: int64(p.wakes), Checksum: p.sum, Values: map[string]float64{"ns/wake": figure}}, nil
}

func priorityBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	pr, ok := rt.(scenarios.Priorities)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Priorities", "the row has no priority levels")
	}
	p := newPriorityRun(env.Int("n"), env.N)
	wake := rt.NewSignal()
	for j := 0; j < p.n; j++ {
		rt.Go(func() {
			for !p.stop {
				p.normalRuns++
				rt.Yield()
			}
		})
	}
	pr.GoHigh(func() {
		for p.woken < p.wakes {
			wake.Wait()
			p.woke()
		}
	})
	rt.Yield() // every coroutine starts; the normal ones queue, the high one waits
	env.ResetTimer()
	for i := 0; i < p.wakes; i++ {
		p.fire()
		wake.Fire()
		rt.Yield()
	}
	env.StopTimer()
	p.stop = true
	return p.outcome()
}

func priorityStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	p := newPriorityRun(env.Int("n"), env.N)
	s := stackless.New()
	defer s.Close()
	var wake stackless.Event
	for j := 0; j < p.n; j++ {
		if err := s.Spawn(&normalYielder{p: p}); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	if err := s.SpawnPriority(&highWaiter{p: p, wake: &wake}, stackless.High); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Spawn(&priorityFirer{p: p, wake: &wake, env: env}); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	return p.outcome()
}

// normalYielder keeps the queue full: it yields until the run stops.
type normalYielder struct {
	stackless.Coro
	p *priorityRun
}

func (t *normalYielder) Resume(c *stackless.Context) stackless.Step {
	if t.p.stop {
		return c.Done()
	}
	t.p.normalRuns++
	return c.Yield()
}

// highWaiter is the high-priority task: it waits for wake, records the
// latency, and waits again.
type highWaiter struct {
	stackless.Coro
	waiting bool
	p       *priorityRun
	wake    *stackless.Event
}

func (t *highWaiter) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		t.p.woke()
		t.wake.Reset()
	}
	if t.p.woken == t.p.wakes {
		return c.Done()
	}
	t.waiting = true
	return c.Await(t.wake)
}

// priorityFirer is the main task: each resume fires wake and yields.
type priorityFirer struct {
	stackless.Coro
	i    int
	p    *priorityRun
	wake *stackless.Event
	env  *scenarios.Env
}

func (t *priorityFirer) Resume(c *stackless.Context) stackless.Step {
	if t.i == 0 {
		t.env.ResetTimer()
	}
	if t.i == t.p.wakes {
		t.env.StopTimer()
		t.p.stop = true
		return c.Done()
	}
	t.i++
	t.p.fire()
	t.wake.Resolve(nil)
	return c.Yield()
}
