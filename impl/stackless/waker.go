package stackless

import (
	"errors"
	"time"

	"github.com/corobench/corobench/internal/wakerstate"
	"github.com/corobench/corobench/reactor"
)

// WakerStatus is the state of a task's waker (docs/design.md §1, the waker). It
// is the one definition impl/stackful and internal/semtest use too; String
// gives the reference design's names ("NO_STATUS", "WAITING", ...).
type WakerStatus = wakerstate.Status

const (
	// NoStatus: the waker is inactive: the task is running (after its start
	// or a Yield), or it has finished.
	NoStatus = wakerstate.NoStatus
	// Waiting: the task is suspended; its events are started.
	Waiting = wakerstate.Waiting
	// Queued: the task sits in the run queue (spawned and not started yet,
	// woken by an event, or yielded), its outcome stored in the waker.
	Queued = wakerstate.Queued
	// Ignored: the task is in the run queue but must be destroyed (it was
	// cancelled before it ever ran); the scheduler drops it when dequeued,
	// without running it.
	Ignored = wakerstate.Ignored
	// Result: the task woke from a wait and is running; Context.Err and
	// Context.Result hold the outcome, until its next blocking op.
	Result = wakerstate.Result
)

// Subscription slots of a waker. A state-machine task waits on at most one
// event plus a cancellation event plus a timeout (plus one fd poll), so the
// subscriptions are a fixed array inside the waker: no allocation per wait.
const (
	slotEvent  = 0 // the awaited event: resolve callback
	slotCancel = 1 // the cancellation event: cancel callback
	numSlots   = 2
)

// waitNode subscribes one task to one event. It is embedded in the waker and
// linked into the event's waiter list while the wait is started.
type waitNode struct {
	ev         *Event    // the subscribed event; nil if the slot is unused
	co         *Coro     // owner, set at Spawn
	prev, next *waitNode // event's waiter list; nil while not linked
}

// linked reports whether n's wait on its event is started: it is the
// event's inline waiter or in its waiter list (Event.holds).
func (n *waitNode) linked() bool { return n.ev != nil && n.ev.holds(n) }

// Waker is the link between a task and the events it waits on (docs/design.md §1, the waker). It
// is embedded in the task's Coro and reused for every wait: prepare resets
// it without allocating.
//
// Invariant: while status == Waiting, every subscribed node is linked into its
// event, the timeout's node is in the reactor's timer heap and the poll, if any,
// is started; in every other status none of them is.
type Waker struct {
	status    WakerStatus
	sleeping  bool // the wait is a Sleep: the timer firing is success, not ErrTimeout
	waited    bool // the task's last wake-up ended a started wait (status becomes Result)
	immediate bool // the wait ends at start with err (a refused wait)
	absolute  bool // timer.deadline is an absolute deadline (SleepUntil), not a timeout
	extras    bool // the wait uses more than one awaited event: a cancel event, a timer or a source (or is refused)
	general   bool // the wait is a general one (ResumeWhen): its nodes are in Scheduler.general
	// plain: the wait was made by Await, which only records its event
	// (nodes[slotEvent].ev) and sets plain; every other helper calls
	// prepare, which clears it. A plain wait's extras, if set, are the
	// previous wait's, and its outcome fields still hold the previous
	// outcome: the start clears the first, and every end of the wait
	// overwrites the second.
	plain     bool
	timeout   int64 // before start: the timeout (> 0) or, absolute, the deadline; 0 = none
	timer     reactor.TimerNode
	nodes     [numSlots]waitNode
	src       *Source // reactor event of the wait (fd poll, trigger, ...), nil if none
	triggered *Event  // the event that ended the wait
	result    any
	err       error
}

