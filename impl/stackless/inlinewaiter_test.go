package stackless

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// An Event keeps its first plain waiter inline (Event.one) and the others
// in its list. These tests pin what that must not change: FIFO wake order
// across the inline waiter and the list, a removed inline waiter (cancel,
// Destroy) that neither wakes twice nor lets a later waiter jump the list,
// Waiters, and the outcome a woken inline waiter sees (fire stores only a
// non-nil result and error into it).

// waitOnce is a task that awaits ev once and records, on waking, its name
// and the outcome of the wait into log.
type waitOnce struct {
	Coro
	name  string
	ev    *Event
	log   *[]string
	woken bool
}

func (t *waitOnce) Resume(c *Context) Step {
	if !t.woken {
		t.woken = true
		return c.Await(t.ev)
	}
	*t.log = append(*t.log, fmt.Sprintf("%s:%v:%v", t.name, c.Result(), c.Err()))
	return c.Done()
}

// spawnWaiters spawns one waitOnce per name, in order: once Run starts,
// each starts its wait on ev before a task spawned after them runs.
func spawnWaiters(t *testing.T, s *Scheduler, ev *Event, log *[]string, names ...string) []*waitOnce {
	t.Helper()
	ws := make([]*waitOnce, len(names))
	for i, n := range names {
		ws[i] = &waitOnce{name: n, ev: ev, log: log}
		if err := s.Spawn(ws[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestInlineWaiterFIFO: the first waiter is inline, the next ones in the
// list; fire wakes them in the order they started waiting.
func TestInlineWaiterFIFO(t *testing.T) {
	s := New()
	defer s.Close()
	var ev Event
	var log []string
	ws := spawnWaiters(t, s, &ev, &log, "a", "b", "c")
	step := 0
	firer := &funcTask{f: func(c *Context) Step {
		step++
		if step == 1 {
			// Runs after the three waiters started their waits.
			if ev.one != &ws[0].Coro {
				t.Errorf("inline waiter %p, want the first waiter's %p", ev.one, &ws[0].Coro)
			}
			if ev.head != &ws[1].waker.nodes[slotEvent] || ev.tail != &ws[2].waker.nodes[slotEvent] {
				t.Errorf("the list does not hold the second and third waiters in order")
			}
			if n := ev.Waiters(); n != 3 {
				t.Errorf("Waiters %d, want 3", n)
			}
			ev.Resolve("v")
			if ev.one != nil || ev.head != nil || ev.tail != nil || ev.Waiters() != 0 {
				t.Errorf("fired event still holds waiters: one %p head %p tail %p", ev.one, ev.head, ev.tail)
			}
			return c.Yield()
		}
		return c.Done()
	}}
	if err := s.Spawn(firer); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(log, " "), "a:v:<nil> b:v:<nil> c:v:<nil>"; got != want {
		t.Fatalf("wake order %q, want %q", got, want)
	}
}

// TestInlineWaiterRemoved: a cancelled or destroyed inline waiter leaves
// the event; a waiter that comes while the list is not empty goes to the
// list's tail, not inline, so FIFO order holds; the removed waiter is
// woken once, by its cancellation.
func TestInlineWaiterRemoved(t *testing.T) {
	for _, how := range []string{"Cancel", "Destroy"} {
		t.Run(how, func(t *testing.T) {
			s := New()
			defer s.Close()
			var ev Event
			var log []string
			ws := spawnWaiters(t, s, &ev, &log, "a", "b")
			late := &waitOnce{name: "c", ev: &ev, log: &log}
			step := 0
			firer := &funcTask{f: func(c *Context) Step {
				step++
				switch step {
				case 1:
					var err error
					if how == "Cancel" {
						err = s.Cancel(ws[0])
					} else {
						err = s.Destroy(ws[0])
					}
					if err != nil {
						t.Fatal(err)
					}
					if ev.one != nil || ev.Waiters() != 1 {
						t.Errorf("after %s of the inline waiter: one %p, Waiters %d; want nil, 1", how, ev.one, ev.Waiters())
					}
					if err := c.Spawn(late); err != nil {
						t.Fatal(err)
					}
					return c.Yield() // a wakes (cancelled), c starts its wait
				case 2:
					if ev.one != nil || ev.head != &ws[1].waker.nodes[slotEvent] || ev.tail != &late.waker.nodes[slotEvent] {
						t.Errorf("late waiter not at the list's tail: one %p, head %p, tail %p", ev.one, ev.head, ev.tail)
					}
					ev.Resolve("v")
					return c.Yield()
				}
				return c.Done()
			}}
			if err := s.Spawn(firer); err != nil {
				t.Fatal(err)
			}
			if err := s.Run(); err != nil {
				t.Fatal(err)
			}
			want := "a:<nil>:" + ErrCancelled.Error() + " b:v:<nil> c:v:<nil>"
			if got := strings.Join(log, " "); got != want {
				t.Fatalf("wakes %q, want %q", got, want)
			}
		})
	}
}

// outcomeSeq awaits ev four times; between the waits the peer fires it
// with ("x", nil), (nil, nil), (nil, errBoom) and ("y", nil). Each wake
// must see exactly that outcome: an inline waiter gets only the non-nil
// parts stored, so this fails if a previous wait's outcome survives.
type outcomeSeq struct {
	Coro
	ev    *Event
	i     int
	saw   []string
	state int
}

var errBoom = errors.New("boom")

func (t *outcomeSeq) Resume(c *Context) Step {
	if t.state == 1 {
		t.saw = append(t.saw, fmt.Sprintf("%v/%v/%v", c.Result(), c.Err(), c.Triggered() == t.ev))
		t.ev.Reset()
		t.i++
	}
	if t.i == 4 {
		return c.Done()
	}
	t.state = 1
	return c.Await(t.ev)
}

func TestInlineWaiterOutcome(t *testing.T) {
	s := New()
	defer s.Close()
	var ev Event
	w := &outcomeSeq{ev: &ev}
	k := 0
	firer := &funcTask{f: func(c *Context) Step {
		if k == 4 {
			return c.Done()
		}
		if ev.one != &w.Coro {
			t.Errorf("fire %d: the waiter is not inline (one %p)", k, ev.one)
		}
		switch k {
		case 0:
			ev.Resolve("x")
		case 1:
			ev.Resolve(nil)
		case 2:
			ev.Reject(errBoom)
		case 3:
			ev.Resolve("y")
		}
		if ev.one != nil || ev.Waiters() != 0 || w.WakerStatus() != Queued {
			t.Errorf("fire %d: one %p, Waiters %d, waiter %v; want nil, 0, QUEUED", k, ev.one, ev.Waiters(), w.WakerStatus())
		}
		k++
		return c.Yield()
	}}
	if err := s.Spawn(w); err != nil {
		t.Fatal(err)
	}
	if err := s.Spawn(firer); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	want := "x/<nil>/true <nil>/<nil>/true <nil>/boom/true y/<nil>/true"
	if got := strings.Join(w.saw, " "); got != want {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
}

// TestEventResetClearsOutcome: fire stores only a non-nil value or error,
// so Reset must leave the outcome nil: a stale value would be returned by
// Outcome and handed to every fast-path wait after the next Resolve(nil).
func TestEventResetClearsOutcome(t *testing.T) {
	var ev Event
	check := func(step string, wantV any, wantErr error) {
		t.Helper()
		if v, err := ev.Outcome(); v != wantV || err != wantErr {
			t.Fatalf("%s: Outcome (%v, %v), want (%v, %v)", step, v, err, wantV, wantErr)
		}
	}
	ev.Resolve("x")
	check("Resolve(x)", "x", nil)
	ev.Reset()
	check("Reset", nil, nil)
	ev.Resolve(nil)
	check("Reset, Resolve(nil)", nil, nil)
	ev.Reset()
	ev.Reject(errBoom)
	check("Reject", nil, errBoom)
	ev.Reset()
	ev.Resolve(nil)
	check("Reject, Reset, Resolve(nil)", nil, nil)
}
