package stackful

import (
	"strconv"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/switchhook"
	"github.com/corobench/corobench/reactor"
)

// Priority is a coroutine's scheduling priority (docs/design.md §1: two levels).
type Priority uint8

const (
	// Normal coroutines are enqueued at the tail of the run queue.
	Normal Priority = iota
	// High coroutines are enqueued at the head when spawned or woken.
	High
)

// SwitchKind is the moment a switch handler is called at (the definition
// impl/stackless shares, as its SwitchEvent).
type SwitchKind = switchhook.Kind

const (
	Enter  = switchhook.Enter  // the coroutine got control (also at its start)
	Leave  = switchhook.Leave  // the coroutine gives control away (it suspends), before the next coroutine is picked
	Finish = switchhook.Finish // the coroutine finished
)

// SwitchHandler is a hook bound to one coroutine, called in that
// coroutine's context on Enter, Leave and Finish, in installation order.
// Returning false removes it. A handler installed by a handler is first
// called at the next switch.
type SwitchHandler func(co *Coroutine, kind SwitchKind) bool

type coState uint8

const (
	coNew      coState = iota // spawned, not started (in the queue)
	coRunning                 // started, not finished (running, queued or suspended)
	coFinished                // returned, unwound, or dropped before it started
)

// Coroutine is one coroutine of a Scheduler.
type Coroutine struct {
	// Hot fields first, in the record's first cache line: what a direct
	// switch and the foreign-goroutine check read, copied from the
	// execution context when it is bound (bind), so neither loads co.ctx
	// and ctx.fiber first (two dependent misses per switch once thousands
	// of coroutines are alive).
	fc        *fiber.Context // &ctx.fiber.fc, the saved SP of its asm context; nil on coro and unbound
	stackLo   uintptr        // ctx.lo: its stack is [stackLo, stackLo+stackSpan)
	stackSpan uintptr        // ctx.span; 0 on coro and unbound (the check then goes out of line)

	s        *Scheduler
	id       uint64
	name     *string // nil if unnamed: most coroutines are, and a string is 16 of the bytes every spawn clears
	fn       func()
	priority Priority
	state    coState
	// The flags sit beside priority and state, in what would be padding:
	// that keeps the record at 352 bytes (a Go size class) with the timer
	// node inline (and the Waker's status beside its mode, and done made
	// on demand).
	cancelPending bool // deliver cancelErr at the next blocking call
	killed        bool // final cleanup: unwind at the next suspension point
	unwinding     bool // the kill panic is unwinding it: blocking calls fail at once
	timerBound    bool // timer.Init done (at the first timed wait, not at spawn)
	waker         Waker
	ctx           *execContext // the execution context it runs on; nil until started
	handlers      []SwitchHandler
	timer         reactor.TimerNode // the waker's timeout, inline (no object, no closure); Init at spawn
	// done fires when the coroutine finishes. Made by the first Done call,
	// not at spawn: most coroutines are never awaited, and an inline Event
	// is 64 of the bytes every spawn allocates and clears (with the GC
	// held off, each of them is fresh memory: clearing and page faults).
	done *Event
	err  error // the *PanicError if it panicked

	cancelErr error // the pending cancellation (cancelPending)

	livePrev, liveNext *Coroutine // the scheduler's list of live coroutines, in spawn order
}

// bind makes ctx the coroutine's execution context and copies its hot
// fields into the record (see fc).
func (co *Coroutine) bind(ctx *execContext) {
	co.ctx = ctx
	co.stackLo, co.stackSpan = ctx.lo, ctx.span
	if ctx.fiber != nil {
		co.fc = &ctx.fiber.fc
	}
}

// unbind forgets the execution context (the coroutine finished).
func (co *Coroutine) unbind() {
	co.ctx, co.fc, co.stackLo, co.stackSpan = nil, nil, 0, 0
}

// ID returns the coroutine's number, unique within its Scheduler's lifetime.
func (co *Coroutine) ID() uint64 { return co.id }

// Name returns the name given at spawn ("" if none).
func (co *Coroutine) Name() string {
	if co.name == nil {
		return ""
	}
	return *co.name
}

