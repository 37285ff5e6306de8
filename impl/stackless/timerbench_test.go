package stackless

import (
	"strconv"
	"testing"
	"time"
)

// loopSleeper sleeps d, left times, then finishes; every wake (a Resume
// after a sleep) is counted.
type loopSleeper struct {
	Coro
	left  int
	d     time.Duration
	slept bool
	wakes *int
}

func (t *loopSleeper) Resume(c *Context) Step {
	if c.Err() != nil {
		return c.Fail(c.Err())
	}
	if t.slept {
		*t.wakes++
	}
	if t.left == 0 {
		return c.Done()
	}
	t.left--
	t.slept = true
	return c.Sleep(t.d)
}

// meterStarter starts the benchmark's meter when it runs: spawned behind
// the sleepers, it runs once each has started and made its first sleep,
// so the timed region holds sleeps and wakes only, not the tasks' first
// Resume (the shape of impl/stackful's BenchmarkTimerWake, its twin).
type meterStarter struct {
	Coro
	b *testing.B
	m *meter
}

func (t *meterStarter) Resume(c *Context) Step {
	t.m = startMeter(t.b)
	return c.Done()
}

// runSleepers runs s, whose sleepers are spawned, with a meterStarter
// behind them, checks that they counted want wakes and reports them.
func runSleepers(b *testing.B, s *Scheduler, wakes *int, want int) {
	starter := &meterStarter{b: b}
	if err := s.Spawn(starter); err != nil {
		b.Fatal(err)
	}
	if err := s.Run(); err != nil {
		b.Fatal(err)
	}
	if *wakes != want {
		b.Fatalf("%d wakes counted, want %d", *wakes, want)
	}
	starter.m.stop(*wakes, "wake")
}

// BenchmarkTimerWake: n tasks each sleep 1 µs again and again; one op is one
// wake (timer start, firing in a reactor tick, resume). With n = 10000 the
// deadlines are due by the time the round reaches them, so the figures are
// the CPU a sleep-and-wake costs with n sleepers (the twin of
// impl/stackful's BenchmarkTimerWake).
func BenchmarkTimerWake(b *testing.B) {
	for _, n := range []int{1, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s := New()
			defer s.Close()
			tasks := make([]loopSleeper, n)
			wakes := 0
			per := (b.N + n - 1) / n
			for i := range tasks {
				tasks[i] = loopSleeper{left: per, d: time.Microsecond, wakes: &wakes}
				if err := s.Spawn(&tasks[i]); err != nil {
					b.Fatal(err)
				}
			}
			runSleepers(b, s, &wakes, n*per)
		})
	}
}

// randSleeper sleeps durations from a shared table, left times, then
// finishes: the Timer scenario's random sleeps without its body's clock
// reads and sample writes.
type randSleeper struct {
	Coro
	left   int
	k      int
	delays []time.Duration
	slept  bool
	wakes  *int
	_      [128]byte // the rest of a Timer-scenario task: records do not share cache lines
}

func (t *randSleeper) Resume(c *Context) Step {
	if c.Err() != nil {
		return c.Fail(c.Err())
	}
	if t.slept {
		*t.wakes++
	}
	if t.left == 0 {
		return c.Done()
	}
	t.left--
	t.slept = true
	t.k = (t.k + 7919) & (len(t.delays) - 1)
	return c.Sleep(t.delays[t.k])
}

// BenchmarkTimerWakeRandom is BenchmarkTimerWake with the n tasks sleeping
// random 1–100 µs: far more wakes than a core can serve, so the scheduler
// never blocks and every figure is the CPU of the wake path itself, but
// the timer heap holds n random deadlines, as in the Timer scenario past
// its knee (BenchmarkTimerWake's equal sleeps push every new deadline at
// the heap's bottom).
func BenchmarkTimerWakeRandom(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s := New()
			defer s.Close()
			delays := make([]time.Duration, 1<<12)
			for i := range delays {
				delays[i] = time.Microsecond + time.Duration(uint64(i)*0x9e3779b97f4a7c15%uint64(99*time.Microsecond))
			}
			tasks := make([]randSleeper, n)
			wakes := 0
			per := (b.N + n - 1) / n
			for i := range tasks {
				tasks[i] = randSleeper{left: per, k: i, delays: delays, wakes: &wakes}
				if err := s.Spawn(&tasks[i]); err != nil {
					b.Fatal(err)
				}
			}
			runSleepers(b, s, &wakes, n*per)
		})
	}
}
