package stackless

import "time"

// The general wait: the reference design's resume_when (docs/design.md §1,
// the waker). A task subscribes its waker to any number of events, each
// with a callback, then suspends once; the waker records every subscribed
// event that fires while the wait is active (the triggered-events set,
// Context.TriggeredEvents). Await and its variants are the fast path of the
// same machinery for one event (plus a cancellation event and a timeout)
// and stay as they are: embedded nodes, no callbacks to call. impl/stackful
// has the twin of this file (ResumeWhen, Suspend there).

// WakeFunc is a custom waker callback. It runs in the firing context (no
// switch; it must not block) when a subscribed event fires while the wait is
// active, or at the wait's start for an event that had already fired, and
// decides: done true ends the wait with result and werr (the first callback
// to end it wins; the other events are stopped at once); done false lets
// the wait go on.
type WakeFunc func(ev *Event, value any, err error) (done bool, result any, werr error)

type callbackKind uint8

const (
	cbNone    callbackKind = iota
	cbResolve              // end the wait with the event's outcome
	cbCancel               // end the wait with ErrCancelled
	cbCustom               // run fn
)

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
	ResolveCallback = Callback{kind: cbResolve}
	// CancelCallback ends the wait with ErrCancelled (the reference design's cancel
	// callback; AwaitWith's cancel event).
	CancelCallback = Callback{kind: cbCancel}
)

// CustomCallback returns a Callback that runs fn (see WakeFunc).
func CustomCallback(fn WakeFunc) Callback {
	if fn == nil {
		panic("stackless: CustomCallback(nil): pass the function that decides the wait")
	}
	return Callback{kind: cbCustom, fn: fn}
}

// genWait is a task's general-wait state, kept in Scheduler.general while
// the task has one (Waker.general) and reused from wait to wait.
type genWait struct {
	nodes    []*genNode
	n        int
	fired    []*Event
	building bool // ResumeWhen subscriptions are being collected
}

type genNode struct {
	node waitNode
	kind callbackKind
	fn   WakeFunc
}

func (s *Scheduler) genOf(co *Coro) *genWait {
	if s.general == nil {
		s.general = make(map[*Coro]*genWait)
	}
	g := s.general[co]
	if g == nil {
		g = &genWait{}
		s.general[co] = g
	}
	return g
}

// begin starts collecting a new general wait unless one is being collected.
func (c *Context) beginGeneral() (*Waker, *genWait) {
	co := c.cur
	g := c.s.genOf(co)
	w := &co.waker
	if !w.general || !g.building {
		w.prepare()
		w.general, w.extras = true, true
		g.n, g.fired, g.building = 0, g.fired[:0], true
	}
	return w, g
}

// ResumeWhen subscribes the task's waker to ev with cb, for the wait the
// task's next Suspend starts (resume_when). The subscriptions of one wait
// accumulate until Suspend, which starts them; a ResumeWhen not followed by
// Suspend leaves nothing behind. Subscriptions are reused from wait to wait.
func (c *Context) ResumeWhen(ev *Event, cb Callback) {
	if ev == nil {
		awaitNil()
	}
	if cb.kind == cbNone {
		panic("stackless: ResumeWhen with the zero Callback: pass ResolveCallback, CancelCallback or CustomCallback(fn)")
	}
	_, g := c.beginGeneral()
	if g.n == len(g.nodes) {
		g.nodes = append(g.nodes, &genNode{node: waitNode{co: c.cur}})
	}
	n := g.nodes[g.n]
	n.node.ev, n.kind, n.fn = ev, cb.kind, cb.fn
	g.n++
}

// Suspend waits on the events subscribed by ResumeWhen until a callback
// ends the wait, the timeout (if > 0) expires (ErrTimeout), or the task is
// cancelled; c.Result and c.Err give the outcome on the next Resume.
// Events that had already fired run their callbacks when the wait starts, in
// subscription order, and if one ends it the task is resumed at once (the
// fast path). A Suspend with no subscription and no timeout ends at once
// with an error: nothing could end it.
func (c *Context) Suspend(timeout time.Duration) Step {
	w, g := c.beginGeneral()
	g.building = false
	if timeout > 0 {
		w.setTimeout(timeout)
	}
	return Step{stepSuspend}
}

// startGeneral is Waker.start for a general wait (see startSlow).
func (s *Scheduler) startGeneral(w *Waker, co *Coro) bool {
	g := s.general[co]
	if g.n == 0 && w.timeout <= 0 {
		w.status, w.err = Result, errNothingToWaitFor
		return true
	}
	for i := 0; i < g.n; i++ {
		n := g.nodes[i]
		if ev := n.node.ev; ev.done {
			g.fired = append(g.fired, ev)
			if done, v, err := n.decide(ev, ev.result, ev.err); done {
				for j := 0; j < g.n; j++ {
					g.nodes[j].node.ev = nil // none is linked yet
				}
				w.status, w.triggered, w.result, w.err = Result, ev, v, err
				return true
			}
		}
	}
	if w.timeout > 0 {
		if err := s.r.open(s); err != nil {
			w.status, w.err = Result, err
			return true
		}
	}
	w.status, w.waited = Waiting, true
	for i := 0; i < g.n; i++ {
		n := &g.nodes[i].node
		if n.ev.done {
			n.ev = nil // decided above; not linked
		} else {
			n.ev.link(n)
		}
	}
	if w.timeout > 0 {
		s.addTimer(co, w.timeout, false)
	}
	return false
}

func (n *genNode) decide(ev *Event, value any, err error) (bool, any, error) {
	switch n.kind {
	case cbResolve:
		return true, value, err
	case cbCancel:
		return true, nil, ErrCancelled
	}
	return n.fn(ev, value, err)
}

// onGeneral is the firing of a general wait's node (the event has unlinked
// it): record the event, let the callback decide.
func (s *Scheduler) onGeneral(co *Coro, fired *waitNode) {
	if co.waker.status != Waiting {
		return
	}
	g := s.general[co]
	ev := fired.ev
	g.fired = append(g.fired, ev)
	for i := 0; i < g.n; i++ {
		if n := g.nodes[i]; &n.node == fired {
			if done, v, err := n.decide(ev, ev.result, ev.err); done {
				s.wake(co, ev, v, err)
			}
			return
		}
	}
}

// stopGeneral unlinks the general wait's nodes still linked.
func (s *Scheduler) stopGeneral(co *Coro) {
	g := s.general[co]
	for i := 0; i < g.n; i++ {
		if n := &g.nodes[i].node; n.ev != nil && n.linked() {
			n.ev.unlink(n)
		}
	}
}

// TriggeredEvents appends to dst the events that fired during the task's
// last wait (the reference design's triggered_events) and returns it: for a general
// wait (ResumeWhen, Suspend) every subscribed event that fired while it was
// active, in firing order, including those whose callbacks let the wait go
// on; for Await and its variants the one event that ended the wait (none
// after a timeout or a direct cancellation).
func (c *Context) TriggeredEvents(dst []*Event) []*Event {
	co := c.cur
	if co.waker.general {
		return append(dst, c.s.general[co].fired...)
	}
	if t := co.waker.triggered; t != nil {
		dst = append(dst, t)
	}
	return dst
}
