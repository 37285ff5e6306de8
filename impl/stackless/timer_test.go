package stackless

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// sleeper sleeps d, then appends its name to *out.
type sleeper struct {
	Coro
	state int
	d     time.Duration
	name  string
	out   *[]string
}

func (t *sleeper) Resume(c *Context) Step {
	switch t.state {
	case 0:
		t.state = 1
		return c.Sleep(t.d)
	default:
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
		*t.out = append(*t.out, t.name)
		return c.Done()
	}
}

func TestSleepOrder(t *testing.T) {
	s := New()
	defer s.Close()
	var out []string
	for _, x := range []struct {
		name string
		d    time.Duration
	}{{"c", 3 * time.Millisecond}, {"a", time.Millisecond}, {"b", 2 * time.Millisecond}, {"a2", time.Millisecond}} {
		if err := s.Spawn(&sleeper{d: x.d, name: x.name, out: &out}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < 3*time.Millisecond {
		t.Fatalf("Run returned after %v, before the longest sleep (3ms)", got)
	}
	if want := "a a2 b c"; join(out) != want {
		t.Fatalf("wake order %q, want %q", join(out), want)
	}
	if n := s.r.loop.Active(); n != 0 {
		t.Fatalf("timer heap not empty after run: the loop has %d active events", n)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

// awaiter awaits ev with a timeout and records the outcome.
type awaiter struct {
	Coro
	state int
	ev    *Event
	d     time.Duration
	err   error
	val   any
}

func (t *awaiter) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.AwaitTimeout(t.ev, t.d)
	}
	t.err, t.val = c.Err(), c.Result()
	return c.Done()
}

func TestAwaitTimeout(t *testing.T) {
	s := New()
	defer s.Close()
	a := &awaiter{ev: new(Event), d: time.Millisecond}
	_ = s.Spawn(a)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(a.err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", a.err)
	}
	if a.ev.Waiters() != 0 {
		t.Fatalf("event still has %d waiters after the timeout", a.ev.Waiters())
	}
}

// untilTask sleeps until an absolute deadline and records when it woke.
type untilTask struct {
	Coro
	state    int
	deadline int64
	woke     int64
}

func (t *untilTask) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		t.deadline = c.Now() + int64(500*time.Microsecond)
		return c.SleepUntil(t.deadline)
	}
	t.woke = c.Now()
	return c.Done()
}

func TestSleepUntil(t *testing.T) {
	s := New()
	defer s.Close()
	u := &untilTask{}
	_ = s.Spawn(u)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if u.woke < u.deadline {
		t.Fatalf("woke at %d, before the deadline %d", u.woke, u.deadline)
	}
}

// orderedSleeper sleeps d and appends itself to *woke; a cancelled one
// records that instead.
type orderedSleeper struct {
	Coro
	state     int
	d         time.Duration
	deadline  int64
	cancelled bool
	woke      *[]*orderedSleeper
}

func (t *orderedSleeper) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.Sleep(t.d)
	}
	if errors.Is(c.Err(), ErrCancelled) {
		t.cancelled = true
		return c.Done()
	}
	t.deadline = t.waker.timer.Deadline() // the node keeps its last deadline
	*t.woke = append(*t.woke, t)
	return c.Done()
}

// TestTimerHeapOrder: many sleepers with random durations, a third of them
// cancelled while in the heap (removal from the middle): the rest wake in
// deadline order and the heap ends empty.
func TestTimerHeapOrder(t *testing.T) {
	const n = 3000
	rng := rand.New(rand.NewPCG(1, 2))
	s := New()
	defer s.Close()
	var woke []*orderedSleeper
	all := make([]*orderedSleeper, n)
	for i := range all {
		// 50 ms base: no timer may fire before the canceller has run, even
		// under the race detector.
		all[i] = &orderedSleeper{d: 50*time.Millisecond + time.Duration(rng.IntN(2000))*time.Microsecond, woke: &woke}
		_ = s.Spawn(all[i])
	}
	_ = s.Spawn(&funcTask{f: func(c *Context) Step {
		for i := 0; i < n; i += 3 {
			_ = s.Cancel(all[i])
		}
		return c.Done()
	}})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if len(woke) != n-(n+2)/3 {
		t.Fatalf("%d sleepers woke, want %d", len(woke), n-(n+2)/3)
	}
	for i := 1; i < len(woke); i++ {
		if woke[i].deadline < woke[i-1].deadline {
			t.Fatalf("wake %d has deadline %d before its predecessor's %d", i, woke[i].deadline, woke[i-1].deadline)
		}
	}
	for i := 0; i < n; i += 3 {
		if !all[i].cancelled {
			t.Fatalf("sleeper %d was cancelled but did not see ErrCancelled", i)
		}
	}
	if n := s.r.loop.Active(); n != 0 {
		t.Fatalf("the loop has %d active events (timers) after the run", n)
	}
}
