// Package stackful is corobench's stackful coroutine runtime: the scheduler,
// waker, events and microtasks of the TrueAsync design (docs/design.md §1,
// the reference design), over one of two switch backends that share all
// other code:
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
// Timeouts and sleeps are a reactor.TimerNode inline in the Coroutine record,
// in the reactor's one timer heap (the design impl/stackless uses too;
// docs/design.md §4): a timed wait allocates nothing. On Asm, Run's first
// blocking reactor wait locks the goroutine to its thread for the rest of
// Run and lowers the thread's timer slack to 1 ns (restored when Run
// returns), so an epoll_pwait2 deadline is not pushed up to 50 µs late; Coro
// keeps the thread's slack. Scheduler.WaitInfo reports which is in effect.
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
// Await, AwaitTimeout and AwaitWith (with a cancellation event), the general
// wait ResumeWhen + Suspend (any number of events, standard or custom
// callbacks, the triggered-events set Waker.TriggeredEvents), Sleep, IO
// (OpenIO, Pipe, ListenTCP, DialTCP, ListenUDP: blocking Read, Write,
// Accept, ReadFrom and WriteTo on fds through the reactor, suspending only
// the caller), Signal and Process (a Unix signal, a child's exit), Trigger
// (a wakeup from another goroutine), QueueMicrotask and EnqueueMicrotask,
// Coroutine.Cancel and Coroutine.Destroy, Shutdown and
// Options.ShutdownOnSignal (SIGINT/SIGTERM start it), switch handlers
// (AddSwitchHandler, Scheduler.AddMainStartHandler), ExplainCrashes, and the
// counters (Scheduler.Stats, Scheduler.PoolStats). Yield, Await, Resolve and
// the switch itself do not allocate, and once a coroutine has finished, a
// spawn reuses its record and (asm) its stack: Go and GoWith return a
// Coroutine handle, a small value that stays valid after the coroutine
// finishes and never reaches the record's next coroutine.
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
//     gets it from its next blocking call. A coroutine spawned during a
//     graceful shutdown (by a cleanup, say) starts cancelled, so it cannot
//     hold Run open; one spawned in final cleanup is dropped unstarted.
//   - Coroutine.Destroy finalises a coroutine without running more of its
//     code: a started one that is queued or waiting becomes IGNORED and is
//     resumed only to unwind (its defers run).
//   - Switch handlers: Leave is called when a coroutine gives control up,
//     before the scheduler picks the next one, so a High coroutine a Leave
//     handler spawns runs next (a Yield with nobody else queued calls none
//     unless another coroutine does take over); Enter when it runs again;
//     Finish when it ends. AddSwitchHandler before Run binds to the next
//     Run's main coroutine.
//   - Run returns when every coroutine has finished.
//
// # Life of a wake-up
//
// A coroutine blocked in IO.Read on a socket, woken by data (asm backend;
// the names are the functions that run):
//
//  1. IO.Read: reactor FD.TryRead returns ErrWouldBlock, so IO.wait resets
//     the direction's Event, starts its reactor Poll and calls AwaitWith.
//  2. AwaitWith: the waker's reset and subscription, spelled out
//     (Event.link subscribes the waker), waker.start (WAITING; a
//     timeout's timer would start here),
//     then the inlined suspend: Scheduler.pickNext runs the microtasks and a
//     throttled non-blocking Scheduler.tick and pops the next coroutine;
//     fiber.Switch goes straight to it, or to the scheduler's own context
//     if nothing is runnable (Scheduler.switchFrom, Scheduler.transfer).
//  3. Scheduler.schedule, in the scheduler's context, finds nothing to run
//     and calls Scheduler.tick(false), which calls the reactor's Loop.Tick:
//     Loop.poll blocks in epoll_pwait2 (or epoll_wait).
//  4. Data arrives: Loop.dispatch hands the epoll event to FD.onEpoll, which
//     queues the Poll; Loop.runReady calls Poll.fireQueued, which runs the
//     callback wrapIO installed: Event.Resolve.
//  5. Event.fire unlinks the subscription and calls waker.onResolve, which
//     stores the outcome and calls waker.wake: waker.stop (every other
//     subscription and the timer), QUEUED, Scheduler.enqueue (head of the
//     run queue if High, else tail); for the common wait on one event,
//     fire does these steps itself without a call. Nothing switches yet.
//  6. Loop.Tick returns; Scheduler.schedule takes the coroutine
//     (Scheduler.pickNext) and Scheduler.enter switches to its fiber
//     (Scheduler.transfer, fiber.Switch). Had a running coroutine ticked
//     the reactor at its own suspend point (step 2), the woken coroutine
//     would be switched to directly from there, without the scheduler.
//  7. The coroutine runs again inside AwaitWith, right after its
//     fiber.Switch: Scheduler.afterResume, RESULT, and
//     AwaitWith returns the event's outcome; IO.wait stops the Poll and
//     IO.Read retries FD.TryRead, which now returns the data.
//
// On the coro backend steps 2 and 6 differ only in the switch: the
// coroutine yields to the scheduler (its iter.Pull yield), which resumes
// the next one (execContext.resume).
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
// The API belongs to the goroutine that called Run: a blocking call made
// from another goroutine while a coroutine runs panics naming the call and
// this rule (asm: the caller's frame is not on the running coroutine's
// fiber stack, a few loads and a compare, inline; coro: the caller is not
// the coroutine's goroutine). On asm a spawn, a microtask or a reactor
// object made from another goroutine panics the same way. Wake a coroutine
// from another goroutine with a Trigger.
package stackful
