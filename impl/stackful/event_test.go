package stackful

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The tests of an event's inline subscriber (Event.one): the only
// subscriber is kept in the event, a second one moves it into the list
// ahead of itself, and every way a wait ends takes the inline subscriber
// off the event. Each test also checks the event's fields, so that a
// subscription left behind (which a later firing would wake by mistake)
// fails here and not only as a misbehaving wait somewhere else.

// subscribers returns e's subscriptions in the order a firing runs them,
// and whether the representation holds its invariant (one set implies an
// empty list).
func subscribers(e *Event) ([]*subscription, bool) {
	var subs []*subscription
	if e.one != nil {
		subs = append(subs, e.one)
	}
	for s := e.head; s != nil; s = s.next {
		subs = append(subs, s)
	}
	return subs, e.one == nil || (e.head == nil && e.tail == nil)
}

// TestEventInlineSubscriber: the first subscriber is inline, the second
// moves it to the list's head (it still runs first), and one subscribed
// while the inline one runs waits for the next firing.
func TestEventInlineSubscriber(t *testing.T) {
	ev := NewEvent()
	var log []string
	rec := func(name string) func(any, error) {
		return func(v any, _ error) { log = append(log, name+"="+fmt.Sprint(v)) }
	}
	ev.Subscribe(rec("a"))
	if subs, ok := subscribers(ev); ev.one == nil || len(subs) != 1 || !ok {
		t.Fatalf("one subscriber: inline %v, %d subscribers, invariant %v", ev.one != nil, len(subs), ok)
	}
	first := ev.one
	ev.Subscribe(rec("b"))
	if subs, ok := subscribers(ev); ev.one != nil || len(subs) != 2 || subs[0] != first || !ok {
		t.Fatalf("two subscribers: inline %v, %d subscribers, first kept first %v, invariant %v",
			ev.one != nil, len(subs), len(subs) > 0 && subs[0] == first, ok)
	}
	ev.Resolve(1)
	if subs, _ := subscribers(ev); len(subs) != 0 {
		t.Fatalf("%d subscribers left after the firing", len(subs))
	}
	// An inline subscriber that resets the event and subscribes again:
	// the new subscription (inline now) must wait for the next firing.
	ev.Reset()
	ev.Subscribe(func(v any, err error) {
		rec("c")(v, err)
		ev.Reset()
		ev.Subscribe(rec("d"))
	})
	ev.Resolve(2)
	if subs, ok := subscribers(ev); ev.one == nil || len(subs) != 1 || !ok {
		t.Fatalf("resubscribed during the firing: inline %v, %d subscribers, invariant %v", ev.one != nil, len(subs), ok)
	}
	ev.Resolve(3)
	// Two subscribed during the firing of an inline one: the second moves
	// the first to the list, with the new generation; neither runs yet.
	ev.Reset()
	ev.Subscribe(func(v any, err error) {
		rec("e")(v, err)
		ev.Reset()
		ev.Subscribe(rec("f"))
		ev.Subscribe(rec("g"))
	})
	ev.Resolve(4)
	ev.Resolve(5)
	if got, want := strings.Join(log, " "), "a=1 b=1 c=2 d=3 e=4 f=5 g=5"; got != want {
		t.Errorf("subscribers ran %q, want %q", got, want)
	}
}

// TestEventSecondWaiter: a coroutine waits inline, a second one arrives
// (the first moves to the list), a subscriber comes third; one firing
// wakes them in that order. When the first leaves by cancellation, the
// second is the list's only entry and is still woken; once the list is
// empty, the next waiter is inline again.
func TestEventSecondWaiter(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var log []string
		var fail []string
		err := s.Run(func() {
			ev := NewEvent()
			waiter := func(name string, cancel *Event) Coroutine {
				return GoWith(name, Normal, func() {
					v, err := AwaitWith(ev, cancel, -1)
					log = append(log, fmt.Sprintf("%s=%v/%v", name, v, err != nil))
				})
			}
			a := waiter("a", nil)
			Yield() // a waits
			if ev.one != &a.r.waker.subs[0] {
				fail = append(fail, "the first waiter is not inline")
			}
			waiter("b", nil)
			Yield() // b waits
			if subs, ok := subscribers(ev); ev.one != nil || len(subs) != 2 || subs[0] != &a.r.waker.subs[0] || !ok {
				fail = append(fail, "after the second waiter: the first is not first in the list")
			}
			ev.Subscribe(func(any, error) {
				// Runs after both waiters were woken, in subscription order.
				if a.WakerStatus() != WakerQueued {
					fail = append(fail, "the third subscriber ran before the first waiter was woken")
				}
			})
			ev.Resolve(1)
			Yield() // both run
			ev.Reset()

			// The first of two leaves through its cancel event.
			cancelC := NewEvent()
			waiter("c", cancelC)
			Yield()
			waiter("d", nil)
			Yield()
			cancelC.Resolve(nil)
			Yield() // c runs, cancelled
			if subs, ok := subscribers(ev); len(subs) != 1 || ev.one != nil || !ok {
				fail = append(fail, fmt.Sprintf("after c left: %d subscribers (want d in the list)", len(subs)))
			}
			ev.Resolve(2)
			Yield() // d runs
			ev.Reset()
			e := waiter("e", nil)
			Yield()
			if ev.one != &e.r.waker.subs[0] || ev.head != nil {
				fail = append(fail, "a waiter on an emptied list is not inline")
			}
			ev.Resolve(3)
			Yield()
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(log, " "), "a=1/false b=1/false c=<nil>/true d=2/false e=3/false"; got != want {
			t.Errorf("waiters ended %q, want %q", got, want)
		}
		for _, f := range fail {
			t.Error(f)
		}
	})
}

