package stackless

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/corobench/corobench/reactor"
)

// steppingClock is an injected reactor clock that moves 1 µs per reading
// (so that blocking waits end) and whatever the tasks add to it (their
// "work", which makes the loop's cached time stale).
type steppingClock struct{ t int64 }

func (c *steppingClock) read() int64 {
	c.t += int64(time.Microsecond)
	return c.t
}

// baseTask works (moves the clock), notes the true time, sleeps d, and on
// waking checks the true time is at least the noted time + d.
type baseTask struct {
	Coro
	clock  *steppingClock
	rng    *rand.Rand
	rounds int
	called int64
	d      time.Duration
	early  *int
	wakes  *int
}

func (t *baseTask) Resume(c *Context) Step {
	if t.called != 0 {
		*t.wakes++
		if t.clock.t < t.called+int64(t.d) {
			*t.early++
		}
	}
	if t.rounds == 0 {
		return c.Done()
	}
	t.rounds--
	t.clock.t += t.rng.Int64N(int64(20 * time.Microsecond)) // work: the cached time goes stale
	t.called = t.clock.t
	t.d = time.Duration(1 + t.rng.Int64N(int64(100*time.Microsecond)))
	return c.Sleep(t.d)
}

// TestSleepNeverEndsBeforeItsDuration: relative sleeps take their base from
// a clock reading after the call (addTimer, reactor's StartFromNextReading,
// shared by up to sleepsPerReading sleeps), so however stale the loop's
// cached time and however many sleeps share a reading, none ends less
// than its duration after its Sleep call, on the clock the loop reads.
func TestSleepNeverEndsBeforeItsDuration(t *testing.T) {
	clock := &steppingClock{t: 1}
	l, err := reactor.NewWithOptions(reactor.Options{Clock: clock.read})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewWithOptions(Options{Loop: l})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(8, 9))
	early, wakes := 0, 0
	const tasks, rounds = 50, 40
	for range tasks {
		if err := s.Spawn(&baseTask{clock: clock, rng: rng, rounds: rounds, early: &early, wakes: &wakes}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if wakes != tasks*rounds || early != 0 {
		t.Fatalf("%d wakes (want %d), %d of them before the sleep's duration had passed", wakes, tasks*rounds, early)
	}
}
