package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/corobench/corobench/impl/stackful"
)

// Optional capabilities the scheduler-side scenarios (yield, handoff, spawn,
// burst, memory, await-ready, microtask, shutdown, priority) need beyond
// Blocking. A body type-asserts its Blocking to one of them and returns a
// *NotSupportedError naming the missing capability when the row lacks it.
// The stackful rows (fibers) implement all of them; the goroutine rows
// (*goroutines) implement those Go has an idiom for, and nothing more: the
// baseline must not grow machinery Go does not have.

// gates is a broadcast gate: many coroutines wait, one Open releases all.
type gates interface{ NewGate() gate }

type gate interface {
	Open()
	Wait()
}

// futures is a one-shot future carrying a value, with the fast path the
// seed describes: awaiting a completed future returns without suspending.
type futures interface{ NewFuture() future }

type future interface {
	// Resolve completes the future with v; at most once per Reset.
	Resolve(v uint64)
	// Await returns the value, waiting until the future is resolved.
	Await() uint64
	// Reset makes a completed future pending again. Only the side that
	// awaited it may call Reset, after Await returned and before it lets
	// the resolving side run again.
	Reset()
}

// priorities spawns a coroutine that is enqueued at the head of the run
// queue whenever it is spawned or woken (seed 000: two priorities).
type priorities interface{ GoHigh(fn func()) }

// microtasks queues small handlers that the scheduler runs FIFO at the next
// suspend point, in the current context, without switching (seed 000).
type microtasks interface {
	// NewMicrotask returns a reusable microtask running fn.
	NewMicrotask(fn func()) microtask
}

type microtask interface {
	// Enqueue queues the microtask once more; it does not allocate.
	Enqueue()
}

// shutdowns is graceful shutdown: every blocked coroutine is cancelled and
// runs its cleanup (its defers).
type shutdowns interface{ NewShutdownScope() shutdownScope }

type shutdownScope interface {
	// Block suspends the calling coroutine until Shutdown cancels it.
	// It reports whether it ended by a cancellation (always, unless the
	// row is broken).
	Block() (cancelled bool)
	// Shutdown starts the graceful shutdown and returns; the caller is not
	// cancelled by it and may wait for the cleanups to finish.
	Shutdown()
}

// switchPaths says how the row hands control from a suspending coroutine
// to the woken one: straight to it ("direct"), or through a scheduler
// context ("scheduler"), and which paths it can be made to take.
type switchPaths interface {
	// HandoffPath returns the path the row's handoffs take, or a reason
	// for each path the row cannot take.
	HandoffPath() (path string, unsupported map[string]string)
}

// ---- stackful rows ----

func (fibers) NewGate() gate { return fiberGate{stackful.NewEvent()} }

// fiberGate is a stackful Event: every awaiting coroutine is woken, in the
// order it started waiting, when the event fires.
type fiberGate struct{ ev *stackful.Event }

func (g fiberGate) Open() { g.ev.Resolve(nil) }
func (g fiberGate) Wait() {
	_, err := stackful.Await(g.ev)
	must(err)
}

func (fibers) NewFuture() future { return &fiberFuture{ev: stackful.NewEvent()} }

// fiberFuture keeps the value beside the event, so that resolving does not
// box a uint64 into an interface (an allocation per value above 255).
type fiberFuture struct {
	ev *stackful.Event
	v  uint64
}

func (f *fiberFuture) Resolve(v uint64) {
	f.v = v
	f.ev.Resolve(nil)
}

func (f *fiberFuture) Await() uint64 {
	_, err := stackful.Await(f.ev)
	must(err)
	return f.v
}

func (f *fiberFuture) Reset() { f.ev.Reset() }

func (fibers) GoHigh(fn func()) { stackful.GoWith("", stackful.High, fn) }

func (fibers) NewMicrotask(fn func()) microtask {
	return fiberMicrotask{stackful.NewMicrotask(func() error { fn(); return nil }, nil)}
}

type fiberMicrotask struct{ m *stackful.Microtask }

func (m fiberMicrotask) Enqueue() { stackful.EnqueueMicrotask(m.m) }

func (fibers) NewShutdownScope() shutdownScope {
	return fiberShutdown{never: stackful.NewEvent()}
}

// fiberShutdown blocks coroutines on an event nobody fires; only the
// scheduler's graceful shutdown (stackful.Shutdown) wakes them, with an
// error wrapping ErrCancelled.
type fiberShutdown struct{ never *stackful.Event }

func (s fiberShutdown) Block() bool {
	_, err := stackful.Await(s.never)
	return errors.Is(err, stackful.ErrCancelled)
}

// Shutdown cancels every live coroutine, the caller included. The caller's
// cancellation is delivered once, by its next blocking call: a Yield here
// takes it, so the caller's later waits work and it can wait for the
// cleanups like any other coroutine.
func (fiberShutdown) Shutdown() {
	stackful.Shutdown()
	if err := stackful.Yield(); !errors.Is(err, stackful.ErrCancelled) {
		panic(fmt.Sprintf("scenarios: stackful.Shutdown did not cancel the calling coroutine (its next Yield returned %v)", err))
	}
}

// HandoffPath says which path the adapter's backend takes.
func (f fibers) HandoffPath() (string, map[string]string) {
	if f.backend == stackful.Coro {
		return "scheduler", map[string]string{
			"direct": "stackful-coro coroutines are iter.Pull coroutines: asymmetric, each can only yield back to the context that resumed it, so every handoff goes through the scheduler",
		}
	}
	if f.viaScheduler {
		return "scheduler", nil
	}
	return "direct", nil
}

// ---- goroutine rows ----

func (g *goroutines) NewGate() gate { return goroutineGate(make(chan struct{})) }

// goroutineGate is a channel closed to open it: Go's broadcast idiom.
type goroutineGate chan struct{}

func (g goroutineGate) Open() { close(g) }
func (g goroutineGate) Wait() { <-g }

func (g *goroutines) NewFuture() future { return &goroutineFuture{done: make(chan struct{})} }

// goroutineFuture is Go's future: a value published by closing a channel.
// Receiving from a closed channel returns at once (the fast path). A closed
// channel cannot be reopened, so Reset makes a new one: one allocation per
// pending await, which is what a Go program pays for a fresh future.
type goroutineFuture struct {
	done chan struct{}
	v    uint64
}

func (f *goroutineFuture) Resolve(v uint64) {
	f.v = v
	close(f.done)
}

func (f *goroutineFuture) Await() uint64 {
	<-f.done
	return f.v
}

func (f *goroutineFuture) Reset() { f.done = make(chan struct{}) }

func (g *goroutines) NewShutdownScope() shutdownScope {
	ctx, cancel := context.WithCancel(context.Background())
	return goroutineShutdown{ctx: ctx, cancel: cancel}
}

// goroutineShutdown is Go's idiomatic cancellation: every goroutine selects
// on the Done channel of one context, and cancelling it wakes them all;
// each then returns and runs its defers.
type goroutineShutdown struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (s goroutineShutdown) Block() bool {
	<-s.ctx.Done()
	return s.ctx.Err() != nil
}

func (s goroutineShutdown) Shutdown() { s.cancel() }

// HandoffPath: a goroutine that blocks always enters the Go scheduler on
// g0 (mcall → schedule), which then runs the woken goroutine (from runnext):
// two transfers of control, never one.
func (g *goroutines) HandoffPath() (string, map[string]string) {
	return "scheduler", map[string]string{
		"direct": "Go has no direct goroutine-to-goroutine switch for a blocking handoff: the blocking goroutine always enters the scheduler on g0 (mcall → schedule), which then runs the woken one from runnext",
	}
}
