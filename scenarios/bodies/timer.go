package bodies

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// Timer: n coroutines sleep on a fixed schedule of durations drawn from a
// pseudo-random sequence fixed in advance, in windows of a fixed length;
// every wake-up's lateness is sampled. The sweep over n is a sweep of the
// offered wake rate.
var Timer = register(&scenarios.Scenario{
	Name:    "timer",
	Bench:   "Timer",
	Summary: "n coroutines sleeping random 50 µs–5 ms back to back on a fixed schedule; lateness = wake time − scheduled deadline.",
	Latency: true,
	Doc: fmt.Sprintf("n coroutines sleep back to back for durations uniform in 50 µs–5 ms from a pseudo-random sequence fixed in advance "+
		"(coroutine i draws the same durations on every row and for every n), so n sleepers offer n/%v wakes per second: the sweep over n "+
		"is a sweep of the offered rate. The run is a lead-in window and N windows of %v per coroutine. A window's schedule is fixed from its start: "+
		"each sleep's deadline is the window's start plus the durations so far, and the window holds the sleeps that start before %v "+
		"(so it lasts %v to %v). A coroutine behind its schedule (the deadline already past when it comes to sleep) yields instead, "+
		"and its lateness counts from the scheduled deadline, so a row that cannot keep up shows it in its lateness (no coordinated "+
		"omission); the next window starts afresh from the coroutine's last wake, so a backlog lasts at most a window and the "+
		"lateness does not depend on N. lateness = wake − scheduled deadline: the timer's resolution and the wait for the woken "+
		"coroutine to run. The body's own work per wake is the same on every row: one clock reading (which also dates the "+
		"next sleep) and one store to the next free slot of a preallocated sample buffer. The coroutines start only once all have started, and the timed region starts there, so spawn cost "+
		"stays out of both. p50/p90/p99/p99.9 (an HdrHistogram, 3 significant digits) and the exact max are over every wake of "+
		"the run, the lead-in's included; cpu-ns/wake is the process's CPU time (user + system, all threads) per wake over the run's steady part: from "+
		"the end of the first coroutine's lead-in window until the first coroutine has finished its windows. The lead-in is "+
		"left out of the CPU because all n take their first sleep at once and a backlog builds: counted, it was most of the "+
		"figure at the default bench time (stackful-asm n=10000 398–482 cpu-ns/wake against 305–319 at a bench time of 1s, "+
		"30k of its 92k wakes catch-up yields against 41k of 741k), and the figure depended on N, which the driver picks by "+
		"timing (stackless n=10000: 262–377 cpu-ns/wake at N=1, 185–232 at N=2–5). The end is left out of the CPU "+
		"because fewer coroutines then offer less than the rate. The results "+
		"file's timer-floor line names each row's clock and wait syscall.",
		timerMeanSleep, timerWindow, timerWindow, timerWindow, timerWindow+timerMax),
	NotJudged: "its coroutines wake from idle thousands of times a run, and a wake-up on an idle vCPU counts as runqueue wait: 13–20% of the wall time with nothing else running",
	CoreMarkOff: "it idles between wakes, and an idle-heavy cell reads a shared core far more often than a busy one (2026-12-07: Timer n=300 on stackless " +
		"86 of 110 probe readings over the limit, Switch on stackful-asm 28 of 126, the same run): the mark would leave most of its runs out",
	Claim: "Measurement (docs/design.md §6): sub-ms epoll timeouts round to 1 ms (Go: time.Sleep(50µs) wakes at p50 ≈ 1 ms, golang/go#79872), " +
		"so state the timer floor; our reactor claims nanosecond deadlines (epoll_pwait2).",
	Params: []scenarios.Param{{Key: "n", Full: timerSweep, Quick: []string{"1", "1000", "10000"},
		Doc: "concurrently sleeping coroutines: the offered rate is n/2.525 ms, 396 wakes/s per coroutine",
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes}},
	Metrics: []scenarios.Metric{
		{Unit: "p50-ns/wake", Kind: scenarios.BodyMeasured, Headline: "timer latency p50", HeadlineAt: []string{"n=1000", "n=1"}},
		{Unit: "p90-ns/wake", Kind: scenarios.BodyMeasured},
		{Unit: "p99-ns/wake", Kind: scenarios.BodyMeasured, Headline: "timer latency p99", HeadlineAt: []string{"n=1000", "n=1"}},
		{Unit: "p99.9-ns/wake", Kind: scenarios.BodyMeasured},
		{Unit: "max-ns/wake", Kind: scenarios.BodyMeasured},
		{Unit: "cpu-ns/wake", Kind: scenarios.BodyMeasured},
	},
	Load: &scenarios.LoadSweep{
		Rate: func(params map[string]string) float64 {
			n, _ := strconv.Atoi(params["n"])
			return float64(n) / timerMeanSleep.Seconds()
		},
		What:    "wakes",
		Latency: "p99-ns/wake",
		Bound:   float64(timerKneeBound.Nanoseconds()),
		CPU:     "cpu-ns/wake",
		Why: "2 ms: twice the 1 ms granularity of Go's netpoller timeouts, so the goroutine rows can sustain a rate at all, " +
			"and under the 50 µs–5 ms sleeps themselves, so a lateness above it is a queue of wakes, not a timer's resolution " +
			"(past its knee a row's lateness grows toward the 10 ms window)",
	},
	// No extra repetitions where they cannot bring the p50 to the target
	// CV and would cost the run a minute: n=1 wakes about 10 times per
	// timed run (396 wakes/s), so its percentiles are of a few samples;
	// from n=3000 up most rows are past their knee, and a backlog's
	// lateness is noisy by nature.
	MaxCount:     map[string]int{"n=1": 10, "n=3000": 10, "n=5000": 10, "n=10000": 10},
	Blocking:     timerBlocking,
	StateMachine: timerStateMachine,
	Want:         timerWant,
})

