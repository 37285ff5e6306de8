package stackful

import (
	"time"

	"github.com/corobench/corobench/internal/wakerstate"
)

// WakerStatus is the state of a coroutine's waker (docs/design.md §1, the waker). It is the one
// definition impl/stackless and internal/semtest use too; String gives the
// reference design's names ("NO_STATUS", "WAITING", ...).
type WakerStatus = wakerstate.Status

const (
	// WakerNoStatus: the waker is inactive; the coroutine runs (or finished).
	WakerNoStatus = wakerstate.NoStatus
	// WakerWaiting: the coroutine is suspended waiting for its events.
	WakerWaiting = wakerstate.Waiting
	// WakerQueued: the coroutine is in the run queue (woken, yielded, or
	// spawned and not started); its outcome is fixed.
	WakerQueued = wakerstate.Queued
	// WakerIgnored: the coroutine is queued but must be destroyed: one
	// cancelled before it started is dropped without running; a started one
	// (Coroutine.Destroy) is resumed only to unwind.
	WakerIgnored = wakerstate.Ignored
	// WakerResult: the coroutine resumed from a wait; the outcome is
	// available until its next blocking call.
	WakerResult = wakerstate.Result
)

// maxWakerEvents is how many events one wait can subscribe to: the awaited
// event and a cancellation event. The subscriptions are embedded, so a wait
// never allocates.
const maxWakerEvents = 2

// Waker links a suspended coroutine to the events it waits for and collects
// the outcome of the wait (docs/design.md §1, the waker). It is embedded in the Coroutine and
// reset for every wait, so waiting never allocates.
//
// The first trigger wins: the standard callbacks (resolve, cancel, timeout)
// act only while the waker is WAITING; the winner stores the outcome,
// unsubscribes every event, stops the timer and enqueues the coroutine
// (QUEUED). Later triggers find it QUEUED and are ignored.
type Waker struct {
	co      *Coroutine
	subs    [maxWakerEvents]subscription // the awaited events
	timeout time.Duration                // < 0: no timeout
	// status and nsubs sit beside the one-byte fields below, sharing one
	// word: 16 bytes less per Coroutine, which keeps the record in the
	// 352-byte size class (TestCoroutineRecordSize).
	status    WakerStatus
	nsubs     uint8    // used entries of subs (at most maxWakerEvents)
	mode      waitMode // what kind of wait: plain (Await...), Sleep, or general (ResumeWhen)
	building  bool     // ResumeWhen subscriptions are being collected for the next Suspend
	hasGen    bool     // Scheduler.general holds this coroutine's general-wait state
	triggered *Event   // the event that ended the last wait; nil for a timeout or a direct cancellation
	result    any
	err       error
}

// genWait is a coroutine's general-wait state (resumewhen.go): its
// subscriptions (reused, each allocated once), their custom callbacks, and
// the triggered set. It lives in Scheduler.general, not in the Waker, so
// that coroutines that never make a general wait (nearly all) are not
// larger for it: every spawn allocates and clears a Coroutine.
type genWait struct {
	gen   []*subscription
	genFn []WakeFunc
	ngen  int
	fired []*Event
}

// waitMode says what kind of wait the waker holds.
type waitMode uint8

const (
	modePlain   waitMode = iota // Await, AwaitTimeout, AwaitWith, Yield
	modeSleep                   // Sleep: the timeout is the wait's success, not ErrTimeout
	modeGeneral                 // ResumeWhen + Suspend: subscriptions in gen
)

// Status returns the waker's state.
func (w *Waker) Status() WakerStatus { return w.status }

// Triggered returns the event that ended the last wait (nil if a timeout or a
// direct cancellation ended it).
func (w *Waker) Triggered() *Event { return w.triggered }

// Outcome returns the result and error of the last wait.
func (w *Waker) Outcome() (any, error) { return w.result, w.err }

// Events returns how many events the current wait subscribed to.
func (w *Waker) Events() int { return int(w.nsubs) }

// reset prepares the waker for a new wait (zend_async_waker_new).
func (w *Waker) reset() {
	w.status = WakerNoStatus
	w.nsubs = 0
	w.timeout = -1
	w.mode = modePlain
	w.triggered, w.result, w.err = nil, nil, nil
}

// resumeWhen subscribes the coroutine to ev with a standard callback
// (zend_async_resume_when).
func (w *Waker) resumeWhen(ev *Event, kind callbackKind) {
	if w.nsubs == maxWakerEvents {
		panic("stackful: waker: too many events for one wait")
	}
	sub := &w.subs[w.nsubs]
	w.nsubs++
	sub.kind, sub.co = kind, w.co
	ev.link(sub)
}

// start starts the waker's events when the coroutine suspends
// (start_waker_events): subscriptions are already live, the timer starts now.
func (w *Waker) start(s *Scheduler) {
	w.status = WakerWaiting
	if w.timeout >= 0 {
		w.startTimer(s) // out of line: keeps start inlinable for a plain Await
	}
}

// startTimer arms the waker's timeout.
func (w *Waker) startTimer(s *Scheduler) {
	// A fresh base, not the last tick's cached time: a sleep never wakes
	// early relative to the call (one clock read per timed wait).
	co := w.co
	if !co.timerBound {
		// Bound here rather than at spawn: most coroutines never wait
		// with a timeout, and the handler is an interface store.
		co.timer.Init(s.loop, (*coTimer)(co))
		co.timerBound = true
	}
	s.loop.UpdateTime()
	co.timer.Start(w.timeout)
}

// stop unsubscribes every event and stops the timer.
func (w *Waker) stop() {
	for i := 0; i < int(w.nsubs); i++ {
		if sub := &w.subs[i]; sub.ev != nil {
			sub.ev.unlink(sub)
		}
	}
	w.nsubs = 0
	if w.mode == modeGeneral || w.timeout >= 0 {
		w.stopRest() // out of line: a plain Await has neither
	}
}

// stopRest is the part of stop for a general wait and a timeout.
func (w *Waker) stopRest() {
	if w.mode == modeGeneral {
		g := w.co.s.general[w.co]
		for i := 0; i < g.ngen; i++ {
			if sub := g.gen[i]; sub.ev != nil { // linked: fired ones were unlinked by their event
				sub.ev.unlink(sub)
			}
		}
	}
	if w.timeout >= 0 {
		w.co.timer.Stop() // a no-op when it fired
	}
}

// onResolve is the resolve callback (zend_async_waker_callback_resolve).
func (w *Waker) onResolve(value any, err error, ev *Event) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = value, err, ev
	w.wake()
}

// onCancel is the cancel callback (zend_async_waker_callback_cancel).
func (w *Waker) onCancel(_ error, ev *Event) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = nil, errCancelEvent, ev
	w.wake()
}

// onTimeout is the timeout callback (zend_async_waker_callback_timeout).
func (w *Waker) onTimeout() {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.triggered = nil, nil
	if w.mode == modeSleep {
		w.err = nil
	} else {
		w.err = ErrTimeout
	}
	w.wake()
}

// cancelWith wakes a waiting coroutine with err (a direct cancellation).
func (w *Waker) cancelWith(err error) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = nil, err, nil
	w.wake()
}

// wake ends the wait: stop the events and enqueue the coroutine.
func (w *Waker) wake() {
	w.stop()
	w.status = WakerQueued
	w.co.s.enqueue(w.co)
}
