package stackful

import (
	"time"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/microtask"
)

// The blocking API. Every function acts on the running Scheduler and, where
// it blocks, on the current coroutine; calling one outside a coroutine of a
// running Scheduler (or from a microtask, for the blocking ones) panics with
// a message saying so.

// self returns the running scheduler and its current coroutine. The
// blocking calls follow it with the foreign-goroutine check (onOwnStack,
// then checkGoroutine), spelled at each call site rather than in here: self
// must stay within the inliner's budget.
func self(op string) (*Scheduler, *coroutine) {
	s := running
	if s == nil || s.current == nil {
		panic("stackful: " + op + " called outside a coroutine: call it from code run by Scheduler.Run")
	}
	if s.inMicrotask {
		panic("stackful: " + op + " called from a microtask: microtasks must not block")
	}
	return s, s.current
}

// onOwnStack is the inline half of the foreign-goroutine check: on asm, the
// caller's frame must lie in co's fiber stack [stackLo, stackLo+stackSpan)
// (copied into the record by bind). A coro context has span 0, so it always
// fails and checkGoroutine decides.
func (co *coroutine) onOwnStack() bool {
	var probe byte
	return uintptr(unsafe.Pointer(&probe))-co.stackLo < co.stackSpan
}

// scheduler returns the running scheduler, for the calls that need no
// current coroutine (spawning, microtasks, creating events on the reactor).
func scheduler(op string) *Scheduler {
	s := running
	if s == nil {
		panic("stackful: " + op + " called with no Scheduler running: call it from code run by Scheduler.Run")
	}
	// The foreign-goroutine check of the non-blocking calls is the inline
	// one only (asm): on coro, taking checkGoroutine's call at every spawn
	// measured about 10% of a spawn, so there only the blocking calls are
	// checked.
	if co := s.current; co != nil && s.asm != nil && !co.onOwnStack() {
		s.checkGoroutine(op, co)
	}
	return s
}

// checkGoroutine is the slow half of the check that the caller runs on co,
// the current coroutine, rather than on another goroutine that called the
// API while co runs: on asm the caller is not on co's fiber stack, so it is
// foreign; on coro the caller's goroutine must be co's Pull coroutine
// (fiber.Goroutine, one TLS load; where the fiber package has no switch it
// returns 0 for every goroutine and the check passes).
func (s *Scheduler) checkGoroutine(op string, co *coroutine) {
	if s.asm != nil || fiber.Goroutine() != co.ctx.g {
		panic("stackful: " + op + " called from a goroutine that is not running the Scheduler: " +
			"a Scheduler and its coroutines belong to the goroutine that called Run; " +
			"wake a coroutine from another goroutine with a Trigger (NewTrigger, Trigger.Fire)")
	}
}

// Go spawns fn as a new coroutine with Normal priority. It does not switch:
// the coroutine starts when the scheduler reaches it.
//
// It makes one call, spawn, which finds the running scheduler and checks
// the caller as scheduler does: Go then inlines into its caller, and a
// spawn is one call where it was three (Go, scheduler, spawn).
func Go(fn func()) Coroutine { return spawn("Go", fn, "", Normal).handle() }

// GoWith spawns fn as a coroutine with a name (used in deadlock reports) and
// a priority.
func GoWith(name string, p Priority, fn func()) Coroutine {
	return spawn("GoWith", fn, name, p).handle()
}

// schedulerMisuse panics with scheduler's refusal for op: no Scheduler
// running, or (asm) a caller off the current coroutine's fiber stack,
// which checkGoroutine reports. Out of line: spawn's check (scheduler's
// twin) calls it only to panic.
//
//go:noinline
func schedulerMisuse(op string) {
	s := running
	if s == nil {
		panic("stackful: " + op + " called with no Scheduler running: call it from code run by Scheduler.Run")
	}
	s.checkGoroutine(op, s.current)
}

// Current returns the running coroutine (the zero Coroutine outside one).
func Current() Coroutine {
	if running == nil || running.current == nil {
		return Coroutine{}
	}
	return running.current.handle()
}

