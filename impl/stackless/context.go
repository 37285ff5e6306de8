package stackless

import (
	"errors"
	"fmt"
	"time"
)

// Step is what Resume returns: the task finished, failed, yields, or waits on
// the events its waker was given. Build it only with the Context helpers;
// the zero Step is invalid and fails the task with a clear error.
type Step struct {
	kind stepKind
}

type stepKind uint8

const (
	stepInvalid stepKind = iota // zero value: a Resume that forgot to return a helper's Step
	stepDone                    // finished normally
	stepFail                    // finished with the error in Context.failErr
	stepYield                   // runnable again, behind the other runnable tasks
	stepSuspend                 // waits on the waker's events (or a fast-path result)
)

func (s Step) String() string {
	switch s.kind {
	case stepDone:
		return "Done"
	case stepFail:
		return "Fail"
	case stepYield:
		return "Yield"
	case stepSuspend:
		return "Suspend"
	}
	return "InvalidStep"
}

// Errors delivered to a task through [Context.Err] after a wait.
var (
	// ErrTimeout: the wait's timeout expired before any awaited event fired.
	ErrTimeout = errors.New("stackless: wait timed out")
	// ErrCancelled: the task was cancelled (Scheduler.Cancel, a cancellation
	// event, or a graceful shutdown). The task should run its cleanup states
	// and finish.
	ErrCancelled = errors.New("stackless: task cancelled")
)

// Context is handed to every Resume call. It belongs to the scheduler and is
// valid only during that call: a task must not keep it.
//
// Its helpers prepare the task's waker and return the Step that Resume must
// return, so a wait reads as one statement:
//
//	t.state = 2
//	return c.Await(t.ready)
//
// The awaited events are started only after Resume has returned (the reference design's
// "events created inactive, started at suspend"). If one has already fired,
// the task is resumed again at once, without a queue round trip.
type Context struct {
	s       *Scheduler
	cur     *Coro
	failErr error // set by Fail, consumed by the scheduler
}

// Task returns the task being resumed.
func (c *Context) Task() Task { return c.cur.task }

// Scheduler returns the scheduler running the task.
func (c *Context) Scheduler() *Scheduler { return c.s }

// Err returns the outcome of the task's last wait: nil if an awaited event
// was resolved, the event's error if it was rejected, ErrTimeout or
// ErrCancelled. A cancellation (Scheduler.Cancel, Shutdown) is delivered as
// ErrCancelled: a waiting task is woken with it; a queued or running task gets
// it from its next blocking op (see Scheduler.Cancel).
func (c *Context) Err() error { return c.cur.waker.err }

// Result returns the value the awaited event was resolved with.
func (c *Context) Result() any { return c.cur.waker.result }

// Triggered returns the event that ended the last wait (nil after a timeout,
// a yield or a cancellation not caused by a cancellation event).
func (c *Context) Triggered() *Event { return c.cur.waker.triggered }

// Cancelled reports whether the last wake-up delivered a cancellation.
func (c *Context) Cancelled() bool { return c.cur.waker.err == ErrCancelled }

// Unwinding reports whether the final phase of a shutdown is unwinding the
// task: it must run its cleanup and finish; every wait and yield returns
// ErrCancelled at once.
func (c *Context) Unwinding() bool { return c.cur.unwinding }

// Done finishes the task.
func (c *Context) Done() Step { return Step{stepDone} }

// Fail finishes the task with err. A task error starts a graceful shutdown
// (every other task is cancelled so its cleanup runs) and Run returns it,
// wrapped in a *TaskError.
func (c *Context) Fail(err error) Step {
	if err == nil {
		err = errors.New("stackless: Fail called with a nil error")
	}
	c.failErr = err
	return Step{stepFail}
}

// Yield makes the task runnable again at the tail of the run queue, whatever
// its priority. If no other task is runnable it continues without a switch.
func (c *Context) Yield() Step {
	c.cur.waker.prepare()
	return Step{stepYield}
}

// Await suspends the task until ev is resolved or rejected. If ev is already
// done the task does not suspend: it is resumed at once (fast path).
//
// Await is half of every hand-off, so it is two stores that inline into the
// task's Resume: the event, and plain, which tells the start that the
// waker was not prepared. The start (Scheduler.resume, Waker.startSlow)
// then does what prepare would have: it panics on a nil ev and drops the
// previous wait's extras. The previous wait's outcome is not cleared
// either: every way this wait ends stores all three outcome fields.
func (c *Context) Await(ev *Event) Step {
	w := &c.cur.waker
	w.nodes[slotEvent].ev = ev
	w.plain = true
	return Step{stepSuspend}
}

