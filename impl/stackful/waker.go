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

// waker links a suspended coroutine to the events it waits for and collects
// the outcome of the wait (docs/design.md §1, the waker). It is embedded in
// the coroutine's record and reset for every wait, so waiting never
// allocates; users see it through the Waker handle.
//
// The first trigger wins: the standard callbacks (resolve, cancel, timeout)
// act only while the waker is WAITING; the winner stores the outcome,
// unsubscribes every event, stops the timer and enqueues the coroutine
// (QUEUED). Later triggers find it QUEUED and are ignored.
type waker struct {
	// What a Yield resets and a resume reads come first: with the waker at
	// byte 48 of the record they end in its line 1, beside the record's
	// own hot fields in line 0 (see coroutine; TestPrefetchedRecordLines).
	// status and nsubs sit beside the one-byte fields below, sharing one
	// word: 16 bytes less per record, which keeps it in the 320-byte size
	// class (TestCoroutineRecordSize).
	status    WakerStatus
	nsubs     uint8         // used entries of subs (at most maxWakerEvents)
	mode      waitMode      // what kind of wait: plain (Await...), Sleep, or general (ResumeWhen)
	building  bool          // ResumeWhen subscriptions are being collected for the next Suspend
	hasGen    bool          // Scheduler.general holds this coroutine's general-wait state
	timeout   time.Duration // < 0: no timeout
	triggered *Event        // the event that ended the last wait; nil for a timeout or a direct cancellation
	result    any
	err       error

	co   *coroutine
	subs [maxWakerEvents]subscription // the awaited events
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

// Waker is a handle to a coroutine's waker (Coroutine.Waker): what its last
// or current wait subscribed to and how it ended. Like Coroutine, it is a
// value that stays valid after the coroutine finishes, and then reads as a
// finished coroutine's waker does (NO_STATUS, no events, no outcome), also
// once the coroutine's record has been reused.
type Waker struct{ c Coroutine }

// w returns the waker while the record belongs to the handle's coroutine.
func (h Waker) w(op string) *waker {
	if co := h.c.live(op); co != nil {
		return &co.waker
	}
	return nil
}

// Status returns the waker's state.
func (h Waker) Status() WakerStatus {
	if w := h.w("Waker.Status"); w != nil {
		return w.status
	}
	return WakerNoStatus
}

// Triggered returns the event that ended the last wait (nil if a timeout or a
// direct cancellation ended it).
func (h Waker) Triggered() *Event {
	if w := h.w("Waker.Triggered"); w != nil {
		return w.triggered
	}
	return nil
}

// Outcome returns the result and error of the last wait.
func (h Waker) Outcome() (any, error) {
	if w := h.w("Waker.Outcome"); w != nil {
		return w.result, w.err
	}
	return nil, nil
}

// Events returns how many events the current wait subscribed to.
func (h Waker) Events() int {
	if w := h.w("Waker.Events"); w != nil {
		return int(w.nsubs)
	}
	return 0
}

// reset prepares the waker for a new wait (zend_async_waker_new).
// AwaitWith spells out the same stores with its subscriptions (its twin:
// change both).
func (w *waker) reset() {
	w.status = WakerNoStatus
	w.nsubs = 0
	w.timeout = -1
	w.mode = modePlain
	w.triggered, w.result, w.err = nil, nil, nil
}

// start starts the waker's events when the coroutine suspends
// (start_waker_events): subscriptions are already live, the timer starts now.
func (w *waker) start(s *Scheduler) {
	w.status = WakerWaiting
	if w.timeout >= 0 {
		w.startTimer(s) // out of line: keeps start inlinable for a plain Await
	}
}

// startTimer arms the waker's timeout.
func (w *waker) startTimer(s *Scheduler) {
	// A fresh base, not the last tick's cached time: a sleep never wakes
	// early relative to the call (one clock read per timed wait).
	co := w.co
	if !co.timerBound {
		// Bound here rather than at spawn: most coroutines never wait
		// with a timeout, and the handler is an interface store.
		co.timer.Init(s.loop, (*coTimer)(co))
		co.timerBound = true
	}
	co.timer.StartFresh(w.timeout) // UpdateTime and Start in one call (impl/stackless addTimer, its twin)
	s.clockFresh = true            // pickNext reuses this reading
}

// stop unsubscribes every event and stops the timer.
func (w *waker) stop() {
	for i := 0; i < int(w.nsubs); i++ {
		if sub := &w.subs[i]; sub.ev != nil {
			sub.ev.remove(sub)
		}
	}
	w.nsubs = 0
	if w.mode == modeGeneral || w.timeout >= 0 {
		w.stopRest() // out of line: a plain Await has neither
	}
}

// stopRest is the part of stop for a general wait and a timeout.
func (w *waker) stopRest() {
	if w.mode == modeGeneral {
		g := w.co.s.general[w.co]
		for i := 0; i < g.ngen; i++ {
			if sub := g.gen[i]; sub.ev != nil { // linked: fired ones were unlinked by their event
				sub.ev.remove(sub)
			}
		}
	}
	if w.timeout >= 0 {
		w.co.timer.Stop() // a no-op when it fired
	}
}

// onResolve is the resolve callback (zend_async_waker_callback_resolve).
func (w *waker) onResolve(value any, err error, ev *Event) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = value, err, ev
	w.wake()
}

// onCancel is the cancel callback (zend_async_waker_callback_cancel).
func (w *waker) onCancel(_ error, ev *Event) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = nil, errCancelEvent, ev
	w.wake()
}

// onTimeout is the timeout callback (zend_async_waker_callback_timeout).
func (w *waker) onTimeout() {
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
func (w *waker) cancelWith(err error) {
	if w.status != WakerWaiting {
		return
	}
	w.result, w.err, w.triggered = nil, err, nil
	w.wake()
}

// wake ends the wait: stop the events and enqueue the coroutine.
//
// The common wake, a plain wait on one event whose firing (Event.fire)
// has just unlinked the only subscription, has nothing to stop, and a
// Normal coroutine goes to the tail of a queue with room: both are done
// here without a call (stop and enqueue do not inline), the rest goes
// through them. The same steps as stop and enqueue, in the same order.
// Event.fire's fast path and fireAll's cbResolvePlain case spell out the first
// branch again (its twins).
func (w *waker) wake() {
	if w.nsubs == 1 && w.subs[0].ev == nil && w.mode == modePlain && w.timeout < 0 {
		w.nsubs = 0 // stop: the one subscription is unlinked, no timer
	} else {
		w.stop()
	}
	w.status = WakerQueued
	co := w.co
	if co.priority != High && co.s.queue.tryPushBack(co) {
		return // enqueue's Normal case, inline
	}
	co.s.enqueue(co)
}