// timerSweep is the full run's n: offered rates from 396 to 3.96M wakes/s,
// a factor of 10 apart below 100, where every row sustains the rate; about
// 3 from 100 to 3000, where the rows' knees are (Go's 1 ms netpoller
// granularity costs the goroutine rows lateness early); and 2 or less
// above, where the CPU a wake costs (0.25 µs or more on every row) caps a
// P under 4M wakes/s: a sweep with 3000 and 10000 only tied every row at
// 3000.
var timerSweep = []string{"1", "10", "100", "300", "1000", "3000", "5000", "10000"}

// Sleep durations: uniform in [timerMin, timerMax].
const (
	timerMin  = 50 * time.Microsecond
	timerMax  = 5 * time.Millisecond
	timerSeed = 0x7131e5eed
)

// timerMeanSleep is the mean of the uniform sleep durations: n sleeping
// coroutines offer n / timerMeanSleep wakes per second.
const timerMeanSleep = (timerMin + timerMax) / 2

// timerWindow is the length of one iteration of a coroutine's schedule:
// fixed, so a run's lateness does not depend on how many iterations the
// driver picks. Twice the longest sleep, so a window holds several sleeps
// (four on average) and a row past its knee shows a lateness well above
// timerKneeBound.
const timerWindow = 10 * time.Millisecond

// timerLeadIn is how many windows every coroutine sleeps before its N
// others: one, a lead-in that the CPU figure does not count (timerSteady
// starts at its end). At the gate all n take their first sleep at once
// and a backlog builds, so the first window is not the offered rate's
// steady state; without a lead-in the CPU figure depended on N, which the
// driver picks by the warm-up's timing: at N=1 the steady part fell back
// to the gate and held that first window.
// Timer n=10000 on stackless, the state-machine body run in one test
// process for 4 rounds alternating N=1, 2, 3, 5 (taskset -c 1, GC off):
// 262–377 cpu-ns/wake at N=1 against 185–232 at N=2, 3 and 5; and
// `benchrun cell` chose N=1 or N=2 by whether its first warm-up run's
// timed time (16–35 ms) passed 20 ms. With the lead-in, 5 rounds
// alternated with the old body in one process: 173–226 at N=1 and
// 191–228 at N=2 (the old body: 234–337 and 160–215).
//
// The lateness keeps every wake, the lead-in's included, as it kept the
// first window's before: leaving the lead-in out would halve the samples
// of a low-n run (the driver now settles on N=1 where it chose N=2, so
// Timer n=1, a headline cell, would take its p50 from about 5 wakes a run
// instead of 10).
const timerLeadIn = 1

