// Package stackful is corobench's stackful coroutine runtime: the scheduler,
// waker, events and microtasks of the TrueAsync design (DESIGN.md §1, seeds
// 000 and 003), over one of two switch backends that share all other code:
//
//   - Asm (row stackful-asm): every coroutine runs on a fiber stack from the
//     stack pool, and control moves with the Go-assembly switch of package
//     fiber. Switches are symmetric, so a suspending coroutine switches
//     directly to the next ready one (one switch per handoff), and a finished
//     coroutine hands its context to the next unstarted one with no switch at
//     all. The scheduler's own context (the goroutine that called Run) is
//     entered only when the queue is empty and the reactor must block, when a
//     switch could not be made, or on deadlock. The garbage collector is held
//     off for the whole run (docs/design.md §3); for what a collection that
//     runs anyway does, see the rules below.
//   - Coro (row stackful-coro): every coroutine is a Go runtime coroutine
//     (iter.Pull). It is GC-safe but asymmetric: each handoff goes from the
//     suspending coroutine to the scheduler and from there to the next one.
//
// # Programming model
//
// A Scheduler is single-threaded: Run executes the main function as the
// first coroutine, and from inside any coroutine straight-line Go code calls
// the package-level blocking API (Go, Yield, Await, Sleep, ...) without
// passing a context around: the running scheduler knows the current
// coroutine. Only one Scheduler runs at a time in a process. None of the
// blocking functions may be called from another goroutine.
//
// The API in one place: New, Scheduler.Run, Go and GoWith (spawn), Yield,
// NewEvent with Event.Resolve, Reject and Reset (a reusable one-shot event),
// Await, AwaitTimeout and AwaitWith (with a cancellation event), Sleep, IO
// (OpenIO, Pipe, ListenTCP, DialTCP: blocking Read, Write and Accept on fds
// through the reactor, suspending only the caller), Trigger (a wakeup from
// another goroutine), QueueMicrotask and
// EnqueueMicrotask, Coroutine.Cancel, Shutdown, switch handlers
// (AddSwitchHandler, Scheduler.AddMainStartHandler), and the counters
// (Scheduler.Stats, Scheduler.PoolStats). Yield, Await, Resolve and the
// switch itself do not allocate.
//
// The semantics (queue order, suspend points, fast path, waker states, races,
// cancellation, shutdown, deadlock, switch handlers) are the ones documented
// in package internal/semtest, whose shared suite this package passes on both
// backends. In short:
//
//   - Go enqueues a coroutine without switching (High priority at the head of
//     the run queue). Yield re-enqueues the caller at the tail.
//   - At every suspend point (Yield, an Await that must wait, Sleep, a
//     coroutine's end) the scheduler runs the microtask batch, ticks the
//     reactor without blocking if Options.TickInterval has passed since the
//     last tick and the reactor has active events, then takes the head of the
//     queue. Await on an event that already fired returns at once with no
//     switch (the fast path).
//   - Cancellation (Coroutine.Cancel, Shutdown, deadlock) is delivered once:
//     a waiting coroutine wakes with ErrCancelled, a queued or running one
//     gets it from its next blocking call.
//   - Run returns when every coroutine has finished.
//
// # Rules for code running on asm fibers
//
// No GC may run while a fiber is suspended: the runtime disables the
// collector during Run, so a run must not allocate without bound. What
// happens if a collection runs anyway depends on who starts it and on
// GODEBUG: code in a coroutine that calls runtime.GC or debug.FreeOSMemory
// makes the collector try to shrink the fiber stack it runs on, and the
// runtime kills the process with "fatal error: stack size not a power of
// 2" (a clean stop, not corruption: fiber stacks have such sizes on
// purpose); with GODEBUG=gcshrinkstackoff=1, or for a collection started
// from the scheduler's own context, the run completes and Run fails with
// an error saying a collection ran (the run is invalid). The runtime's
// fatal message cannot be changed; ExplainCrashes makes the process print,
// after it, a line naming the cause (the collection started by code in a
// fiber, or an overflow).
//
// A fiber's stack does not grow: Options.Stacks.StackSize bounds it, and
// deeper recursion is the same fatal error from runtime.newstack; with
// ExplainCrashes the line after it names Options.Stacks.StackSize, and
// without it fiber.ExplainCrash recognises the message in a child's stderr
// (benchrun's parent process does this for its cells).
//
// Code on a fiber must not call runtime.Goexit (so no t.Fatal or t.FailNow
// in a coroutine): on asm the process exits with a message naming it (the
// fiber shares the goroutine that called Run, which must not end); on coro
// the coroutine finishes (its defers run) and Run fails with an error
// wrapping ErrGoexit after a graceful shutdown. Record failures and check
// them after Run returns.
//
// The API belongs to the goroutine that called Run: a blocking call, a
// spawn or a microtask made from another goroutine while a coroutine runs
// panics naming the call and this rule (asm: the caller's frame is not on
// the running coroutine's fiber stack; coro: the caller is not its
// goroutine; the check is a few loads and a compare, inline). Wake a
// coroutine from another goroutine with a Trigger.
package stackful