// String returns "name#id", or "#id" for an unnamed coroutine.
func (co *Coroutine) String() string {
	return co.Name() + "#" + strconv.FormatUint(co.id, 10)
}

// Priority returns the spawn priority.
func (co *Coroutine) Priority() Priority { return co.priority }

// WakerStatus returns the state of the coroutine's waker.
func (co *Coroutine) WakerStatus() WakerStatus { return co.waker.status }

// Waker returns the coroutine's embedded waker.
func (co *Coroutine) Waker() *Waker { return &co.waker }

// Finished reports whether the coroutine has finished.
func (co *Coroutine) Finished() bool { return co.state == coFinished }

// Done returns an event that fires (resolved with nil) when the coroutine
// finishes, so another coroutine can Await it. Every call returns the same
// event; the first one makes it (already fired if the coroutine has
// finished: the state an inline event would have, fired with no
// subscribers).
func (co *Coroutine) Done() *Event {
	if co.done == nil {
		co.done = &Event{}
		if co.state == coFinished {
			co.done.Resolve(nil)
		}
	}
	return co.done
}

// Err returns the *PanicError if the coroutine panicked.
func (co *Coroutine) Err() error { return co.err }

// AddSwitchHandler binds h to the coroutine.
func (co *Coroutine) AddSwitchHandler(h SwitchHandler) {
	if h == nil {
		panic("stackful: AddSwitchHandler(nil)")
	}
	co.handlers = append(co.handlers, h)
}

// Cancel cancels the coroutine with ErrCancelled: a coroutine not yet started
// is dropped without running (its waker becomes IGNORED); a waiting one wakes
// with the error; a queued or running one gets it from its next blocking
// call. Cancelling a finished coroutine does nothing.
func (co *Coroutine) Cancel() { co.cancel(ErrCancelled) }

func (co *Coroutine) cancel(err error) {
	switch {
	case co.state == coFinished:
	case co.state == coNew:
		co.waker.status = WakerIgnored
	case co.waker.status == WakerWaiting:
		co.waker.cancelWith(err)
	default:
		co.cancelPending, co.cancelErr = true, err
	}
}

// Destroy finalises the coroutine without running more of its code (the
// reference design's IGNORED waker; docs/design.md §1, the waker). A
// coroutine not yet started is dropped without running, as by Cancel. A
// started one that is queued or waiting becomes IGNORED (a waiting one is
// woken): when the scheduler reaches it, it is resumed only to unwind, as
// in final cleanup: its blocking call does not return, its deferred calls
// run, and it finishes without an error. Destroying the running coroutine
// itself makes its next blocking call unwind it. Destroying a finished
// coroutine does nothing.
func (co *Coroutine) Destroy() {
	switch {
	case co.state == coFinished:
	case co.state == coNew:
		co.waker.status = WakerIgnored
	default:
		co.killed = true
		if co == co.s.current {
			return // checkBlocking unwinds it at its next blocking call
		}
		co.waker.cancelWith(errFinalCleanup) // enqueues it if it was waiting
		co.waker.status = WakerIgnored
	}
}

// kill marks the coroutine for final cleanup: it unwinds (running its
// defers) at its next suspension point instead of continuing.
func (co *Coroutine) kill() {
	switch {
	case co.state == coFinished:
	case co.state == coNew:
		co.waker.status = WakerIgnored
	default:
		co.killed = true
		co.waker.cancelWith(errFinalCleanup) // enqueues it if it was waiting
	}
}

// fire calls the switch handlers for kind, dropping those that return false.
func (co *Coroutine) fire(kind SwitchKind) {
	if len(co.handlers) == 0 {
		return
	}
	switchhook.Fire(&co.handlers, co, kind)
}

// coTimer is the coroutine's reactor.TimerHandler. A separate named type
// keeps OnTimer out of Coroutine's exported method set; firing is one
// interface call on the coroutine's own record (no closure, no allocation).
type coTimer Coroutine

// OnTimer is the waker's timeout: the loop has already disarmed the node.
func (c *coTimer) OnTimer() { (*Coroutine)(c).waker.onTimeout() }