// timerRunWindows is how many windows a run of N iterations sleeps: the
// lead-in and the N after it.
func timerRunWindows(n int) int { return timerLeadIn + n }

// timerKneeBound is the p99 lateness within which a row sustains an
// offered wake rate (LoadSweep.Bound; its Why says why 2 ms).
const timerKneeBound = 2 * time.Millisecond

// timerKey names sleep j (counted over the whole run) of coroutine i: the
// durations of coroutine i do not depend on n or N.
func timerKey(i, j int) uint64 { return uint64(i)<<32 | uint64(uint32(j)) }

// timerDuration is the duration of the sleep with key k.
func timerDuration(k uint64) time.Duration {
	return timerMin + time.Duration(splitmix64(k^timerSeed)%uint64(timerMax-timerMin+1))
}

// timerWindowEnd returns the sleep after the last one of the window whose
// first sleep is j, with sleep j's duration dur(j): the window holds the
// sleeps that start (the durations before them add up to) under
// timerWindow. The schedule's one definition: the bodies and timerWant
// all follow it.
func timerWindowEnd(j int, dur func(j int) time.Duration) int {
	for at := time.Duration(0); at < timerWindow; j++ {
		at += dur(j)
	}
	return j
}

// timerDurations returns coroutine i's durations by sleep number.
func timerDurations(i int) func(j int) time.Duration {
	return func(j int) time.Duration { return timerDuration(timerKey(i, j)) }
}

// TimerWindow returns the durations of coroutine i's sleeps in its window
// whose first sleep is j, and the first sleep of its next window: the
// schedule above (timerWindowEnd, timerDurations), for code that sleeps it
// outside a body. benchrun's timer-floor-os line sleeps coroutine 0's
// windows (the schedule of Timer at n=1) on a bare thread, so that the
// floor and the n=1 cells sleep the same durations.
func TimerWindow(i, j int) (durs []time.Duration, next int) {
	dur := timerDurations(i)
	next = timerWindowEnd(j, dur)
	for k := j; k < next; k++ {
		durs = append(durs, dur(k))
	}
	return durs, next
}

// LatencyPercentiles returns the p50 and p99 of latency samples in ns as
// the bodies report theirs (summarizeLatencies: an HdrHistogram, 3
// significant digits, nearest rank), for figures set beside a body's.
func LatencyPercentiles(samples []int64) (p50, p99 int64) {
	lat := summarizeLatencies(samples)
	return int64(lat.P50), int64(lat.P99)
}

// timerSamples is how many sleeps n coroutines make in their windows
// windows (timerRunWindows: the lead-in included): the size of the sample
// buffer. A wake stores its lateness in the slot
// its wake count names (the k-th wake of the run in samples[k-1]), so the
// buffer fills front to back: at n=10000, one slot per coroutine would put
// every wake's store on a different, cold cache line, and the store's miss
// would count in the runtime's CPU per wake.
func timerSamples(n, windows int) (total int) {
	for i := 0; i < n; i++ {
		j, dur := 0, timerDurations(i)
		for range windows {
			j = timerWindowEnd(j, dur)
		}
		total += j
	}
	return total
}

// timerWakeTag is what wake k adds to the checksum. The coroutines of
// goroutine-multi wake in parallel and in any order, so the checksum is a
// sum (order-independent) of a tag per wake: it equals timerWant only if
// every scheduled sleep woke exactly once.
func timerWakeTag(k uint64) uint64 { return splitmix64(k + 1) }

func timerWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.Int("n"); i++ {
		j, dur := 0, timerDurations(i)
		for range timerRunWindows(env.N) {
			end := timerWindowEnd(j, dur)
			for ; j < end; j++ {
				sum += timerWakeTag(timerKey(i, j))
			}
		}
	}
	return sum
}

// splitmix64 is the SplitMix64 finaliser: a cheap, well-mixed hash of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// timerWait returns how long to sleep for a wake at deadline from now:
// the time left, or 0 when the deadline has passed (behind schedule: the
// body yields instead of sleeping, as a timer that has already expired
// would wake the coroutine at the scheduler's next turn).
func timerWait(deadline, now int64) time.Duration { return time.Duration(max(deadline-now, 0)) }

// timerBlocking is the blocking body: once all n coroutines have started,
// each runs its lead-in window and its N windows (timerRunWindows): at a
// window's start it reads the clock, then
// for each sleep of the window sleeps until the window's start plus the
// durations so far (yields if that has passed), reads the clock again, and
// stores the lateness in the slot of a preallocated sample buffer that its
// wake count names (timerSamples; a count is never handed out twice). One
// clock reading per wake: the reading that measures a wake's lateness is
// also the "now" the next sleep's duration is taken from. It is a few ns
// old by then, so the sleep ends that much after its deadline, never
// before.
func timerBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	n, windows := env.Int("n"), timerRunWindows(env.N)
	samples := make([]int64, timerSamples(n, windows))
	var tags atomic.Uint64
	var started, left, wakes atomic.Int64
	var open atomic.Bool
	var steady timerSteady
	left.Store(int64(n))
	done := rt.NewSignal()
	for i := 0; i < n; i++ {
		rt.Go(func() {
			// The start gate: wait, yielding, until the body opens it
			// once every coroutine has started, so that no wake-up
			// queues behind the first start of another coroutine (fresh
			// stacks, page faults): that is spawn cost, which the spawn
			// scenario measures.
			started.Add(1)
			for !open.Load() {
				rt.Yield()
			}
			dur := timerDurations(i)
			var tag uint64
			j := 0
			for w := range windows {
				if w == 1 {
					steady.from(wakes.Load()) // the first window is behind every coroutine that gets here
				}
				now := monoNow()
				anchor, at := now, time.Duration(0)
				for end := timerWindowEnd(j, dur); j < end; j++ {
					at += dur(j)
					deadline := anchor + int64(at)
					if d := timerWait(deadline, now); d > 0 {
						rt.Sleep(d)
					} else {
						rt.Yield()
					}
					now = monoNow()
					samples[wakes.Add(1)-1] = now - deadline
					tag += timerWakeTag(timerKey(i, j))
				}
			}
			steady.end(wakes.Load())
			tags.Add(tag)
			if left.Add(-1) == 0 {
				done.Fire()
			}
		})
	}
	// The spawns and every coroutine's first run are behind us: the timed
	// region holds the sleeps and wakes only. Its twin is timerStarter.
	for started.Load() < int64(n) {
		rt.Yield()
	}
	env.ResetTimer()
	steady.open(processCPU()) // published to the coroutines by open
	open.Store(true)
	done.Wait()
	env.StopTimer()
	return timerOutcome(samples, tags.Load(), steady.cpu, steady.wakes)
}

// timerSteady is the CPU time and the wakes of a run's steady part: from
// the end of the first coroutine's first window (the lead-in, timerLeadIn;
// open's gate reading stays the start only where no window ends before
// the last) until the first coroutine has finished its windows, while all
// n are sleeping. The start is left out: at the gate
// all n take their first sleep at once, with no wake due yet, and the
// backlog that builds makes many of the first window's wakes catch-up
// yields (Timer's Doc has the figures). The tail is left out because
// fewer coroutines then offer less than the rate n stands for, and its
// CPU per wake (a runtime waking for fewer timers at a time) is not the
// CPU a wake costs at that rate.
//
// Invariant: open happens before any coroutine runs a window; from, if
// called, before end (a coroutine ends its first window before its last).
type timerSteady struct {
	start, stop sync.Once
	cpu0        time.Duration // the steady part's start: the gate's opening, then the first window's end
	wakes0      int64
	cpu         time.Duration
	wakes       int64
}

