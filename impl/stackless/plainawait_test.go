package stackless

import (
	"errors"
	"testing"
	"time"
)

// Await records only its event (see Context.Await): the start drops the
// previous wait's extras and every end of the wait stores the whole
// outcome. These tests pin what that must not change: a plain Await after
// a wait with extras, after a general wait, after a sleep, and a
// cancellation delivered at a plain Await, all behave as if prepare had run.

// TestPlainAwaitAfterExtras: a stale cancellation event, timeout or
// general subscription of the previous wait must not end a plain Await.
func TestPlainAwaitAfterExtras(t *testing.T) {
	for _, prev := range []string{"AwaitWith", "Sleep", "ResumeWhen"} {
		t.Run(prev, func(t *testing.T) {
			s := New()
			defer s.Close()
			var first, cancel, second, other Event
			first.Resolve("first")
			var got []string
			step := 0
			task := &funcTask{f: func(c *Context) Step {
				step++
				switch step {
				case 1:
					switch prev {
					case "AwaitWith":
						return c.AwaitWith(&first, &cancel, time.Millisecond)
					case "Sleep":
						return c.Sleep(time.Microsecond)
					default:
						c.ResumeWhen(&other, CancelCallback)
						// Not followed by Suspend: the plain Await below
						// must drop the subscription.
						return c.Await(&first)
					}
				case 2:
					got = append(got, "woke1")
					return c.Await(&second)
				case 3:
					if c.Err() != nil || c.Triggered() != &second || c.Result() != "second" {
						t.Errorf("second wait: err %v, triggered %p (want %p), result %v", c.Err(), c.Triggered(), &second, c.Result())
					}
					got = append(got, "woke2")
					return c.Done()
				}
				return c.Fail(errors.New("resumed too often"))
			}}
			fired := false
			firer := &funcTask{f: func(c *Context) Step {
				// Runs once the task waits on second: the previous wait's
				// cancellation event and a general subscription fire,
				// and the stale timeout expires while it sleeps.
				if fired {
					return c.Done()
				}
				fired = true
				cancel.Resolve(nil)
				other.Resolve(nil)
				return c.Sleep(3 * time.Millisecond)
			}}
			fire2 := &funcTask{f: func(c *Context) Step {
				second.Resolve("second")
				return c.Done()
			}}
			if err := s.Spawn(task); err != nil {
				t.Fatal(err)
			}
			phase := 0
			driver := &funcTask{f: func(c *Context) Step {
				phase++
				switch phase {
				case 1:
					if err := s.Spawn(firer); err != nil {
						return c.Fail(err)
					}
					return c.Sleep(5 * time.Millisecond)
				case 2:
					if task.waker.status != Waiting || len(got) != 1 {
						return c.Fail(errors.New("the stale events ended the plain Await"))
					}
					if err := s.Spawn(fire2); err != nil {
						return c.Fail(err)
					}
				}
				return c.Done()
			}}
			if err := s.Spawn(driver); err != nil {
				t.Fatal(err)
			}
			if err := s.Run(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("wake-ups %v, want [woke1 woke2]", got)
			}
		})
	}
}

// TestPlainAwaitCancelledOutcome: a cancellation delivered at a plain
// Await clears the previous wait's Result and Triggered.
func TestPlainAwaitCancelledOutcome(t *testing.T) {
	s := New()
	defer s.Close()
	var ev, never Event
	ev.Resolve("value")
	step := 0
	var task *funcTask
	task = &funcTask{f: func(c *Context) Step {
		step++
		switch step {
		case 1:
			return c.Await(&ev) // fast path: Result "value", Triggered ev
		case 2:
			if c.Result() != "value" || c.Triggered() != &ev {
				return c.Fail(errors.New("fast path lost its outcome"))
			}
			if err := s.Cancel(task); err != nil {
				return c.Fail(err)
			}
			return c.Await(&never) // ends at once with ErrCancelled
		case 3:
			if !errors.Is(c.Err(), ErrCancelled) || c.Result() != nil || c.Triggered() != nil {
				return c.Fail(errors.New("cancelled plain Await kept the previous outcome"))
			}
			return c.Done()
		}
		return c.Fail(errors.New("resumed too often"))
	}}
	if err := s.Spawn(task); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if step != 3 {
		t.Fatalf("task ran %d steps, want 3", step)
	}
}

// TestWaitingTaskDropsOutcome: a task waiting on a plain Await does not
// keep the previous wait's result or error alive.
func TestWaitingTaskDropsOutcome(t *testing.T) {
	s := New()
	defer s.Close()
	var ready, later Event
	ready.Resolve(&struct{ big [1 << 10]byte }{})
	step := 0
	task := &funcTask{f: func(c *Context) Step {
		step++
		if step == 1 {
			return c.Await(&ready)
		}
		if step == 2 {
			return c.Await(&later)
		}
		return c.Done()
	}}
	checker := &funcTask{f: func(c *Context) Step {
		if task.waker.status != Waiting || task.waker.result != nil || task.waker.err != nil {
			return c.Fail(errors.New("waiting task still holds the previous outcome"))
		}
		later.Resolve(nil)
		return c.Done()
	}}
	if err := s.Spawn(task); err != nil {
		t.Fatal(err)
	}
	if err := s.Spawn(checker); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}
