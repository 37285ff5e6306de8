package stackless

// Event is a one-shot future: pending until Resolve or Reject fires it once
// (later calls are ignored and return false), waking every task that awaits
// it, in the order they started waiting. Reset makes it pending again, so one
// Event can serve any number of waits without allocating (the pingpong
// benchmark reuses two).
//
// Its zero value is a pending event. An Event belongs to the goroutine that
// runs the scheduler; to wake a scheduler from another thread use a reactor
// trigger.
//
// Waiters are linked intrusively through the waitNodes embedded in their
// wakers, so awaiting allocates nothing.
type Event struct {
	done       bool
	result     any
	err        error
	head, tail *waitNode // tasks whose waits on this event are started
}

// NewEvent returns a pending event (the zero Event is one too).
func NewEvent() *Event { return new(Event) }

// Fired reports whether the event has been resolved or rejected.
func (e *Event) Fired() bool { return e.done }

// Outcome returns the event's value and error (nil, nil while pending).
func (e *Event) Outcome() (any, error) { return e.result, e.err }

// Resolve fires the event with value v and queues every waiting task. It
// returns false, and changes nothing, if the event had already fired.
func (e *Event) Resolve(v any) bool { return e.fire(v, nil) }

// Reject fires the event with err, which its waiters get from Context.Err,
// and queues every waiting task. It returns false, and changes nothing, if
// the event had already fired. A nil err is refused (false): use Resolve.
func (e *Event) Reject(err error) bool {
	if err == nil {
		return false
	}
	return e.fire(nil, err)
}

func (e *Event) fire(v any, err error) bool {
	if e.done {
		return false
	}
	// A pending event's outcome is nil (zero value, Reset): store only
	// what is not.
	e.done = true
	if v != nil {
		e.result = v
	}
	if err != nil {
		e.err = err
	}
	n := e.head
	if n == nil {
		return true
	}
	if n.next == nil {
		// The only waiter (pingpong's, most events'): the list empties;
		// n's own links are nil already (it was head and tail).
		e.head, e.tail = nil, nil
		// wakeHot, its twin, written out: a call less per hand-off.
		co := n.co
		if w := &co.waker; n == &w.nodes[slotEvent] && w.status == Waiting && !w.extras {
			w.status = Queued
			w.triggered, w.result, w.err = e, v, err
			s := co.sched
			if co.prio == High || !s.queue.tryPushBack(co) {
				s.enqueue(co)
			}
			return true
		}
		co.sched.onEventFired(n)
		return true
	}
	for ; n != nil; n = e.head {
		e.unlink(n)
		if !wakeHot(e, n, v, err) {
			n.co.sched.onEventFired(n)
		}
	}
	return true
}

// wakeHot queues n's task if it waits on e alone (no cancellation event,
// timeout or source to stop: the hot path of every hand-off) and reports
// whether it did; otherwise the caller hands n to onEventFired. n is
// unlinked already. Its twin is written out in fire's one-waiter case.
func wakeHot(e *Event, n *waitNode, v any, err error) bool {
	co := n.co
	w := &co.waker
	if n != &w.nodes[slotEvent] || w.status != Waiting || w.extras {
		return false
	}
	w.status = Queued
	w.triggered, w.result, w.err = e, v, err
	s := co.sched
	// enqueue's normal-priority case spelled out, so that it inlines
	// here (enqueue itself does not): the push of every hand-off costs
	// no call. High priority and a full queue take enqueue.
	if co.prio == High || !s.queue.tryPushBack(co) {
		s.enqueue(co)
	}
	return true
}

// Reset makes a done event pending again, dropping its result.
func (e *Event) Reset() {
	e.done, e.result, e.err = false, nil, nil
}

// Waiters returns the number of tasks whose waits on e are started.
func (e *Event) Waiters() int {
	k := 0
	for n := e.head; n != nil; n = n.next {
		k++
	}
	return k
}

// link appends n to the waiter list (FIFO wake order). The list is spelled
// out here, not shared with impl/stackful's subscriber list or the live
// lists: see the comment on link in impl/stackful/event.go.
//
// n's links are nil: a node out of a list keeps them nil (unlink clears
// them, fire's one-waiter case finds them nil), so linking the first
// waiter is two stores.
func (e *Event) link(n *waitNode) {
	if t := e.tail; t != nil {
		n.prev = t
		t.next = n
	} else {
		e.head = n
	}
	e.tail = n
}

func (e *Event) unlink(n *waitNode) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		e.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		e.tail = n.prev
	}
	n.prev, n.next = nil, nil
}