// Yield lets every coroutine already queued run, then continues. It returns
// a pending cancellation error (and then does not yield).
func Yield() error {
	s, co := self("Yield")
	if !co.onOwnStack() { // see onOwnStack
		s.checkGoroutine("Yield", co)
	}
	if err := s.checkBlocking(co); err != nil {
		return err
	}
	co.waker.reset()
	co.waker.status = WakerQueued
	if !s.queue.tryPushBackRing(co) { // a yield always goes to the tail (the ring's: see tryPushBackRing)
		s.queue.pushBackGrow(co)
	}
	// s.suspend(co), inline (see Scheduler.suspend; twins in Await,
	// AwaitWith and Sleep), with pickNext's common case spelled out as in
	// Await (its twin: see there). co is queued, so the queue is not
	// empty; with co alone in it the pick is co and there is no switch.
	if co.handlers != nil {
		s.suspendHandlers(co, true)
	} else {
		var next *coroutine
		q := &s.queue
		if f := q.first; s.micro.Len()|s.loop.Active() == 0 && f != nil && f.waker.status != WakerIgnored {
			next = f // the head in coQueue's slot (PopFront's first case, its twin)
			q.first = nil
		} else if b := q.buf; s.micro.Len()|s.loop.Active() == 0 && f == nil && q.n != 0 &&
			b[q.head&(len(b)-1)].waker.status != WakerIgnored {
			i := q.head & (len(b) - 1)
			next = b[i]
			b[i] = nil // drop the reference for the collector
			q.head = (i + 1) & (len(b) - 1)
			if q.n--; q.n >= prefetchMin {
				s.prefetchAhead(0)
			}
		} else {
			next = s.pickNext()
		}
		if next != co {
			switch {
			case s.direct && next != nil && next.fc != nil:
				s.current = next
				s.stats.Switches++
				fiber.Switch(co.fc, next.fc)
			case s.direct && next != nil && s.startContext(next): // unstarted: see startContext
				s.current = next
				s.stats.Switches++
				fiber.Switch(co.fc, next.fc)
			case s.asm == nil:
				s.handoff, s.current = next, nil
				s.stats.Switches++
				s.stats.SchedulerSwitches++
				co.ctx.yield(struct{}{})
			default:
				s.switchFrom(co.ctx, next)
			}
		}
	}
	s.afterResume(co)
	co.waker.status = WakerNoStatus
	return nil
}

