package rows

import (
	"context"
	"errors"
	"fmt"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
)

// ---- stackful rows ----

func (fibers) NewGate() scenarios.Gate { return fiberGate{stackful.NewEvent()} }

// fiberGate is a stackful Event: every awaiting coroutine is woken, in the
// order it started waiting, when the event fires.
type fiberGate struct{ ev *stackful.Event }

func (g fiberGate) Open() { g.ev.Resolve(nil) }
func (g fiberGate) Wait() {
	_, err := stackful.Await(g.ev)
	must(err)
}

func (fibers) NewFuture() scenarios.Future { return &fiberFuture{ev: stackful.NewEvent()} }

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

func (fibers) NewMicrotask(fn func()) scenarios.QueuedMicrotask {
	return fiberMicrotask{stackful.NewMicrotask(func() error { fn(); return nil }, nil)}
}

type fiberMicrotask struct{ m *stackful.Microtask }

func (m fiberMicrotask) Enqueue() { stackful.EnqueueMicrotask(m.m) }

func (fibers) NewShutdownScope() scenarios.ShutdownScope {
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

func (g *goroutines) NewGate() scenarios.Gate { return goroutineGate(make(chan struct{})) }

// goroutineGate is a channel closed to open it: Go's broadcast idiom.
type goroutineGate chan struct{}

func (g goroutineGate) Open() { close(g) }
func (g goroutineGate) Wait() { <-g }

func (g *goroutines) NewFuture() scenarios.Future { return &goroutineFuture{done: make(chan struct{})} }

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

func (g *goroutines) NewShutdownScope() scenarios.ShutdownScope {
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

// Lacks gives Go's own reason for each capability the goroutine rows lack:
// what Go has instead, so a reader sees why the cell is empty.
func (g *goroutines) Lacks(capability string) (string, bool) {
	switch capability {
	case "Microtasks":
		return "Go has no microtask queue: the runtime runs nothing between a goroutine's " +
			"park and the next goroutine, and no hook lets a program queue work there", true
	case "Priorities":
		return "goroutines have no priorities: Go's scheduler has no priority levels " +
			"(a woken goroutine goes to its P's runnext slot, a hand-off heuristic that any later wake-up " +
			"displaces, not a priority), so there is no high-priority wake to measure", true
	case "BareSwitches":
		return "Go has no switch to a chosen goroutine that bypasses its scheduler: " +
			"a blocked goroutine always enters schedule() on g0, which picks the next one (pingpong and " +
			"handoff measure that cheapest hand-off)", true
	}
	return "", false
}

// HandoffPath: a goroutine that blocks always enters the Go scheduler on
// g0 (mcall → schedule), which then runs the woken goroutine (from runnext):
// two transfers of control, never one.
func (g *goroutines) HandoffPath() (string, map[string]string) {
	return "scheduler", map[string]string{
		"direct": "Go has no direct goroutine-to-goroutine switch for a blocking handoff: the blocking goroutine always enters the scheduler on g0 (mcall → schedule), which then runs the woken one from runnext",
	}
}