// TryAwait is the fast path of Await taken inline, as a compiler-lowered
// state machine polls a ready future without returning: if the wait would
// end at once (ev has fired, or a cancellation is pending, or the task is
// unwinding) it consumes it exactly as Await would, sets Err, Result and
// Triggered, and returns true; the task carries on in the same Resume.
// Otherwise it returns false and changes nothing: return c.Await(ev).
//
//	if !c.TryAwait(ev) {
//		t.state = 3
//		return c.Await(ev)
//	}
//	fallthrough // to state 3, which reads c.Result()
func (c *Context) TryAwait(ev *Event) bool {
	co := c.cur
	if co.cancelPending || co.unwinding {
		return c.tryAwaitSlow(ev)
	}
	if ev == nil {
		awaitNil()
	}
	if !ev.done {
		return false
	}
	w := &co.waker
	if w.extras {
		w.prepare()
	}
	w.status, w.triggered, w.result, w.err = Result, ev, ev.result, ev.err
	c.s.stats.FastPaths++
	return true
}

// awaitNil is the nil-event panic of the await helpers, out of line.
func awaitNil() { panic("stackless: Await on a nil *Event: pass the event to wait for") }

// tryAwaitSlow delivers a pending cancellation (or the unwinding) through
// the regular start path.
func (c *Context) tryAwaitSlow(ev *Event) bool {
	co := c.cur
	w := co.waker.prepare()
	w.subscribe(slotEvent, ev)
	if !w.start(c.s, co) {
		panic("stackless: internal error: TryAwait's wait did not end at once")
	}
	c.s.stats.FastPaths++
	return true
}

// AwaitTimeout is Await with a timeout: after d without ev firing the task
// wakes with ErrTimeout. A timeout <= 0 means no timeout.
func (c *Context) AwaitTimeout(ev *Event, d time.Duration) Step {
	w := c.cur.waker.prepare()
	w.subscribe(slotEvent, ev)
	w.setTimeout(d)
	return Step{stepSuspend}
}

// AwaitWith is the general wait: ev (may be nil: wait only for the
// cancellation or the timeout), an optional cancellation event whose firing
// wakes the task with ErrCancelled, and an optional timeout (<= 0: none).
func (c *Context) AwaitWith(ev, cancel *Event, timeout time.Duration) Step {
	w := c.cur.waker.prepare()
	if ev != nil {
		w.subscribe(slotEvent, ev)
	}
	if cancel != nil {
		w.subscribe(slotCancel, cancel)
	}
	w.setTimeout(timeout)
	return Step{stepSuspend}
}

// Sleep suspends the task for d, measured on the reactor's monotonic clock
// with nanosecond deadlines. Sleep(0) (or less) still goes through a timer,
// which fires at the next reactor tick: it suspends, unlike Yield.
func (c *Context) Sleep(d time.Duration) Step {
	w := c.cur.waker.prepare()
	w.setTimeout(max(d, 1))
	w.sleeping = true
	return Step{stepSuspend}
}

// Now returns the reactor's monotonic clock in ns (see Scheduler.Now).
func (c *Context) Now() int64 { return c.s.Now() }

// SleepUntil suspends the task until the reactor's clock (see Now) reaches
// deadline. A deadline in the past fires at the next reactor tick.
func (c *Context) SleepUntil(deadline int64) Step {
	w := c.cur.waker.prepare()
	w.timeout = max(deadline, 1)
	w.absolute, w.sleeping, w.extras = true, true, true
	return Step{stepSuspend}
}

// Spawn starts t as a normal-priority task on the same scheduler.
func (c *Context) Spawn(t Task) error { return c.s.Spawn(t) }

// SpawnPriority starts t with priority p on the same scheduler.
func (c *Context) SpawnPriority(t Task, p Priority) error { return c.s.SpawnPriority(t, p) }

// Shutdown starts a graceful shutdown (see Scheduler.Shutdown). The calling
// task receives its own cancellation on its next Resume.
func (c *Context) Shutdown() { c.s.Shutdown() }

// AddSwitchHandler installs h on the running task.
func (c *Context) AddSwitchHandler(h SwitchHandler) { c.s.AddSwitchHandler(c.cur.task, h) }

// TaskError is a task's failure as returned by Run.
type TaskError struct {
	Task string // the task's name (Namer, or type#id)
	Err  error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("stackless: task %s failed: %v", e.Task, e.Err)
}
func (e *TaskError) Unwrap() error { return e.Err }
