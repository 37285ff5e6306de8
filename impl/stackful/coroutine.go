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
type SwitchHandler func(co Coroutine, kind SwitchKind) bool

type coState uint8

const (
	coNew      coState = iota // spawned, not started (in the queue)
	coRunning                 // started, not finished (running, queued or suspended)
	coFinished                // returned, unwound, or dropped before it started
)

// coroutine is the record of one coroutine of a Scheduler: what a switch,
// a wake and a spawn touch. Records are kept on the scheduler's free list
// when their coroutine finishes (Scheduler.recycle) and reused by the next
// spawn, so a warm spawn allocates nothing; users hold a Coroutine handle,
// which carries the id its coroutine had and so detects a record that has
// moved on to another coroutine.
type coroutine struct {
	// The hot fields come first, in the record's first two cache lines
	// (records are 320 bytes and start on a line: recordSlab):
	// everything a pick, a direct switch, the foreign-goroutine check and
	// a Yield read or write, and nothing else, so that a switch
	// to a record that is no longer in cache waits on two lines, the two
	// the run queue's prefetch pipeline fetches (fiber.PrefetchRing;
	// TestPrefetchedRecordLines pins the list). Line 0: fc (the first
	// word: PrefetchRing reads it), the stack bounds, handlers, the
	// one-byte state and flags, ctx; then the waker, whose status, timeout
	// and outcome (what Yield resets and a resume reads) come first and
	// end in line 1. The rest (the waker's subscriptions, the timer, the links)
	// is touched by waits, spawns and finishes, not by a Yield.
	//
	// fc, stackLo and stackSpan are copied from the execution context when
	// it is bound (bind), so neither a switch nor the check loads co.ctx
	// and ctx.fiber first (two dependent misses per switch once thousands
	// of coroutines are alive).
	//
	// The saved SP itself stays in the Context, one load behind fc (issue
	// 16's "saved SP in line 0", measured in session 10 and dropped): a
	// Switch variant that also stored from's SP in the record and resumed
	// at the record's copy (checked against to.sp, so never wrong) read, in
	// package (BenchmarkPingPong*, 6 rounds alternated, n=12),
	// PingPong/backend=asm 23.03 -> 22.62 ns (-1.7%), twoSites ~, but
	// sameSite 13.48 -> 14.12 (+4.7%: two more arguments, a store, a
	// compare); benchrun pingpong 24.94 -> 24.65 (~). The hand-off's floor
	// is the mispredicted return after the switch, not this load.
	fc        *fiber.Context // &ctx.fiber.fc, the saved SP of its asm context; nil on coro and unbound
	stackLo   uintptr        // ctx.lo: its stack is [stackLo, stackLo+stackSpan)
	stackSpan uintptr        // ctx.span; 0 on coro and unbound (the check then goes out of line)
	// handlers is nil or a non-empty list (fire sets it back to nil when
	// the last one is dropped): a pointer, not a slice, is 16 of the bytes
	// every record carries for what few coroutines use.
	handlers *[]SwitchHandler
	priority Priority
	state    coState
	// The flags sit beside priority and state, in what would be padding:
	// that keeps the record at 320 bytes (a Go size class) with the timer
	// node inline (and the waker's status beside its mode, and done made
	// on demand).
	cancelPending bool         // deliver cancelErr at the next blocking call
	killed        bool         // final cleanup: unwind at the next suspension point
	unwinding     bool         // the kill panic is unwinding it: blocking calls fail at once
	timerBound    bool         // timer.Init done (at the first timed wait, not at spawn; kept when the record is reused: same loop)
	ctx           *execContext // the execution context it runs on; nil until started (a pick through the scheduler reads it: contextFor)
	waker         waker
	// timer is the waker's timeout, inline (no object, no closure); Init
	// at the first timed wait. It is not in line 0 beside the waker's
	// status, although a firing reads the node's line and then line 0: the
	// fields lines 0 and 1 must hold (TestPrefetchedRecordLines) take 104
	// of their 128 bytes, and a 40-byte node does not fit beside them
	// without pushing a switch's fields out of the prefetched lines or the
	// record out of its 320-byte class. Nor would it pay: with the
	// record's line 0 prefetched before OnTimer (a reactor-side prefetch of
	// the handler's record, an upper bound of that layout) and the wake
	// loading nothing from line 1, the profile's record-miss samples left
	// OnTimer but reappeared in fiber.PrefetchRing, and BenchmarkTimerWake
	// n=10000 read 280.6 -> 276.9 cpu-ns/wake (~, p=0.86; session 10).
	// What does pay is fetching its line (line 3) in the run queue's
	// pipeline with lines 0 and 1 (fiber.PrefetchRing): a woken sleeper's
	// next Sleep reads the node first (StartFresh), long after the tick
	// that fired it, and that load missed (session 16: 9.2 % of the Timer
	// scenario's samples at n=10000 in StartFresh, 3.0 % with line 3
	// fetched; TestPrefetchedRecordLines keeps the node in line 3).
	timer reactor.TimerNode

	s *Scheduler
	// id is the coroutine's number, unique within its Scheduler's
	// lifetime, and the record's generation: a reused record gets the new
	// coroutine's id, so a handle whose id differs names a coroutine that
	// has finished (Coroutine.live).
	id   uint64
	name *string // nil if unnamed: most coroutines are, and a string is 16 of the bytes every spawn clears
	fn   func()
	// done fires when the coroutine finishes. Made by the first Done call,
	// not at spawn: most coroutines are never awaited, and an inline Event
	// is 64 of the bytes every spawn allocates and clears (with the GC
	// held off, each of them is fresh memory: clearing and page faults).
	done *Event
	err  error // the *PanicError if it panicked

	cancelErr error // the pending cancellation (cancelPending)

	// livePrev and liveNext link the scheduler's live coroutines, in spawn
	// order; liveNext also links the free list of finished records.
	livePrev, liveNext *coroutine
}