// prepare resets the waker for a new wait (reference design: zend_async_waker_new): the
// previous wait's events are already stopped, so this only clears fields.
// Only a wait that used more than one event (extras) has more to clear, which
// keeps a plain Await to a few stores.
func (w *Waker) prepare() *Waker {
	// The status is left alone: the running task's waker is NoStatus or
	// Result, and start or the yield path sets the next one (a wait that
	// returns at once on a pending cancellation keeps it, as in impl/stackful).
	w.plain = false
	if w.extras {
		w.extras, w.sleeping, w.immediate, w.absolute, w.general = false, false, false, false, false
		w.timeout = 0
		w.nodes[slotCancel].ev = nil
		w.src = nil
	}
	w.nodes[slotEvent].ev = nil
	if w.triggered != nil {
		w.triggered = nil
	}
	if w.result != nil {
		w.result = nil
	}
	if w.err != nil {
		w.err = nil
	}
	return w
}

// subscribe records ev in slot without starting it (resume_when).
func (w *Waker) subscribe(slot int, ev *Event) {
	if ev == nil {
		awaitNil()
	}
	w.nodes[slot].ev = ev
	if slot != slotEvent {
		w.extras = true
	}
}

// errNothingToWaitFor is the outcome of a wait with no event, no timeout and
// no poll: nothing could ever end it, so it ends at once with this error
// instead of surfacing later as a deadlock.
var errNothingToWaitFor = errors.New("stackless: wait on nothing: pass an event, a timeout or a cancellation event")

// start starts the waker's events (reference design: start_waker_events). It returns true
// if the wait is already over (fast path): a cancellation is pending, the task
// is unwinding, or an awaited event had fired before the wait. Then nothing
// is started and the waker holds the outcome in Result status.
//
// Its hot half is written out in Scheduler.resume, its twin, which starts
// every wait a Resume returns; this copy serves TryAwait.
func (w *Waker) start(s *Scheduler, co *Coro) bool {
	// Hot path: one awaited event, nothing else (pingpong, most awaits).
	if !w.extras && !co.cancelPending && !co.unwinding {
		n := &w.nodes[slotEvent]
		if ev := n.ev; ev != nil {
			if ev.done {
				w.status, w.triggered, w.result, w.err = Result, ev, ev.result, ev.err
				return true
			}
			w.startWaiting(s, co, n, ev)
			return false
		}
	}
	return w.startSlow(s, co)
}

// startWaiting is the hot start's wait on one pending event: co becomes
// ev's inline waiter, or its node n is linked (Event.linkFirst). A plain wait's waker still holds the previous outcome
// (see Await): a result or error is dropped here so that a waiting task
// does not keep it alive; Triggered (an event) stays until the wake.
func (w *Waker) startWaiting(s *Scheduler, co *Coro, n *waitNode, ev *Event) {
	w.status, w.waited = Waiting, true
	if w.result != nil || w.err != nil {
		w.result, w.err = nil, nil
	}
	ev.linkFirst(co, n)
}

