package stackless

import (
	"strconv"
	"testing"
	"time"
)

// loopSleeper sleeps d, left times, then finishes; every wake is counted.
type loopSleeper struct {
	Coro
	left  int
	d     time.Duration
	wakes *int
}

func (t *loopSleeper) Resume(c *Context) Step {
	if c.Err() != nil {
		return c.Fail(c.Err())
	}
	if t.left == 0 {
		return c.Done()
	}
	t.left--
	*t.wakes++
	return c.Sleep(t.d)
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
			m := startMeter(b)
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
			m.stop(wakes, "wake")
		})
	}
}
