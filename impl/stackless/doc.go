// Package stackless is corobench's state-machine coroutine runtime: the
// `stackless` row. It has the scheduler and waker semantics of the TrueAsync
// design (docs/design.md §1) that impl/stackful implements with
// fiber stacks, held to the same definition by internal/semtest, but its
// coroutines are explicit state machines, the shape the Rust, C# and Kotlin
// compilers lower async functions to. No task has a goroutine or a stack of
// its own, and the hot path allocates nothing.
//
// # Writing a task
//
// A task is a struct that embeds [Coro] (the runtime's per-task header) and
// keeps its own program counter in a state field. Its Resume method runs from
// that state until the task must wait, and returns the [Step] built by one of
// the [Context] helpers:
//
//	c.Await(ev)                 wait for an Event (resolved or rejected)
//	c.TryAwait(ev)              the fast path inline: true if the wait ends at
//	                            once (ev fired, cancellation pending)
//	c.AwaitTimeout(ev, d)       ... or ErrTimeout after d
//	c.AwaitWith(ev, cancel, d)  ... or ErrCancelled when the cancel Event fires
//	c.Sleep(d), c.SleepUntil(t) wait on the reactor's nanosecond timers (c.Now())
//	c.AwaitReadable(fd)         wait for fd readiness (also AwaitWritable); then
//	                            fd.TryRead / fd.TryWrite for async IO
//	c.AwaitSource(src, d)       wait for a reactor Source: Trigger (a wake-up
//	                            from another goroutine), Signal, Process exit,
//	                            an FD from ListenUDP (TryRecvfrom, TrySendto)
//	c.ResumeWhen(ev, cb) ...    the general wait: any number of events, each
//	c.Suspend(d)                with ResolveCallback, CancelCallback or a
//	                            CustomCallback; c.TriggeredEvents lists the
//	                            events that fired during the wait
//	c.Yield()                   go to the tail of the run queue
//	c.Done(), c.Fail(err)       finish
//
// On the next Resume, c.Err() and c.Result() give the outcome of the wait:
// nil and the event's value, the event's rejection error, ErrTimeout or
// ErrCancelled. A wait that can end at once does: awaiting an Event that is
// already fired resumes the task immediately, without a queue round trip (the
// reference design's fast path); TryAwait takes that path without even returning from
// Resume, as compiled state machines poll a ready future inline.
//
//	type fetch struct {
//		stackless.Coro
//		state int
//		ready *stackless.Event
//	}
//
//	func (f *fetch) Resume(c *stackless.Context) stackless.Step {
//		switch f.state {
//		case 0:
//			f.state = 1
//			return c.AwaitTimeout(f.ready, time.Second)
//		default:
//			if err := c.Err(); err != nil {
//				return c.Fail(err)
//			}
//			use(c.Result())
//			return c.Done()
//		}
//	}
//
// Run it with s := stackless.New(); s.Spawn(&fetch{ready: ev}); s.Run().
//
// # Scheduling
//
// The [Scheduler] runs on the calling goroutine. Its run queue is a ring
// buffer with two priorities (High is enqueued at the head, Normal at the
// tail; dequeue is from the head; a Yield always goes to the tail). At each
// suspend point (a wait that did not end at once, a Yield, a task's finish)
// it runs the FIFO batch of [Microtask]s, ticks the reactor without blocking
// if the reactor has active events and the tick interval (DefaultTickInterval, 100 µs) has passed,
// and resumes the head of the queue. With the queue empty it blocks in the
// reactor until an event or the nearest timer. With nothing runnable, nothing
// active in the reactor and tasks still waiting, Run reports a
// [*DeadlockError] naming them and shuts down.
//
// Run's first blocking reactor wait locks the goroutine to its thread for the
// rest of Run and lowers the thread's timer slack to 1 ns (restored when Run
// returns), so an epoll_pwait2 deadline is not pushed up to 50 µs late. The
// reactor still gathers deadlines that fall within its coalescing window
// (reactor.Options.Coalesce, default 50 µs) into one wake-up, so many
// sleeping tasks do not each cost a wake-up, while an isolated deadline
// wakes exactly; [Scheduler.WaitInfo] reports the wait, the slack and the
// window in effect (see docs/design.md §4).
//
// A task switch is a return from one Resume and the call of the next; the
// reference design's direct switch and scheduler coroutine collapse into
// the run loop. A task that waits or yields and is the next to run continues
// without a switch. [SwitchHandler]s (Enter, Leave, Finish; returning false
// removes one): Leave is called when a task gives control up (it waits, or
// yields with other tasks queued), before the scheduler picks the next
// task, so a High task a Leave handler spawns runs next; a Yield with
// nobody else queued calls Leave only if another task then takes control.
// Enter is called when a task gets control after another had it.
// [Scheduler.AddCurrentSwitchHandler] is the reference design's form of
// adding one: before Run it binds to the main task of the next RunMain.
//
// # Cancellation and shutdown
//
// The cancellation is delivered into the state machine, so its cleanup
// states run. [Scheduler.Cancel] wakes a waiting task with ErrCancelled; a
// queued or running one gets ErrCancelled from its next wait, which returns
// at once; a task that never started is dropped (its waker becomes Ignored).
// [Scheduler.Shutdown] (also started by the first task or microtask error)
// cancels every task in spawn order and lets the cleanups run, waits
// included. When nothing is runnable any more (or an error happens during
// the shutdown), the final phase drops pending microtasks and tasks that
// never started, and makes every other task unwind: a waiting one is woken
// (queued by its priority), and each is resumed in run-queue order with
// [Context.Unwinding] true and ErrCancelled instead of its wait's outcome;
// every further wait returns at once, so it must run its cleanup and finish.
// A task spawned during the graceful phase (by a cleanup, say) starts
// cancelled (its first wait returns ErrCancelled at once), so it cannot hold
// Run open; Spawn is refused in the final phase. [Scheduler.Destroy]
// finalises one task the same way: a started task that is queued or waiting
// becomes Ignored and is resumed once, unwinding. With
// Options.ShutdownOnSignal, SIGINT or SIGTERM starts the graceful shutdown.
//
// # The waker
//
// Each task's [Waker] is embedded in its header and reused for every wait.
// Its status follows the reference design (docs/design.md §1, the waker): NoStatus (running), Waiting (suspended, its
// events started), Queued (woken or yielded, in the run queue), Ignored
// (queued but to be dropped, or, for a destroyed started task, resumed only
// to unwind), Result (resumed from a wait). Events are
// subscribed inactive by the helpers and started only after Resume returns;
// the first trigger (resolve, timeout, cancellation) wins and stops the
// others.
//
// # Memory
//
// A task's memory is exactly its state struct: [StateSize] (HeaderSize bytes
// of header plus the task's own fields), allocated once by the caller.
// Spawning, waiting on events, timers and fds, and resuming allocate nothing
// per task: an event's first plain waiter is kept inline in the Event (a
// pointer to its task), further waiters are linked intrusively through
// nodes in the waker, and
// a timeout is a reactor.TimerNode inline in the waker, in the reactor's one
// timer heap (the design impl/stackful uses too; docs/design.md §4); a
// timer's wake prefetches the three cache lines past the task's Coro (its
// own fields, when it embeds Coro first), which its Resume reads next, and
// a task going to sleep prefetches the Coro and those lines of the task
// queued next (Scheduler.addTimer). The
// shared run queue holds one 8-byte slot per queued task, the reactor's
// timer heap one 24-byte slot per sleeping task. [AllocSize] gives the heap footprint the Go allocator makes
// of the struct (its size class); the tests check both against
// runtime.MemStats.
//
// # Panics
//
// A panic in Resume is not caught: it unwinds out of Run like any Go panic,
// and the scheduler must not be used afterwards. Report failures with
// c.Fail instead.
//
// # Concurrency
//
// A Scheduler, its tasks and its Events belong to the goroutine that calls
// Run. Schedulers share no state: several can run at once on different
// goroutines. Another goroutine can wake the scheduler only through the reactor (a
// reactor.Trigger from [Scheduler.Loop]).
package stackless
