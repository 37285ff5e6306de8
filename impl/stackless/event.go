package stackless

import "errors"

// ErrAlreadyDone is returned by Resolve and Reject on an event that is
// already done. Call Reset first to reuse an event.
var ErrAlreadyDone = errors.New("stackless: event already resolved or rejected; call Reset before reusing it")

// Event is a one-shot future: pending until Resolve or Reject, then done,
// waking every task that awaits it. Reset makes it pending again, so one
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

// Done reports whether the event has been resolved or rejected.
func (e *Event) Done() bool { return e.done }

// Value returns the event's result and error (nil, nil while pending).
func (e *Event) Value() (any, error) { return e.result, e.err }

// Resolve completes the event with v and queues every waiting task, in the
// order they started waiting.
func (e *Event) Resolve(v any) error { return e.complete(v, nil) }

// Reject completes the event with err (which its waiters get from
// Context.Err) and queues every waiting task.
func (e *Event) Reject(err error) error {
	if err == nil {
		return errors.New("stackless: Reject called with a nil error; use Resolve")
	}
	return e.complete(nil, err)
}

func (e *Event) complete(v any, err error) error {
	if e.done {
		return ErrAlreadyDone
	}
	e.done, e.result, e.err = true, v, err
	for n := e.head; n != nil; n = e.head {
		e.unlink(n)
		n.co.sched.onEventFired(n)
	}
	return nil
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

// link appends n to the waiter list (FIFO wake order).
func (e *Event) link(n *waitNode) {
	n.prev, n.next = e.tail, nil
	if e.tail != nil {
		e.tail.next = n
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