// Await waits until ev fires and returns its value or error. If ev has
// already fired it returns at once, without suspending (the fast path).
//
// It is AwaitWith(ev, nil, -1) spelled out (its twin: change both): with
// no cancel event and no timeout, the wait's set-up is the awaited
// event's subscription only, and the function's frame and the state kept
// across the switch are smaller than AwaitWith's. Every check and step is
// AwaitWith's, in the same order.
func Await(ev *Event) (any, error) {
	s, co := self("Await")
	if !co.onOwnStack() { // see onOwnStack
		s.checkGoroutine("Await", co)
	}
	if ev == nil {
		awaitNil()
	}
	if err := s.checkBlocking(co); err != nil {
		return nil, err
	}
	w := &co.waker
	if ev.fired { // fast path: no suspend, no switch
		s.stats.FastPaths++
		w.reset()
		w.status, w.result, w.err, w.triggered = WakerResult, ev.value, ev.err, ev
		return ev.value, ev.err
	}
	// w.reset, the subscription and w.start (no timer) spelled out, as in
	// AwaitWith, then s.suspend(co), inline (see Scheduler.suspend; twins
	// in AwaitWith, Yield and Sleep), with pickNext's common case spelled
	// out too (twins in Yield and Scheduler.contextMain): no microtask
	// queued, no live reactor handle (so no tick can be due), a queue that
	// is not empty, and a head that is not IGNORED; then the pick is the
	// head, popped here without a call (PopFront's steps, its twin: the
	// queue's slot first, coQueue.first, where a hand-off's one queued
	// coroutine is; else the ring's head), followed by a ring pop's
	// prefetch (pickNext's) when at least prefetchMin stay queued
	// (prefetchAhead inlines: a long queue no longer costs the call to
	// pickNext, whose frames also land on the suspending stack's colder
	// lines). In every other case pickNext decides, so the order of its
	// steps (microtasks, the tick, the pop, the prefetch, dropping an
	// IGNORED unstarted head) is unchanged.
	w.mode, w.timeout = modePlain, -1
	w.subs[0].kind = cbResolvePlain // the only subscription, no timer: see cbResolvePlain
	w.nsubs = 1
	w.status = WakerWaiting
	// The hand-off comes first: ev with no other subscriber (link's inline
	// case), no handlers, the pick's common case with the head in the
	// queue's slot, and a direct switch to a started head (the switch's
	// first case below). All its tests come first and all its pointer
	// stores (the outcome's reset, the subscription, ev.one, the slot,
	// s.current) after them in one block, so that the compiler tests the
	// write barrier once for them all, not once per statement group (six
	// tests per hand-off before; see BenchmarkPingPongCallSite). Linking
	// after the tests changes nothing: no code runs between them (no
	// microtask is queued, so none runs at this pick). Every other case
	// takes the general code below, which tests again.
	//
	// The lifecycle's wait (a coroutine spawns one and awaits it: Spawn
	// alive=1) shares those tests, with a head that has not started (fc
	// nil: on a direct scheduler, asm, only an unbound record's is) and a
	// spare context to start it on: then the spare is restarted and bound
	// here, newContextFor's spare case spelled out (its twin), and the
	// switch is the same. The general code below would make the same
	// steps (the link, the pick, startContext's case of the switch) after
	// testing all of this again, and a call to newContextFor.
	if f := s.queue.first; ev.one == nil && ev.head == nil && co.handlers == nil &&
		s.micro.Len()|s.loop.Active() == 0 && f != nil && f.waker.status != WakerIgnored &&
		s.direct && f != co {
		if f.fc != nil {
			w.triggered, w.result, w.err = nil, nil, nil
			w.subs[0].co, w.subs[0].ev = co, ev
			ev.one = &w.subs[0]
			s.queue.first, s.current = nil, f
			s.stats.Switches++
			fiber.Switch(co.fc, f.fc)
			s.afterResume(co)
			w.status = WakerResult
			return w.result, w.err
		}
		if b := s.asm; b.spare != nil {
			// Every pointer store before the restart, in one block: bind
			// spelled out (its twin; its test for a coro context splits
			// the block, and c is an asm context), the restart's own
			// test last (a failed restart is a scheduler bug, which
			// panics).
			c := b.spare
			b.spare = nil
			w.triggered, w.result, w.err = nil, nil, nil
			w.subs[0].co, w.subs[0].ev = co, ev
			ev.one = &w.subs[0]
			s.queue.first, s.current = nil, f
			c.co = f
			f.ctx, f.fc = c, &c.fiber.fc
			f.stackLo, f.stackSpan = c.lo, c.span
			if err := c.fiber.fc.Restart(b.entry); err != nil {
				spareBroken(err)
			}
			s.stats.ContextsCreated++
			s.stats.Switches++
			fiber.Switch(co.fc, f.fc)
			s.afterResume(co)
			w.status = WakerResult
			return w.result, w.err
		}
	}
	w.triggered, w.result, w.err = nil, nil, nil
	w.subs[0].co = co
	ev.link(&w.subs[0])
	if co.handlers != nil {
		s.suspendHandlers(co, false)
	} else {
		var next *coroutine
		q := &s.queue
		if f := q.first; s.micro.Len()|s.loop.Active() == 0 && f != nil && f.waker.status != WakerIgnored {
			next = f // the head in coQueue's slot (PopFront's first case, its twin)
			q.first = nil
		} else if b := q.buf; s.micro.Len()|s.loop.Active() == 0 && f == nil && q.n != 0 &&
			b[q.head&(len(b)-1)].waker.status != WakerIgnored {
			i := q.head & (len(b) - 1)
			next = b[i]
			b[i] = nil // drop the reference for the collector
			q.head = (i + 1) & (len(b) - 1)
			if q.n--; q.n >= prefetchMin {
				s.prefetchAhead(0)
			}
		} else {
			next = s.pickNext()
		}
		if next != co {
			switch {
			case s.direct && next != nil && next.fc != nil:
				s.current = next
				s.stats.Switches++
				fiber.Switch(co.fc, next.fc)
			case s.direct && next != nil && s.startContext(next): // unstarted: see startContext
				s.current = next
				s.stats.Switches++
				fiber.Switch(co.fc, next.fc)
			case s.asm == nil:
				s.handoff, s.current = next, nil
				s.stats.Switches++
				s.stats.SchedulerSwitches++
				co.ctx.yield(struct{}{})
			default:
				s.switchFrom(co.ctx, next)
			}
		}
	}
	s.afterResume(co)
	w.status = WakerResult
	return w.result, w.err
}

