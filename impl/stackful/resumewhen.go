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
	_, g := s.beginGeneral(co, true)
	if g.ngen == len(g.gen) {
		g.gen = append(g.gen, &subscription{co: co})
		g.genFn = append(g.genFn, nil)
	}
	sub := g.gen[g.ngen]
	sub.kind, sub.ev = cb.kind, ev // ev is set again by link; kept here until Suspend
	g.genFn[g.ngen] = cb.fn
	g.ngen++
}

// beginGeneral returns co's waker and general-wait state, starting a new
// general wait unless ResumeWhen is collecting one; building says whether
// more subscriptions follow (ResumeWhen) or the wait starts now (Suspend).
func (s *Scheduler) beginGeneral(co *coroutine, building bool) (*waker, *genWait) {
	w := &co.waker
	g := s.general[co]
	if g == nil {
		if s.general == nil {
			s.general = make(map[*coroutine]*genWait)
		}
		g = &genWait{}
		s.general[co] = g
		w.hasGen = true
	}
	if w.mode != modeGeneral || !w.building {
		w.reset()
		w.mode = modeGeneral
		g.ngen = 0
		g.fired = g.fired[:0]
	}
	w.building = building
	return w, g
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
	w, g := s.beginGeneral(co, false)
	if g.ngen == 0 && timeout < 0 {
		return nil, errNothingToWaitFor
	}
	// Already fired events: their callbacks decide before anything starts.
	for i := 0; i < g.ngen; i++ {
		sub := g.gen[i]
		if ev := sub.ev; ev.fired {
			g.fired = append(g.fired, ev)
			if done, v, err := g.decide(i, ev, ev.value, ev.err); done {
				for j := 0; j < g.ngen; j++ {
					g.gen[j].ev = nil // none is linked yet
				}
				s.stats.FastPaths++
				w.status, w.result, w.err, w.triggered = WakerResult, v, err, ev
				return v, err
			}
		}
	}
	for i := 0; i < g.ngen; i++ {
		if sub := g.gen[i]; !sub.ev.fired {
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
func (g *genWait) decide(i int, ev *Event, value any, err error) (bool, any, error) {
	switch g.gen[i].kind {
	case cbGenResolve:
		return true, value, err
	case cbGenCancel:
		return true, nil, errCancelEvent
	}
	return g.genFn[i](ev, value, err)
}

// onGeneral is the firing of a general wait's subscription (Event.fire has
// unlinked it): record the event, let the callback decide.
func (w *waker) onGeneral(sub *subscription, ev *Event, value any, err error) {
	if w.status != WakerWaiting {
		return
	}
	g := w.co.s.general[w.co]
	g.fired = append(g.fired, ev)
	for i := 0; i < g.ngen; i++ {
		if g.gen[i] == sub {
			if done, v, werr := g.decide(i, ev, value, err); done {
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
func (h Waker) TriggeredEvents(dst []*Event) []*Event {
	w := h.w("Waker.TriggeredEvents")
	if w == nil {
		return dst // finished: retire reset the waker
	}
	if w.mode == modeGeneral {
		return append(dst, w.co.s.general[w.co].fired...)
	}
	if w.triggered != nil {
		dst = append(dst, w.triggered)
	}
	return dst
}