// TestInlineWaiterLeaves: every way a wait on an inline subscription ends
// other than its event (its cancel event, Cancel, the timeout, Destroy)
// takes the subscription off the event. The coroutine then waits on
// another event (the same waker subscription, now linked elsewhere): a
// firing of the first event must not reach it.
func TestInlineWaiterLeaves(t *testing.T) {
	ends := []struct {
		name string
		wait func(ev, cancel *Event) error
		end  func(co Coroutine, cancel *Event)
		want error
	}{
		{"cancel event", func(ev, cancel *Event) error { _, err := AwaitWith(ev, cancel, -1); return err },
			func(_ Coroutine, cancel *Event) { cancel.Resolve(nil) }, ErrCancelled},
		{"Cancel", func(ev, _ *Event) error { _, err := Await(ev); return err },
			func(co Coroutine, _ *Event) { co.Cancel() }, ErrCancelled},
		{"timeout", func(ev, _ *Event) error { _, err := AwaitTimeout(ev, time.Millisecond); return err },
			func(Coroutine, *Event) { Sleep(5 * time.Millisecond) }, ErrTimeout},
		{"Destroy", func(ev, _ *Event) error { _, err := Await(ev); return err },
			func(co Coroutine, _ *Event) { co.Destroy() }, nil},
	}
	eachBackend(t, func(t *testing.T, b Backend) {
		for _, end := range ends {
			t.Run(end.name, func(t *testing.T) {
				s := newSched(t, b)
				var got error
				var second any
				var triggered *Event
				var fail []string
				err := s.Run(func() {
					ev, cancel, other := NewEvent(), NewEvent(), NewEvent()
					co := Go(func() {
						got = end.wait(ev, cancel)
						// Destroy unwinds: nothing below runs then.
						second, _ = Await(other)
						triggered = Current().Waker().Triggered()
					})
					Yield() // co waits on ev, inline
					if ev.one == nil {
						fail = append(fail, "the waiter is not inline")
					}
					end.end(co, cancel)
					Yield() // co runs: it ended its wait, and waits on other (or finished)
					if subs, _ := subscribers(ev); len(subs) != 0 {
						fail = append(fail, fmt.Sprintf("%d subscriptions left on the event", len(subs)))
					}
					ev.Resolve("stale")
					if end.want != nil && co.WakerStatus() != WakerWaiting {
						fail = append(fail, "a firing of the left event woke the coroutine")
					}
					other.Resolve("other")
					Yield()
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fail {
					t.Error(f)
				}
				if end.want == nil {
					if got != nil || second != nil {
						t.Errorf("destroyed coroutine went on: wait %v, then %v", got, second)
					}
					return
				}
				if !errors.Is(got, end.want) || second != "other" || triggered == nil || triggered.value != "other" {
					t.Errorf("wait ended with %v (want %v), the next wait got %v (want other), triggered by the other event: %v",
						got, end.want, second, triggered != nil && triggered.value == "other")
				}
			})
		}
	})
}

// TestFiredWaitLeavesNothingBehind: a wait that its event ends through
// the firing's fast path only when it has nothing else to undo. A wait
// with a timeout must have its timer stopped, one with a cancel event
// must leave that event: otherwise the stale timer or cancel event would
// end the coroutine's next wait, which this test makes on another event.
func TestFiredWaitLeavesNothingBehind(t *testing.T) {
	waits := []struct {
		name string
		wait func(ev, cancel *Event) (any, error)
		poke func(cancel *Event) // what would end the next wait if left behind
	}{
		{"timeout", func(ev, _ *Event) (any, error) { return AwaitTimeout(ev, 20*time.Millisecond) },
			func(*Event) { Sleep(40 * time.Millisecond) }},
		{"cancel event", func(ev, cancel *Event) (any, error) { return AwaitWith(ev, cancel, -1) },
			func(cancel *Event) { cancel.Resolve(nil) }},
	}
	eachBackend(t, func(t *testing.T, b Backend) {
		for _, w := range waits {
			t.Run(w.name, func(t *testing.T) {
				s := newSched(t, b)
				var first, second any
				var err1, err2 error
				err := s.Run(func() {
					ev, cancel, other := NewEvent(), NewEvent(), NewEvent()
					Go(func() {
						first, err1 = w.wait(ev, cancel)
						second, err2 = Await(other)
					})
					Yield() // it waits on ev
					ev.Resolve("ev")
					Yield() // it runs, and waits on other
					w.poke(cancel)
					other.Resolve("other")
				})
				if err != nil {
					t.Fatal(err)
				}
				if first != "ev" || err1 != nil || second != "other" || err2 != nil {
					t.Errorf("waits ended with %v/%v and %v/%v, want ev/<nil> and other/<nil>", first, err1, second, err2)
				}
			})
		}
	})
}
