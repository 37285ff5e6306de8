package stackful

import (
	"strings"
	"testing"
	"time"
)

// The tests of Await's and Yield's inline pick (pickNext's common case
// spelled out in both): each condition under which it must leave the pick
// to pickNext has a test that fails if the inline pick ignored it (for
// Yield and the reactor, TestReactorTickedWhileBusy).

// TestAwaitRunsMicrotasksFirst: a microtask queued before a wait runs
// before the coroutine the wait switches to.
func TestAwaitRunsMicrotasksFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var log []string
		err := s.Run(func() {
			ev := NewEvent()
			Go(func() {
				log = append(log, "other")
				ev.Resolve(nil)
			})
			QueueMicrotask(func() error { log = append(log, "microtask"); return nil })
			Await(ev)
		})
		if got, want := strings.Join(log, " "), "microtask other"; err != nil || got != want {
			t.Fatalf("Run = %v; ran %q, want %q", err, got, want)
		}
	})
}

// TestReactorTickedDuringHandoffs: two coroutines that hand off through
// events never let the scheduler idle, yet a sleeper wakes: Await's pick
// ticks the reactor while it has a live handle.
func TestReactorTickedDuringHandoffs(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		const limit = 2_000_000 // hand-offs before giving up: seconds, vs the 1ms sleep
		woke, handoffs := false, 0
		err := s.Run(func() {
			ping, pong := NewEvent(), NewEvent()
			Go(func() {
				Sleep(time.Millisecond)
				woke = true
			})
			Yield() // the sleeper's timer is live
			Go(func() {
				for {
					Await(ping)
					ping.Reset()
					pong.Resolve(nil)
					if woke || handoffs >= limit {
						return
					}
				}
			})
			for !woke && handoffs < limit {
				handoffs++
				ping.Resolve(nil)
				Await(pong)
				pong.Reset()
			}
			ping.Resolve(nil)
		})
		if err != nil || !woke || handoffs >= limit {
			t.Fatalf("Run = %v; the sleeper woke: %v; %d hand-offs (gave up at %d)", err, woke, handoffs, limit)
		}
	})
}

// TestAwaitDropsCancelledUnstartedHead: a coroutine cancelled before it
// started, at the head of the queue when a wait picks, is dropped without
// running; the wait switches to the next one.
func TestAwaitDropsCancelledUnstartedHead(t *testing.T) {
	checkCancelledHeadDropped(t, func(ran *bool) error {
		ev := NewEvent()
		Go(func() { *ran = true }).Cancel()
		Go(func() { ev.Resolve(nil) })
		_, err := Await(ev)
		return err
	})
}

// checkCancelledHeadDropped runs body as the main coroutine on every
// backend: body spawns a coroutine that sets *ran, cancels it before it
// starts and returns what its own wait returned. It fails the test unless
// the run and the wait succeed and the cancelled coroutine never ran.
func checkCancelledHeadDropped(t *testing.T, body func(ran *bool) error) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		ran := false
		var waited error
		err := s.Run(func() { waited = body(&ran) })
		if err != nil || ran || waited != nil {
			t.Fatalf("Run = %v; the cancelled coroutine ran: %v; the wait returned %v", err, ran, waited)
		}
	})
}

// TestYieldRunsMicrotasksFirst: a microtask queued before a Yield runs
// before the coroutine the Yield switches to.
func TestYieldRunsMicrotasksFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var log []string
		err := s.Run(func() {
			Go(func() { log = append(log, "other") })
			QueueMicrotask(func() error { log = append(log, "microtask"); return nil })
			Yield()
		})
		if got, want := strings.Join(log, " "), "microtask other"; err != nil || got != want {
			t.Fatalf("Run = %v; ran %q, want %q", err, got, want)
		}
	})
}

// TestYieldDropsCancelledUnstartedHead: a coroutine cancelled before it
// started, at the head of the queue when a Yield picks, is dropped without
// running.
func TestYieldDropsCancelledUnstartedHead(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		ran, other := false, false
		err := s.Run(func() {
			Go(func() { ran = true }).Cancel()
			Go(func() { other = true })
			Yield()
		})
		if err != nil || ran || !other {
			t.Fatalf("Run = %v; the cancelled coroutine ran: %v; the next one ran: %v", err, ran, other)
		}
	})
}

// TestFinishDropsCancelledUnstartedHead: a coroutine cancelled before it
// started, at the head of the queue when a finishing coroutine picks its
// successor (Scheduler.contextMain's inline pick), is dropped without
// running, not started on the finished one's context. It is spawned into
// an empty queue, so it sits in the queue's slot (coQueue.first).
func TestFinishDropsCancelledUnstartedHead(t *testing.T) {
	checkCancelledHeadDropped(t, func(ran *bool) error {
		ev := NewEvent()
		Go(func() {
			Go(func() { *ran = true }).Cancel()
			ev.Resolve(nil) // main is queued behind the cancelled one
		})
		_, err := Await(ev)
		return err
	})
}