// bind makes ctx the coroutine's execution context and copies its hot
// fields into the record (see fc). Await's start of an unstarted head
// spells out its asm case (its twin).
func (co *coroutine) bind(ctx *execContext) {
	co.ctx = ctx
	co.stackLo, co.stackSpan = ctx.lo, ctx.span
	if ctx.span != 0 { // asm (a coro context has no fixed stack)
		co.fc = &ctx.fiber.fc
	}
}

// unbind forgets the execution context (the coroutine finished). The stack
// bounds stay until the record is reused (spawn clears them): the finished
// coroutine is still current, on that stack, while its last pickNext runs
// microtasks and Finish handlers, and a spawn from one of those must pass
// the foreign-goroutine check (TestMicrotaskSpawnAtFinish).
func (co *coroutine) unbind() {
	co.ctx, co.fc = nil, nil
}

// handle returns a handle to the record's current coroutine.
func (co *coroutine) handle() Coroutine { return Coroutine{r: co, id: co.id} }

// Name returns the name given at spawn ("" if none).
func (co *coroutine) Name() string {
	if co.name == nil {
		return ""
	}
	return *co.name
}

// String returns "name#id", or "#id" for an unnamed coroutine.
func (co *coroutine) String() string {
	return co.Name() + "#" + strconv.FormatUint(co.id, 10)
}

// recyclable reports whether the finished coroutine's record may be reused:
// only if a handle can answer every question about the finished coroutine
// without it. A reused record's handles answer as an unnamed, Normal
// coroutine that finished without a panic and whose Done was never asked
// for (Coroutine.live); any other record is left to the collector.
func (co *coroutine) recyclable() bool {
	return co.name == nil && co.priority == Normal && co.err == nil && co.done == nil
}

// Coroutine is a handle to one coroutine of a Scheduler: a small value,
// copied freely and comparable (two handles are equal when they name the
// same coroutine). The zero Coroutine names no coroutine (Current returns
// it outside a coroutine); any method but IsZero panics on it.
//
// A handle stays valid after its coroutine finishes: Finished reports
// true, Done returns a fired event, Err the panic, Cancel and Destroy do
// nothing, WakerStatus is NO_STATUS. The coroutine's record is reused by
// a later spawn once it finished (unless it was named, High, panicked or
// had its Done asked for: then it is kept), and the handle detects that by
// the coroutine's id, which the record no longer carries; it then answers
// from what the reuse rule guarantees (unnamed, Normal, no error) instead
// of reading the record's new occupant. One difference remains: Done
// asked for the first time after the coroutine finished returns the same
// event only until the record is reused, then a new fired event at each
// call.
type Coroutine struct {
	r  *coroutine
	id uint64
}

// IsZero reports whether c is the zero handle (no coroutine).
func (c Coroutine) IsZero() bool { return c.r == nil }

// live returns c's record while it still belongs to c's coroutine, nil
// once the coroutine finished and the record was reused. It panics on the
// zero handle, naming op.
func (c Coroutine) live(op string) *coroutine {
	if c.r == nil {
		panic("stackful: Coroutine." + op + " on the zero Coroutine: it names no coroutine (Current outside a coroutine returns it)")
	}
	if c.r.id != c.id {
		return nil
	}
	return c.r
}