// open records the gate's opening, the steady part's start until from
// moves it.
func (s *timerSteady) open(cpu time.Duration) { s.cpu0 = cpu }

// from moves the steady part's start to now, with wakes so far, when the
// first coroutine finishes its first window; later calls do nothing.
func (s *timerSteady) from(wakes int64) {
	s.start.Do(func() { s.cpu0, s.wakes0 = processCPU(), wakes })
}

// end records the steady part's CPU time and wakes when the first
// coroutine finishes; later calls do nothing.
func (s *timerSteady) end(wakes int64) {
	s.stop.Do(func() { s.cpu, s.wakes = processCPU()-s.cpu0, wakes-s.wakes0 })
}

// timerOutcome checks that no wake came early and summarises the lateness.
// cpu is the process's CPU time (user and system, every thread) over the
// steady part of the timed region (timerSteady), in which cpuWakes wakes
// came: divided, what one wake costs the machine at the offered rate,
// sleeping included, however the row waits (a row that spins to wake on
// time pays for it here).
func timerOutcome(samples []int64, checksum uint64, cpu time.Duration, cpuWakes int64) (scenarios.Outcome, error) {
	for k, late := range samples {
		if late < 0 {
			return scenarios.Outcome{}, fmt.Errorf("timer: sample %d woke %d ns before its deadline: the runtime's sleep returned early", k, -late)
		}
	}
	lat := summarizeLatencies(samples)
	return scenarios.Outcome{
		Ops:      int64(len(samples)),
		Checksum: checksum,
		Values: map[string]float64{"p50-ns/wake": lat.P50, "p90-ns/wake": lat.P90, "p99-ns/wake": lat.P99,
			"p99.9-ns/wake": lat.P999, "max-ns/wake": lat.Max,
			"cpu-ns/wake": float64(cpu.Nanoseconds()) / float64(max(1, cpuWakes))},
	}, nil
}

// timerStateMachine is the state-machine twin: one task per sleeping
// coroutine, sleeping with Context.Sleep on the reactor's timers.
func timerStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	n, windows := env.Int("n"), timerRunWindows(env.N)
	samples := make([]int64, timerSamples(n, windows))
	var tags uint64 // one goroutine runs every task: no atomics needed
	var open bool   // the start gate, opened by timerStarter
	var wakes int64
	var steady timerSteady
	tasks := make([]timerTask, n)
	s := stackless.New()
	defer s.Close()
	for i := range tasks {
		tasks[i] = timerTask{i: i, windows: windows, samples: samples, tags: &tags, open: &open,
			wakes: &wakes, steady: &steady}
		if err := s.Spawn(&tasks[i]); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	// Spawned last, the starter runs after every task's first resume
	// (FIFO run queue): it starts the timed region and opens the gate.
	starter := &timerStarter{env: env, open: &open, steady: &steady}
	if err := s.Spawn(starter); err != nil {
		return scenarios.Outcome{}, err
	}
	env.StopTimer() // the driver started it; timerStarter restarts it
	err := s.Run()
	env.StopTimer()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return timerOutcome(samples, tags, steady.cpu, steady.wakes)
}

// timerTask is one sleeping coroutine of timerBlocking lowered by hand:
// its loop variables (window w, sleep j, the window's end, anchor and
// schedule offset at) are fields.
type timerTask struct {
	stackless.Coro
	gateOpen, asleep bool
	open             *bool
	i, w, windows    int
	j, end           int
	anchor, deadline int64
	now              int64 // the last clock reading: one per wake, as in timerBlocking
	at               time.Duration
	tag              uint64
	samples          []int64 // shared: slot k holds the run's wake k+1 (timerSamples)
	tags             *uint64
	wakes            *int64 // every task's wakes so far
	steady           *timerSteady
}

