package stackless

import (
	"fmt"
	"time"
)

// WakerStatus is the state of a task's waker (seed 003, "Waker-Status").
type WakerStatus uint8

const (
	// NoStatus: the waker is inactive; the task is running, or has not
	// waited yet.
	NoStatus WakerStatus = iota
	// Waiting: the task is suspended; its events are started.
	Waiting
	// Queued: an event fired (or the task yielded); the task sits in the run
	// queue with its result stored in the waker.
	Queued
	// Ignored: the task is in the run queue but must be destroyed; the
	// scheduler finalises it without running it.
	Ignored
	// Result: the task has woken; Context.Err and Context.Result hold the
	// outcome of the wait.
	Result
)

func (s WakerStatus) String() string {
	switch s {
	case NoStatus:
		return "NO_STATUS"
	case Waiting:
		return "WAITING"
	case Queued:
		return "QUEUED"
	case Ignored:
		return "IGNORED"
	case Result:
		return "RESULT"
	}
	return fmt.Sprintf("WakerStatus(%d)", uint8(s))
}

// Subscription slots of a waker. A state-machine task waits on at most one
// event plus a cancellation event plus a timeout, so the subscriptions are a
// fixed array inside the waker: no allocation per wait.
const (
	slotEvent  = 0 // the awaited event: resolve callback
	slotCancel = 1 // the cancellation event: cancel callback
	numSlots   = 2
)

// waitNode subscribes one task to one event. It is embedded in the waker and
// linked into the event's waiter list while the wait is active.
type waitNode struct {
	ev         *Event    // the subscribed event; nil if the slot is unused
	co         *Coro     // owner
	prev, next *waitNode // event's waiter list; valid only while linked
	linked     bool      // linked into ev's waiter list (the event is started)
}

// Waker is the link between a task and the events it waits on (seed 003). It
// is embedded in the task's Coro and reused for every wait: prepare resets
// it without allocating.
//
// Invariant: while status == Waiting, every subscribed node is linked into its
// event and the timeout timer, if any, is armed; in every other status no node
// is linked and no timer is armed.
type Waker struct {
	status    WakerStatus
	sleeping  bool          // the wait is a Sleep: the timer firing is success, not ErrTimeout
	timerArmd bool          // the timeout timer is armed in the reactor
	timeout   time.Duration // <= 0: none
	nodes     [numSlots]waitNode
	triggered *Event // the event that ended the wait
	result    any
	err       error
	timer     timerSlot // the reactor timer for timeout/sleep (see reactor.go)
}

// prepare resets the waker for a new wait (seed: zend_async_waker_new): the
// previous wait's events are already stopped, so this only clears fields.
func (w *Waker) prepare(co *Coro) *Waker {
	w.status = NoStatus
	w.sleeping = false
	w.timeout = 0
	w.triggered = nil
	w.result = nil
	w.err = nil
	for i := range w.nodes {
		w.nodes[i].ev = nil
		w.nodes[i].co = co
	}
	return w
}

// subscribe records ev in slot without starting it (resume_when).
func (w *Waker) subscribe(slot int, ev *Event) {
	if ev == nil {
		panic("stackless: Await on a nil *Event")
	}
	w.nodes[slot].ev = ev
}

func (w *Waker) setTimeout(d time.Duration) { w.timeout = d }

// start starts the waker's events (seed: start_waker_events). It returns true
// if the wait is already over (fast path): an event had fired before the
// wait, or a cancellation is pending. Then nothing is started and the waker
// is in Result status.
func (w *Waker) start(s *Scheduler, co *Coro) bool {
	if co.cancelPending {
		co.cancelPending = false
		w.status = Result
		w.err = ErrCanceled
		return true
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		if n.ev != nil && n.ev.done {
			w.status = Result
			w.triggered = n.ev
			if i == slotCancel {
				w.err = ErrCanceled
			} else {
				w.result, w.err = n.ev.result, n.ev.err
			}
			return true
		}
	}
	if w.nodes[slotEvent].ev == nil && w.nodes[slotCancel].ev == nil && w.timeout <= 0 {
		// Nothing can ever wake this wait: report it as the programming error
		// it is, rather than as a deadlock later.
		w.status = Result
		w.err = fmt.Errorf("stackless: task %s waits on nothing: pass an event, a timeout or a cancellation event", taskName(co))
		return true
	}
	w.status = Waiting
	for i := range w.nodes {
		if n := &w.nodes[i]; n.ev != nil {
			n.ev.link(n)
		}
	}
	if w.timeout > 0 {
		s.armTimer(co, w.timeout)
		w.timerArmd = true
	}
	s.waiting++
	return false
}

// stop stops every started event of the wait (unsubscribes, disarms the
// timer). Called when the wait ends, whichever way.
func (w *Waker) stop(s *Scheduler) {
	for i := range w.nodes {
		if n := &w.nodes[i]; n.linked {
			n.ev.unlink(n)
		}
	}
	if w.timerArmd {
		s.disarmTimer(&w.timer)
		w.timerArmd = false
	}
}

// wake is the common body of the resolve, cancel and timeout callbacks: the
// first one to arrive while the task is Waiting stores the outcome, stops the
// other events and queues the task. Later ones find the waker Queued and do
// nothing, which settles every timeout-versus-resolve race.
func (s *Scheduler) wake(co *Coro, triggered *Event, result any, err error) {
	w := &co.waker
	if w.status != Waiting {
		return
	}
	w.stop(s)
	w.status = Queued
	w.triggered, w.result, w.err = triggered, result, err
	s.waiting--
	s.enqueue(co)
}

// onEventFired is the resolve/cancel callback for a node whose event fired.
// The event has already unlinked the node.
func (s *Scheduler) onEventFired(n *waitNode) {
	co := n.co
	if n == &co.waker.nodes[slotCancel] {
		s.wake(co, n.ev, nil, ErrCanceled)
		return
	}
	s.wake(co, n.ev, n.ev.result, n.ev.err)
}

// onTimer is the timeout callback.
func (s *Scheduler) onTimer(co *Coro) {
	w := &co.waker
	w.timerArmd = false // the reactor has released it
	if w.sleeping {
		s.wake(co, nil, nil, nil)
		return
	}
	s.wake(co, nil, nil, ErrTimeout)
}
