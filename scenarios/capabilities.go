package scenarios

import (
	"errors"
	"io"
	"time"
)

// This file is the row contract: what a scenario body may use of a row.
// Blocking is the least a row provides; every other interface here is an
// optional capability a body type-asserts (through Lacking, which turns a
// missing one into a *NotSupportedError with the row's reason). A row added
// from another module (RegisterRow) implements Blocking and whichever
// capabilities its runtime really has, and nothing more: a capability
// faked with machinery the runtime does not have would measure that
// machinery, not the runtime.

// Blocking is what a blocking body may use. The stackful rows and the
// goroutine rows implement it; a body written against it is straight-line Go
// that runs unchanged on both.
type Blocking interface {
	// Go starts fn as a new coroutine; the run ends when all have returned.
	Go(fn func())
	// Yield lets every other ready coroutine run before the caller resumes.
	Yield()
	// NewSignal returns a hand-off point between two coroutines.
	NewSignal() Signal
	// Sleep suspends the caller for at least d.
	Sleep(d time.Duration)
}

// Signal is a reusable hand-off: Fire wakes the coroutine blocked in Wait,
// or lets the next Wait pass. On the goroutine rows it is an unbuffered
// channel, so Fire also waits for the receiver: that rendezvous is the price
// Go charges for a hand-off.
type Signal interface {
	Fire()
	Wait()
}

// Explainer is optional on a Blocking: a row that lacks a capability may
// say why in its own words (the goroutine rows say what Go has instead).
// capability is the interface's name, e.g. "Priorities".
type Explainer interface {
	Lacks(capability string) (reason string, ok bool)
}

// Lacking is the *NotSupportedError a body returns when rt lacks a
// capability: the row's own reason if it gives one (Explainer), else
// fallback.
func Lacking(rt Blocking, capability, fallback string) error {
	if e, ok := rt.(Explainer); ok {
		if reason, ok := e.Lacks(capability); ok {
			return NotSupported("%s", reason)
		}
	}
	return NotSupported("%s", fallback)
}

// Optional capabilities the scheduler-side scenarios (yield, handoff, spawn,
// burst, memory, await-ready, microtask, shutdown, priority) need beyond
// Blocking. A body type-asserts its Blocking to one of them and returns a
// *NotSupportedError naming the missing capability when the row lacks it.
// The stackful rows (fibers) implement all of them; the goroutine rows
// (*goroutines) implement those Go has an idiom for, and nothing more: the
// baseline must not grow machinery Go does not have.

// gates is a broadcast gate: many coroutines wait, one Open releases all.
type Gates interface{ NewGate() Gate }

type Gate interface {
	Open()
	Wait()
}

// futures is a one-shot future carrying a value, with the fast path the
// reference design describes (docs/design.md §1): awaiting a completed future returns without suspending.
type Futures interface{ NewFuture() Future }

type Future interface {
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
// queue whenever it is spawned or woken (docs/design.md §1, the scheduler: two priorities).
type Priorities interface{ GoHigh(fn func()) }

// microtasks queues small handlers that the scheduler runs FIFO at the next
// suspend point, in the current context, without switching (docs/design.md §1, microtasks).
type Microtasks interface {
	// NewMicrotask returns a reusable microtask running fn.
	NewMicrotask(fn func()) QueuedMicrotask
}

type QueuedMicrotask interface {
	// Enqueue queues the microtask once more; it does not allocate.
	Enqueue()
}

// shutdowns is graceful shutdown: every blocked coroutine is cancelled and
// runs its cleanup (its defers).
type Shutdowns interface{ NewShutdownScope() ShutdownScope }

type ShutdownScope interface {
	// Block suspends the calling coroutine until Shutdown cancels it.
	// It reports whether it ended by a cancellation (always, unless the
	// row is broken).
	Block() (cancelled bool)
	// Shutdown starts the graceful shutdown and returns; the caller is not
	// cancelled by it and may wait for the cleanups to finish.
	Shutdown()
}

// SwitchPaths says how the row hands control from a suspending coroutine
// to the woken one: straight to it ("direct"), or through a scheduler
// context ("scheduler"), and which paths it can be made to take.
type SwitchPaths interface {
	// HandoffPath returns the path the row's handoffs take, or a reason
	// for each path the row cannot take.
	HandoffPath() (path string, unsupported map[string]string)
}

// BareSwitches is the capability of a row whose coroutines are made of a
// switch that can bypass its scheduler: BareSwitch names it. The switch
// scenario's blocking body drives that switch itself, one loop per kind,
// so the loop that switches is scenario code, counted and read beside the
// state machine's.
type BareSwitches interface {
	BareSwitch() BareSwitch
}

// BareSwitch is a kind of switch the switch scenario knows how to drive.
type BareSwitch string

const (
	// FiberSwitch is impl/stackful/fiber.Switch between two fiber
	// contexts on stacks of our own (the stackful-asm row).
	FiberSwitch BareSwitch = "fiber.Switch"
	// PullSwitch is the next/yield pair of an iter.Pull coroutine, the Go
	// runtime's coroswitch (the stackful-coro row).
	PullSwitch BareSwitch = "iter.Pull"
)

// Pipes is the capability to create a pipe whose ends block only the calling
// coroutine.
type Pipes interface {
	Pipe() (r io.ReadCloser, w io.WriteCloser, err error)
}

// TCP is the capability to serve TCP on the loopback interface.
type TCP interface {
	// ListenLoopback opens a listener on 127.0.0.1 with a free port.
	ListenLoopback() (Listener, error)
}

// Listener accepts TCP connections for a blocking body.
type Listener interface {
	// Port is the port the listener is bound to.
	Port() int
	// Accept waits at most timeout for the next connection, which it
	// returns with TCP_NODELAY set (Go's net package sets it by default;
	// the reactor rows set it too, so small replies are never held back by
	// Nagle's algorithm on any row). Waiting longer is ErrAcceptTimeout.
	Accept(timeout time.Duration) (io.ReadWriteCloser, error)
	Close() error
}

// ErrAcceptTimeout is what Listener.Accept returns when no connection came
// within its timeout.
var ErrAcceptTimeout = errors.New("no connection arrived in time")