func (t *timerTask) Resume(c *stackless.Context) stackless.Step {
	if !t.gateOpen {
		// The start gate of timerBlocking: yield until timerStarter,
		// which runs after every task's first resume, opens it.
		if !*t.open {
			return c.Yield()
		}
		t.gateOpen = true
	}
	if t.asleep {
		t.now = monoNow()
		t.samples[*t.wakes] = t.now - t.deadline
		*t.wakes++
		t.tag += timerWakeTag(timerKey(t.i, t.j))
		t.j++
		t.asleep = false
	}
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	if t.j == t.end { // the window is over (or none has started)
		if t.w == t.windows {
			t.steady.end(*t.wakes)
			*t.tags += t.tag
			return c.Done()
		}
		if t.w == 1 {
			t.steady.from(*t.wakes) // the first window is over
		}
		t.w++
		t.now = monoNow()
		t.anchor, t.at = t.now, 0
		t.end = timerWindowEnd(t.j, timerDurations(t.i))
	}
	// Not a dur field holding timerDurations(t.i): that closure is a heap
	// object per task, and loading it missed on every wake (pprof of
	// Timer n=10000 stackless: ~10 ns a wake), a miss the blocking body,
	// whose closure the compiler inlines away, does not have.
	t.at += timerDuration(timerKey(t.i, t.j))
	t.deadline = t.anchor + int64(t.at)
	t.asleep = true
	if d := timerWait(t.deadline, t.now); d > 0 {
		return c.Sleep(d)
	}
	return c.Yield()
}

// timerStarter is the state-machine twin of timerBlocking's wait for
// every coroutine to start: spawned after every timerTask, it runs once
// all of them have been resumed once and yielded at the gate, then starts
// the timed region and opens the gate.
type timerStarter struct {
	stackless.Coro
	env    *scenarios.Env
	open   *bool
	steady *timerSteady
}

func (t *timerStarter) Resume(c *stackless.Context) stackless.Step {
	t.env.ResetTimer()
	t.steady.open(processCPU())
	*t.open = true
	return c.Done()
}

// processCPU is the CPU time (user + system) the process has used so far,
// every thread counted (getrusage RUSAGE_SELF, microsecond resolution).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("bodies: getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// monoBase anchors monoNow. time.Since reads the runtime's monotonic clock
// (CLOCK_MONOTONIC through the vDSO, ~20 ns): the clock the reactor's
// deadlines and Go's timers use too.
var monoBase = time.Now()

// monoNow returns monotonic nanoseconds since monoBase.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// latencySummary is the distribution of one run's latency samples, in ns.
type latencySummary struct{ P50, P90, P99, P999, Max float64 }

// Latency histogram bounds: 1 ns to one hour, 3 significant digits (a
// recorded value is within 0.1% of the sample; below 2048 ns exact).
const (
	latencyLowest  = 1
	latencyHighest = int64(time.Hour)
	latencyDigits  = 3
)

// summarizeLatencies returns percentiles of samples from an HdrHistogram
// (github.com/HdrHistogram/hdrhistogram-go), as wrk2 and HdrHistogram's own
// tools report them: the value at or below which the quantile's share of
// the samples lie (nearest rank, within the histogram's 3 digits), and the
// exact maximum. Unlike a sort, the histogram's size does not grow with the
// sample count, and its figures are what other latency tools print. A
// sample above an hour (no run takes that long) is recorded as an hour.
// It runs after the timed region.
func summarizeLatencies(samples []int64) latencySummary {
	if len(samples) == 0 {
		return latencySummary{}
	}
	h := hdrhistogram.New(latencyLowest, latencyHighest, latencyDigits)
	var maxV int64
	for _, v := range samples {
		maxV = max(maxV, v)
		// RecordValue fails only outside [0, latencyHighest]; the
		// bodies never pass a negative latency (timerOutcome refuses one).
		if err := h.RecordValue(min(v, latencyHighest)); err != nil {
			panic(fmt.Sprintf("bodies: latency sample %d ns: %v", v, err))
		}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) }
	return latencySummary{P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: float64(maxV)}
}
