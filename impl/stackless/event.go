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
// wakers, so awaiting allocates nothing. The first waiter of a plain wait
// (Await, or a wait on this event alone) is kept inline in one, with no
// list link, while the list is empty: a hand-off (pingpong: one waiter per
// event) is then one pointer store to start the wait and one to end it,
// and fire reaches the waiting task in one load instead of two (head, then
// the node's task).
//
// Invariants: one, if set, is a task Waiting on this event through its
// slotEvent node alone (no extras), and it started waiting before every
// task in the list (a wait goes inline only while one and the list are
// both empty). So waking one first, then the list, is FIFO order.
type Event struct {
	done       bool
	one        *Coro // the inline waiter (see above), or nil
	result     any
	err        error
	head, tail *waitNode // the other tasks whose waits on this event are started, FIFO
}

// NewEvent returns a pending event (the zero Event is one too).
func NewEvent() *Event { return new(Event) }

// Fired reports whether the event has been resolved or rejected.
func (e *Event) Fired() bool { return e.done }

// Outcome returns the event's value and error (nil, nil while pending).
func (e *Event) Outcome() (any, error) { return e.result, e.err }

// Resolve fires the event with value v and queues every waiting task. It
// returns false, and changes nothing, if the event had already fired.
//
// It is fire for a nil error, written out (fire is its twin; keep the two
// alike): the error half of the outcome is not passed or tested, which a
// hand-off, fired by Resolve, pays on every call.
func (e *Event) Resolve(v any) bool {
	if e.done {
		return false
	}
	e.done = true
	if v != nil {
		e.result = v
	}
	if co := e.one; co != nil && e.head == nil {
		if w := &co.waker; w.status == Waiting && !w.extras && co.prio != High && co.sched.queue.tryPushBack(co) {
			e.one = nil
			w.status = Queued
			w.triggered = e
			if v != nil {
				w.result = v
			}
			return true
		}
	}
	e.wakeAll(v, nil)
	return true
}

// Reject fires the event with err, which its waiters get from Context.Err,
// and queues every waiting task. It returns false, and changes nothing, if
// the event had already fired. A nil err is refused (false): use Resolve.
func (e *Event) Reject(err error) bool {
	if err == nil {
		return false
	}
	return e.fire(nil, err)
}

// fire is Reject (and Resolve's twin, written out there). Its hot case,
// the one every hand-off takes, is an inline waiter alone, of normal
// priority, waiting on e alone, with room in its run queue: it is written
// out here with no call but the write barriers' (the arguments are still
// spilled at entry: the write-barrier calls alone cause that); everything
// else is wakeAll's.
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
	if co := e.one; co != nil && e.head == nil {
		// wakeHot and enqueue's normal-priority case, their twins,
		// written out for the inline waiter (whose node test holds by
		// construction: only a slotEvent node goes inline).
		if w := &co.waker; w.status == Waiting && !w.extras && co.prio != High && co.sched.queue.tryPushBack(co) {
			e.one = nil
			w.status = Queued
			// A waiting waker's result and err are nil (startWaiting
			// clears them): store only what is not.
			w.triggered = e
			if v != nil {
				w.result = v
			}
			if err != nil {
				w.err = err
			}
			return true
		}
	}
	e.wakeAll(v, err)
	return true
}

// wakeAll wakes every waiter of the fired event e in FIFO order: the
// inline waiter first (it is older than every listed one), then the list.
func (e *Event) wakeAll(v any, err error) {
	if co := e.one; co != nil {
		e.one = nil
		if w := &co.waker; w.status == Waiting && !w.extras {
			w.status = Queued
			// As in fire: store only the non-nil outcome.
			w.triggered = e
			if v != nil {
				w.result = v
			}
			if err != nil {
				w.err = err
			}
			co.sched.enqueue(co)
		} else {
			co.sched.onEventFired(&co.waker.nodes[slotEvent])
		}
	}
	for n := e.head; n != nil; n = e.head {
		e.unlink(n)
		if !wakeHot(e, n, v, err) {
			n.co.sched.onEventFired(n)
		}
	}
}

// wakeHot queues n's task if it waits on e alone (no cancellation event,
// timeout or source to stop: the hot path of every hand-off) and reports
// whether it did; otherwise the caller hands n to onEventFired. n is
// unlinked already. Its twin is written out in fire (the inline waiter).
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
	// Every hand-off resets an event whose outcome is nil: test, so that
	// the common case stores no pointer.
	e.done = false
	if e.result != nil {
		e.result = nil
	}
	if e.err != nil {
		e.err = nil
	}
}

// Waiters returns the number of tasks whose waits on e are started.
func (e *Event) Waiters() int {
	k := 0
	if e.one != nil {
		k++
	}
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

// linkFirst starts co's plain wait on e (its slotEvent node n): inline in
// e.one if e has no waiter, else at the list's tail. Called by
// Waker.startWaiting, the hot start.
func (e *Event) linkFirst(co *Coro, n *waitNode) {
	if e.one == nil && e.head == nil {
		e.one = co
		return
	}
	e.link(n)
}

// holds reports whether n's wait on e is started: n is the inline waiter's
// slotEvent node, or in the list (only the list's head has a nil prev).
func (e *Event) holds(n *waitNode) bool {
	if co := e.one; co != nil && n == &co.waker.nodes[slotEvent] {
		return true
	}
	return n.prev != nil || e.head == n
}

// remove ends n's started wait on e (e.holds(n)): it clears the inline
// waiter or unlinks n from the list.
func (e *Event) remove(n *waitNode) {
	if co := e.one; co != nil && n == &co.waker.nodes[slotEvent] {
		e.one = nil
		return
	}
	e.unlink(n)
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
