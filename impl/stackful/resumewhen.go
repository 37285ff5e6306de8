package stackful

import "time"

// The general wait: the reference design's resume_when (docs/design.md §1,
// the waker). A coroutine subscribes its waker to any number of events,
// each with a callback, then suspends once; the waker records every
// subscribed event that fires while the wait is active (the triggered-events
// set, TriggeredEvents). Await, AwaitTimeout and AwaitWith are the fast path
// of the same machinery for one event (plus a cancellation event and a
// timeout) and stay as they are: embedded subscriptions, no slices, no
// callbacks to call.

// WakeFunc is a custom waker callback. It runs in the firing context (no
// switch; it must not block) when a subscribed event fires while the wait is
// active, or at Suspend for an event that had already fired, and decides:
// done true ends the wait with result and err (the first callback to end it
// wins; later firings are still recorded in the triggered set until the
// wait's events are stopped, which happens at once); done false lets the
// wait go on.
type WakeFunc func(ev *Event, value any, err error) (done bool, result any, werr error)

// Callback is the callback a ResumeWhen subscription runs: one of the
// standard ones (ResolveCallback, CancelCallback) or a custom WakeFunc
// (CustomCallback).
type Callback struct {
	kind callbackKind
	fn   WakeFunc
}

var (
	// ResolveCallback ends the wait with the event's value and error (the
	// reference design's resolve callback; what Await does).
	ResolveCallback = Callback{kind: cbGenResolve}
	// CancelCallback ends the wait with an error wrapping ErrCancelled
	// (the reference design's cancel callback; AwaitWith's cancel event).
	CancelCallback = Callback{kind: cbGenCancel}
)

// CustomCallback returns a Callback that runs fn (see WakeFunc).
func CustomCallback(fn WakeFunc) Callback {
	if fn == nil {
		panic("stackful: CustomCallback(nil): pass the function that decides the wait")
	}
	return Callback{kind: cbCustom, fn: fn}
}

// ResumeWhen subscribes the current coroutine's waker to ev with cb, for its
// next Suspend (resume_when). The subscriptions of one wait accumulate until
// Suspend; they are started (linked into their events) only by Suspend, so
// a ResumeWhen not followed by Suspend leaves nothing behind (the next
// blocking call starts afresh). The same event may be subscribed more than
// once. Subscriptions are reused from wait to wait: a coroutine's general
// waits allocate only while it subscribes to more events than ever before.
func ResumeWhen(ev *Event, cb Callback) {
	s, co := self("ResumeWhen")
	if !co.onOwnStack() {
		s.checkGoroutine("ResumeWhen", co)
	}
	if ev == nil {
		awaitNil()
	}
	if cb.kind != cbGenResolve && cb.kind != cbGenCancel && cb.kind != cbCustom {
		panic("stackful: ResumeWhen with the zero Callback: pass ResolveCallback, CancelCallback or CustomCallback(fn)")
	}
	w := &co.waker
	if w.mode != modeGeneral || !w.building {
		w.reset()
		w.mode, w.building = modeGeneral, true
		w.ngen = 0
		w.fired = w.fired[:0]
	}
	if w.ngen == len(w.gen) {
		w.gen = append(w.gen, &subscription{co: co})
		w.genFn = append(w.genFn, nil)
	}
	sub := w.gen[w.ngen]
	sub.kind, sub.ev = cb.kind, ev // ev is set again by link; kept here until Suspend
	w.genFn[w.ngen] = cb.fn
	w.ngen++
}

// Suspend starts the events subscribed by ResumeWhen and suspends the
// coroutine until a callback ends the wait, the timeout (if not negative)
// passes (ErrTimeout), or the coroutine is cancelled; it returns the wait's
// result and error. Events that had already fired run their callbacks at
// once, in subscription order, and if one ends the wait the coroutine does
// not suspend (the fast path). Suspend with no ResumeWhen before it waits
// only for the timeout (a negative one then fails at once: nothing could
// end the wait).
func Suspend(timeout time.Duration) (any, error) {
	s, co := self("Suspend")
	if !co.onOwnStack() {
		s.checkGoroutine("Suspend", co)
	}
	if err := s.checkBlocking(co); err != nil {
		return nil, err
	}
	w := &co.waker
	if w.mode != modeGeneral || !w.building {
		w.reset()
		w.mode = modeGeneral
		w.ngen = 0
		w.fired = w.fired[:0]
	}
	w.building = false
	if w.ngen == 0 && timeout < 0 {
		return nil, errNothingToWaitFor
	}
	// Already fired events: their callbacks decide before anything starts.
	for i := 0; i < w.ngen; i++ {
		sub := w.gen[i]
		if ev := sub.ev; ev.fired {
			w.fired = append(w.fired, ev)
			if done, v, err := w.decide(i, ev, ev.value, ev.err); done {
				for j := 0; j < w.ngen; j++ {
					w.gen[j].ev = nil // none is linked yet
				}
				s.stats.FastPaths++
				w.status, w.result, w.err, w.triggered = WakerResult, v, err, ev
				return v, err
			}
		}
	}
	for i := 0; i < w.ngen; i++ {
		if sub := w.gen[i]; !sub.ev.fired {
			sub.ev.link(sub)
		} else {
			sub.ev = nil // decided above; not linked
		}
	}
	w.timeout = timeout
	w.start(s)
	s.suspend(co)
	s.afterResume(co)
	w.status = WakerResult
	return w.result, w.err
}

// decide runs subscription i's callback for ev's outcome.
func (w *Waker) decide(i int, ev *Event, value any, err error) (bool, any, error) {
	switch w.gen[i].kind {
	case cbGenResolve:
		return true, value, err
	case cbGenCancel:
		return true, nil, errCancelEvent
	}
	return w.genFn[i](ev, value, err)
}

// onGeneral is the firing of a general wait's subscription (Event.fire has
// unlinked it): record the event, let the callback decide.
func (w *Waker) onGeneral(sub *subscription, ev *Event, value any, err error) {
	if w.status != WakerWaiting {
		return
	}
	w.fired = append(w.fired, ev)
	for i := 0; i < w.ngen; i++ {
		if w.gen[i] == sub {
			if done, v, werr := w.decide(i, ev, value, err); done {
				w.result, w.err, w.triggered = v, werr, ev
				w.wake()
			}
			return
		}
	}
}

// TriggeredEvents appends to dst the events that fired during the
// coroutine's last wait (the reference design's triggered_events) and returns it: for a
// general wait (ResumeWhen, Suspend) every subscribed event that fired while
// it was active, in firing order, including those whose callbacks let the
// wait go on; for Await and its variants the one event that ended the wait
// (none after a timeout or a direct cancellation).
func (w *Waker) TriggeredEvents(dst []*Event) []*Event {
	if w.mode == modeGeneral {
		return append(dst, w.fired...)
	}
	if w.triggered != nil {
		dst = append(dst, w.triggered)
	}
	return dst
}
