package stackful

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMicrotaskRefcount: every queued entry holds a reference; cancelled
// entries are skipped; the destructor runs when the last reference goes.
func TestMicrotaskRefcount(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		runs, dtors := 0, 0
		var refsQueued, refsAfter int32
		var skipped *Microtask
		err := s.Run(func() {
			m := NewMicrotask(func() error { runs++; return nil }, func() { dtors++ })
			EnqueueMicrotask(m)
			EnqueueMicrotask(m)
			refsQueued = m.Refs()
			Yield() // the batch runs m twice, dropping the queue's references
			refsAfter = m.Refs()
			m.Release()

			skipped = NewMicrotask(func() error { runs += 100; return nil }, func() { dtors++ })
			EnqueueMicrotask(skipped)
			skipped.Cancel()
			skipped.Release()
			Yield()
		})
		if err != nil {
			t.Fatal(err)
		}
		if refsQueued != 3 || refsAfter != 1 || runs != 2 || dtors != 2 || skipped.Refs() != 0 {
			t.Errorf("refs queued %d (want 3), after the batch %d (want 1); runs %d (want 2); destructors %d (want 2); cancelled refs %d",
				refsQueued, refsAfter, runs, dtors, skipped.Refs())
		}
		if st := s.Stats(); st.MicrotasksRun != 2 {
			t.Errorf("Stats.MicrotasksRun = %d, want 2", st.MicrotasksRun)
		}
	})
}

// TestAwaitCancelEvent: a cancellation event ends a wait with ErrCancelled;
// an already-fired one takes the fast path.
func TestAwaitCancelEvent(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var slow, fast error
		var trig *Event
		err := s.Run(func() {
			ev, cancel := NewEvent(), NewEvent()
			Go(func() { cancel.Resolve(nil) })
			_, slow = AwaitWith(ev, cancel, time.Hour)
			trig = Current().Waker().Triggered()
			if trig != cancel {
				trig = nil
			}
			_, fast = AwaitWith(ev, cancel, -1)
		})
		if err != nil || !errors.Is(slow, ErrCancelled) || !errors.Is(fast, ErrCancelled) || trig == nil {
			t.Fatalf("Run = %v; waits = %v, %v (want ErrCancelled twice); triggered by the cancel event: %v", err, slow, fast, trig != nil)
		}
	})
}

// TestReactorTickedWhileBusy: coroutines that keep yielding never let the
// scheduler idle, yet a sleeper wakes: the reactor is ticked (non-blocking,
// throttled) at suspend points.
func TestReactorTickedWhileBusy(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		const limit = 2_000_000 // yields before giving up: seconds, vs the 1ms sleep
		woke, yields := false, 0
		err := s.Run(func() {
			Go(func() {
				Sleep(time.Millisecond)
				woke = true
			})
			Go(func() {
				for !woke && yields < limit {
					yields++
					Yield()
				}
			})
			for !woke && yields < limit {
				Yield()
			}
		})
		if err != nil || !woke || yields >= limit {
			t.Fatalf("Run = %v; the sleeper woke: %v; the busy coroutines yielded %d times (gave up at %d)", err, woke, yields, limit)
		}
		if st := s.Stats(); st.ReactorTicks == 0 {
			t.Error("no reactor tick counted")
		}
	})
}

// TestUnsupportedError: the error New returns when fibers cannot run is
// both ErrNotSupported and worded "not supported: <why>".
func TestUnsupportedError(t *testing.T) {
	cause := errors.New("not supported: fibers need go1.26 on linux/amd64 or arm64")
	err := error(&unsupportedError{cause})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, cause) || err.Error() != cause.Error() {
		t.Errorf("unsupportedError: Is(ErrNotSupported) %v, Is(cause) %v, text %q", errors.Is(err, ErrNotSupported), errors.Is(err, cause), err)
	}
}

// TestTriggerFromGoroutine: a goroutine wakes a waiting coroutine through a
// Trigger; the scheduler blocks in the reactor meanwhile (no deadlock).
func TestTriggerFromGoroutine(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var first, second, timeout error
		err := s.Run(func() {
			tr := NewTrigger()
			defer tr.Close()
			go func() {
				time.Sleep(time.Millisecond)
				tr.Fire()
			}()
			first = tr.Wait(-1)
			tr.Fire() // remembered while nobody waits
			second = tr.Wait(-1)
			timeout = tr.Wait(time.Millisecond)
		})
		if err != nil || first != nil || second != nil || !errors.Is(timeout, ErrTimeout) {
			t.Fatalf("Run = %v; waits: %v, %v, %v (want nil, nil, ErrTimeout)", err, first, second, timeout)
		}
	})
}

// TestEventSubscribers: subscribers run in order; one that resets the event
// and subscribes anew during a firing is called at the next firing, not this
// one; Subscribe on a fired event runs at once.
func TestEventSubscribers(t *testing.T) {
	ev := NewEvent()
	var log []string
	rec := func(name string) func(any, error) {
		return func(v any, _ error) { log = append(log, name+"="+fmt.Sprint(v)) }
	}
	ev.Subscribe(func(v any, err error) {
		rec("a")(v, err)
		ev.Reset()
		ev.Subscribe(rec("c"))
	})
	ev.Subscribe(rec("b"))
	if !ev.Resolve(1) {
		t.Fatal("first Resolve ignored")
	}
	if ev.Fired() {
		t.Fatal("event still fired after a subscriber reset it")
	}
	ev.Resolve(2)
	if ev.Resolve(3) {
		t.Error("Resolve on a fired event was not ignored")
	}
	ev.Subscribe(rec("d"))
	if got, want := strings.Join(log, " "), "a=1 b=1 c=2 d=2"; got != want {
		t.Errorf("subscribers ran %q, want %q", got, want)
	}
}

// TestGoWithNoScheduler: Go and GoWith called while no Scheduler runs
// panic naming the call and the rule (spawn's check, scheduler's twin).
func TestGoWithNoScheduler(t *testing.T) {
	for name, call := range map[string]func(){
		"Go":     func() { Go(func() {}) },
		"GoWith": func() { GoWith("x", High, func() {}) },
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			call()
			return ""
		}()
		if !strings.Contains(msg, name+" called with no Scheduler running") {
			t.Errorf("%s with no Scheduler running panicked with %q, want a message naming the call and the rule", name, msg)
		}
	}
}