// AwaitTimeout is Await failing with ErrTimeout after d.
func AwaitTimeout(ev *Event, d time.Duration) (any, error) {
	if d < 0 {
		d = 0
	}
	return AwaitWith(ev, nil, d)
}

// AwaitWith waits until ev fires, cancel (if not nil) fires, or timeout (if
// not negative) passes, whichever comes first; the others are then ignored.
// A fired cancel yields an error wrapping ErrCancelled, a timeout
// ErrTimeout. Await is its plain case spelled out (its twin).
func AwaitWith(ev, cancel *Event, timeout time.Duration) (any, error) {
	s, co := self("Await")
	if !co.onOwnStack() { // see onOwnStack
		s.checkGoroutine("Await", co)
	}
	if ev == nil {
		awaitNil()
	}
	if err := s.checkBlocking(co); err != nil {
		return nil, err
	}
	w := &co.waker
	if ev.fired { // fast path: no suspend, no switch
		s.stats.FastPaths++
		w.reset()
		w.status, w.result, w.err, w.triggered = WakerResult, ev.value, ev.err, ev
		return ev.value, ev.err
	}
	if cancel != nil && cancel.fired {
		s.stats.FastPaths++
		w.reset()
		w.status, w.err, w.triggered = WakerResult, errCancelEvent, cancel
		return nil, errCancelEvent
	}
	// w.reset (its twin) and the subscriptions (zend_async_resume_when
	// with the resolve and cancel callbacks) spelled out: the waker is between
	// waits, so its first subscriptions are free, and a general wait
	// (ResumeWhen) keeps its own in Scheduler.general.
	w.status, w.mode = WakerNoStatus, modePlain
	w.triggered, w.result, w.err = nil, nil, nil
	// The awaited event's subscription is cbResolvePlain when it will be
	// the wait's only one and no timer runs (Await's case), cbResolve
	// otherwise: see cbResolvePlain.
	w.subs[0].kind, w.subs[0].co = cbResolve, co
	if cancel == nil && timeout < 0 {
		w.subs[0].kind = cbResolvePlain
	}
	ev.link(&w.subs[0])
	w.nsubs = 1
	if cancel != nil {
		w.subs[1].kind, w.subs[1].co = cbCancel, co
		cancel.link(&w.subs[1])
		w.nsubs = 2
	}
	w.timeout = timeout
	w.start(s)
	// s.suspend(co), inline (see Scheduler.suspend; twins in Yield,
	// Await and Sleep).
	if co.handlers != nil {
		s.suspendHandlers(co, false)
	} else if next := s.pickNext(); next != co {
		switch {
		case s.direct && next != nil && next.fc != nil:
			s.current = next
			s.stats.Switches++
			fiber.Switch(co.fc, next.fc)
		case s.direct && next != nil && s.startContext(next): // unstarted: see startContext
			s.current = next
			s.stats.Switches++
			fiber.Switch(co.fc, next.fc)
		case s.asm == nil:
			s.handoff, s.current = next, nil
			s.stats.Switches++
			s.stats.SchedulerSwitches++
			co.ctx.yield(struct{}{})
		default:
			s.switchFrom(co.ctx, next)
		}
	}
	s.afterResume(co)
	w.status = WakerResult
	return w.result, w.err
}

// awaitNil is Await's misuse panic, out of line to keep AwaitWith small.
func awaitNil() {
	panic("stackful: Await on a nil *Event: pass the event to wait for (NewEvent)")
}