// startSlow is start for waits with a cancellation event, a timer or a
// source, a pending cancellation, an unwinding task, or nothing to wait on,
// and for a plain wait (Await) that follows one of those.
func (w *Waker) startSlow(s *Scheduler, co *Coro) bool {
	if w.plain {
		// Await did not prepare the waker: do what prepare would have.
		ev := w.nodes[slotEvent].ev
		if ev == nil {
			awaitNil()
		}
		if w.extras {
			w.prepare()
			w.nodes[slotEvent].ev = ev
			if !co.cancelPending && !co.unwinding {
				return w.start(s, co) // now a wait on ev alone
			}
		}
	}
	if w.sleeping && !co.cancelPending && !co.unwinding && s.r.loop != nil {
		// Sleep and SleepUntil: the timer is the wait's one event
		// (nothing else sets sleeping), on a reactor that exists.
		// Twin of the case written out in Scheduler.resume.
		w.status, w.waited = Waiting, true
		s.addTimer(co, w.timeout, w.absolute)
		return false
	}
	if co.cancelPending || co.unwinding {
		co.cancelPending = false
		// Returns at once; the status stays as it was. A plain wait's
		// waker still holds the previous outcome: cleared here.
		w.triggered, w.result, w.err = nil, nil, ErrCancelled
		return true
	}
	if w.immediate {
		w.status = Result
		return true
	}
	if w.general {
		return s.startGeneral(w, co)
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		if n.ev != nil && n.ev.done {
			w.status = Result
			w.triggered = n.ev
			if i == slotCancel {
				w.err = ErrCancelled
			} else {
				w.result, w.err = n.ev.result, n.ev.err
			}
			return true
		}
	}
	if w.nodes[slotEvent].ev == nil && w.nodes[slotCancel].ev == nil && w.timeout <= 0 && w.src == nil {
		w.status, w.err = Result, errNothingToWaitFor
		return true
	}
	if w.timeout > 0 || w.src != nil {
		if err := s.r.open(s); err != nil {
			w.status, w.err = Result, err
			return true
		}
	}
	w.status = Waiting
	w.waited = true
	for i := range w.nodes {
		if n := &w.nodes[i]; n.ev != nil {
			n.ev.link(n)
		}
	}
	if w.timeout > 0 {
		s.addTimer(co, w.timeout, w.absolute)
	}
	if w.src != nil {
		w.src.ev.Start()
	}
	return false
}

// stop stops every started event of the wait (unsubscribes, removes the
// timeout from the timer heap, stops the poll). Called when the wait ends,
// whichever way.
func (w *Waker) stop(s *Scheduler, co *Coro) {
	if n := &w.nodes[slotEvent]; n.ev != nil && n.linked() {
		n.ev.remove(n)
	}
	if n := &w.nodes[slotCancel]; n.ev != nil && n.linked() {
		n.ev.remove(n)
	}
	if w.timer.Active() {
		s.removeTimer(co)
	}
	if w.src != nil {
		w.src.ev.Stop()
	}
	if w.general {
		s.stopGeneral(co)
	}
}

// wake is the common body of the resolve, cancel and timeout callbacks: the
// first one to arrive while the task is Waiting stores the outcome, stops the
// other events and queues the task. Later ones find the waker Queued and do
// nothing, which settles every timeout-versus-resolve race: the first
// trigger wins.
func (s *Scheduler) wake(co *Coro, triggered *Event, result any, err error) {
	w := &co.waker
	if w.status != Waiting {
		return
	}
	w.stop(s, co)
	w.status = Queued
	w.triggered, w.result, w.err = triggered, result, err
	s.enqueue(co)
}

// onEventFired is the resolve/cancel callback for a node whose event fired.
// The event has already unlinked the node.
func (s *Scheduler) onEventFired(n *waitNode) {
	co := n.co
	if co.waker.general {
		s.onGeneral(co, n)
		return
	}
	if n == &co.waker.nodes[slotCancel] {
		s.wake(co, n.ev, nil, ErrCancelled)
		return
	}
	s.wake(co, n.ev, n.ev.result, n.ev.err)
}

// onTimer is the timeout callback (coTimer.OnTimer); the reactor has
// already disarmed the node.
func (s *Scheduler) onTimer(co *Coro) {
	w := &co.waker
	if !w.sleeping {
		s.wake(co, nil, nil, ErrTimeout)
		return
	}
	// wake for a sleep, which has nothing left to stop (its timer was its
	// one event and has fired) and succeeds: twin of wake, and written
	// out again in coTimer.OnTimer.
	if w.status != Waiting {
		return
	}
	w.status = Queued
	w.triggered, w.result, w.err = nil, nil, nil
	// enqueue's normal-priority case spelled out (see Event.fire).
	if co.prio == High || !s.queue.tryPushBack(co) {
		s.enqueue(co)
	}
}

// setTimeout records the wait's timeout (> 0: a timeout); start arms the
// waker's timer node with it.
func (w *Waker) setTimeout(d time.Duration) {
	w.timeout = int64(max(d, 0))
	w.extras = true
}