// ID returns the coroutine's number, unique within its Scheduler's lifetime.
func (c Coroutine) ID() uint64 {
	c.live("ID")
	return c.id
}

// Name returns the name given at spawn ("" if none).
func (c Coroutine) Name() string {
	if co := c.live("Name"); co != nil {
		return co.Name()
	}
	return "" // reused: only unnamed records are (coroutine.recyclable)
}

// String returns "name#id", or "#id" for an unnamed coroutine.
func (c Coroutine) String() string {
	return c.Name() + "#" + strconv.FormatUint(c.id, 10)
}

// Priority returns the spawn priority.
func (c Coroutine) Priority() Priority {
	if co := c.live("Priority"); co != nil {
		return co.priority
	}
	return Normal // reused: only Normal records are
}

// WakerStatus returns the state of the coroutine's waker.
func (c Coroutine) WakerStatus() WakerStatus {
	if co := c.live("WakerStatus"); co != nil {
		return co.waker.status
	}
	return WakerNoStatus // finished: retire reset the waker
}

// Waker returns a handle to the coroutine's waker (see Waker).
func (c Coroutine) Waker() Waker {
	c.live("Waker")
	return Waker{c}
}

// Finished reports whether the coroutine has finished.
func (c Coroutine) Finished() bool {
	co := c.live("Finished")
	return co == nil || co.state == coFinished
}

// Done returns an event that fires (resolved with nil) when the coroutine
// finishes, so another coroutine can Await it. Every call returns the same
// event; the first one makes it (already fired if the coroutine has
// finished: the state an inline event would have, fired with no
// subscribers). Asked for the first time after the coroutine finished,
// the event lives in the record only until a spawn reuses it (see
// Coroutine); later calls then return a new fired event each.
func (c Coroutine) Done() *Event {
	co := c.live("Done")
	if co == nil {
		ev := &Event{}
		ev.Resolve(nil)
		return ev
	}
	if co.done == nil {
		co.done = &Event{}
		if co.state == coFinished {
			co.done.Resolve(nil)
		}
	}
	return co.done
}

// Err returns the *PanicError if the coroutine panicked.
func (c Coroutine) Err() error {
	if co := c.live("Err"); co != nil {
		return co.err
	}
	return nil // reused: a panicked coroutine's record is kept
}

// AddSwitchHandler binds h to the coroutine. A finished coroutine's
// handlers are never called.
func (c Coroutine) AddSwitchHandler(h SwitchHandler) {
	if h == nil {
		panic("stackful: AddSwitchHandler(nil)")
	}
	if co := c.live("AddSwitchHandler"); co != nil && co.state != coFinished {
		co.addHandlers(h)
	}
}

// Cancel cancels the coroutine with ErrCancelled: a coroutine not yet started
// is dropped without running (its waker becomes IGNORED); a waiting one wakes
// with the error; a queued or running one gets it from its next blocking
// call. Cancelling a finished coroutine does nothing.
func (c Coroutine) Cancel() {
	if co := c.live("Cancel"); co != nil {
		co.cancel(ErrCancelled)
	}
}

func (co *coroutine) cancel(err error) {
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
func (c Coroutine) Destroy() {
	co := c.live("Destroy")
	switch {
	case co == nil, co.state == coFinished:
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
func (co *coroutine) kill() {
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
// The test for none inlines at every call site (each start and finish calls
// it twice, Enter and Finish, nearly always for nothing); the calls are in
// fireHandlers.
func (co *coroutine) fire(kind SwitchKind) {
	if co.handlers != nil {
		co.fireHandlers(kind)
	}
}

// fireHandlers is fire for a coroutine that has handlers.
func (co *coroutine) fireHandlers(kind SwitchKind) {
	switchhook.Fire(co.handlers, co.handle(), kind)
	if len(*co.handlers) == 0 {
		co.handlers = nil
	}
}

// addHandlers appends hs to the coroutine's switch handlers.
func (co *coroutine) addHandlers(hs ...SwitchHandler) {
	if len(hs) == 0 {
		return
	}
	if co.handlers == nil {
		co.handlers = new([]SwitchHandler)
	}
	*co.handlers = append(*co.handlers, hs...)
}

// coTimer is the coroutine's reactor.TimerHandler. A separate named type
// keeps OnTimer out of Coroutine's exported method set; firing is one
// interface call on the coroutine's own record (no closure, no allocation).
type coTimer coroutine

// OnTimer is the waker's timeout: the loop has already disarmed the node.
func (c *coTimer) OnTimer() { (*coroutine)(c).waker.onTimeout() }