// Sleep suspends the coroutine for d (through a reactor timer).
func Sleep(d time.Duration) error {
	s, co := self("Sleep")
	if !co.onOwnStack() { // see onOwnStack
		s.checkGoroutine("Sleep", co)
	}
	if err := s.checkBlocking(co); err != nil {
		return err
	}
	if d < 0 {
		d = 0
	}
	w := &co.waker
	w.reset()
	w.timeout, w.mode = d, modeSleep
	w.start(s)
	// s.suspend(co), inline (see Scheduler.suspend; twin of Yield's and
	// AwaitWith's copies): a sleeper resumes with three frames less to
	// return through (suspend, switchFrom, transfer).
	if co.handlers != nil {
		s.suspendHandlers(co, false)
	} else if next := s.pickNext(); next != co {
		switch {
		case s.direct && next != nil && next.fc != nil:
			s.current = next
			s.stats.Switches++
			fiber.Switch(co.fc, next.fc)
		case s.direct && next != nil && s.startContext(next): // unstarted: see startContext
			s.current = next
			s.stats.Switches++
			fiber.Switch(co.fc, next.fc)
		case s.asm == nil:
			s.handoff, s.current = next, nil
			s.stats.Switches++
			s.stats.SchedulerSwitches++
			co.ctx.yield(struct{}{})
		default:
			s.switchFrom(co.ctx, next)
		}
	}
	s.afterResume(co)
	w.status = WakerResult
	return w.err
}

// QueueMicrotask queues fn to run before the next switch (see Microtask).
func QueueMicrotask(fn func() error) {
	m := NewMicrotask(fn, nil)
	EnqueueMicrotask(m)
	m.Release()
}

// EnqueueMicrotask queues m, which holds a reference while queued. It
// panics if m has no reference left (it was released: Retain it while it may
// be enqueued).
func EnqueueMicrotask(m *Microtask) {
	s := scheduler("EnqueueMicrotask")
	if m == nil {
		panic("stackful: EnqueueMicrotask(nil): pass a Microtask made by NewMicrotask")
	}
	if err := microtask.Check(m); err != nil {
		panic("stackful: EnqueueMicrotask: " + err.Error())
	}
	s.micro.Push(m)
}

// AddSwitchHandler binds h to the current coroutine or, called while no
// Scheduler is running, to the main coroutine of the next Run, which calls
// it with Enter when main starts (the reference design's form: "the current
// coroutine, or main if the scheduler has not started yet"; docs/design.md
// §1, switch handlers). Before Run it must be called from the goroutine
// that calls Run; unlike Scheduler.AddMainStartHandler it binds h to one
// Run only.
func AddSwitchHandler(h SwitchHandler) {
	if h == nil {
		panic("stackful: AddSwitchHandler(nil)")
	}
	if running == nil {
		preRunHandlers = append(preRunHandlers, h)
		return
	}
	s, co := self("AddSwitchHandler")
	if !co.onOwnStack() {
		s.checkGoroutine("AddSwitchHandler", co)
	}
	co.addHandlers(h)
}

// Shutdown starts a graceful shutdown of the running scheduler: every live
// coroutine is cancelled (a waiting one wakes with an error wrapping
// ErrCancelled, the others get it from their next blocking call, the caller
// included); coroutines then run their cleanup; whatever is still suspended
// when nothing can run is unwound (its defers run) in final cleanup, and
// Run returns. A requested shutdown is not an error.
func Shutdown() { scheduler("Shutdown").shutdown(errShutdownCancel) }

// checkBlocking is the entry check of every blocking call: an unwinding
// coroutine's calls fail at once, a killed one starts unwinding, a pending
// cancellation is delivered (once).
func (s *Scheduler) checkBlocking(co *coroutine) error {
	switch {
	case co.unwinding:
		return errFinalCleanup
	case co.killed:
		co.unwinding = true
		panic(killSignal{})
	case co.cancelPending:
		err := co.cancelErr
		co.cancelPending, co.cancelErr = false, nil
		return err
	}
	return nil
}

// afterResume unwinds a coroutine that final cleanup resumed.
func (s *Scheduler) afterResume(co *coroutine) {
	if co.killed && !co.unwinding {
		co.unwinding = true
		panic(killSignal{})
	}
}
