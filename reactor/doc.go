// Package reactor is corobench's event loop: epoll on golang.org/x/sys/unix,
// with timers, fd polls, cross-thread triggers, signal and process-exit
// events, a thread pool (with file IO and DNS on it), child processes,
// filesystem events and terminals. The stackful and stackless runtimes suspend coroutines on it; the
// goroutine rows use Go's own netpoller and timers, which is the comparison.
//
// # Event model
//
// Events follow the reference design's waker model (docs/design.md §1, the
// waker; docs/design.md §4 for the reactor). An event is created idle with its
// callback (stored once, so the hot path never allocates); Start activates it
// (a timer begins ticking, a poll begins listening); it fires once, running
// its callback from Tick, and is idle again; Stop deactivates it early;
// Close releases it. A waiter typically does: Start the events it waits for,
// suspend, and on resume Stop the ones that did not fire.
//
//	Timer      NewTimer(cb)          Start(d) / StartAt(deadline)
//	TimerNode  embedded; Init(l, h)  the same, without an object or a closure
//	Poll       fd.NewPoll(want, cb)  fd readiness (Readable, Writable)
//	Trigger    NewTrigger(cb)        Signal() from any goroutine
//	Signal     NewSignal(sig, cb)    Unix signal delivered (via os/signal)
//	Process    NewProcess(pid, cb)   process exit (pidfd)
//	Work       NewWork(cb)           Start(job): job ran on a pool thread
//	FSReq      NewFSReq(cb)          StartOpen/Read/Pread/Write/Pwrite/Fsync/
//	                                 Stat/Fstat/Close: file IO on the pool
//	Child      Spawn(path, argv, o, cb)  a child whose stdio are pipe FDs and
//	                                 whose exit is a Process event (Kill, Wait)
//	Watch      NewWatch(path, m, cb) inotify events on a path (Events())
//	Resolve    NewResolve(cb)        Start(name, timeout): DNS lookup on the
//	                                 pool (Go's resolver; Options.DNSServer)
//
// Conditions that occur while an event is idle are not lost: an fd that
// became ready, a trigger signalled, a signal delivered (after NewSignal), a
// process that exited — each makes the next Start fire in the next Tick,
// without a syscall.
//
// # Thread pool
//
// Work that cannot be polled (CPU-bound jobs, regular-file IO, name
// resolution) runs on a bounded pool of OS threads, like libuv's
// threadpool: Work.Start queues a Job, a pool thread runs it, and its
// completion comes back through the trigger eventfd and fires the Work in
// the ready phase of a Tick. Options.PoolThreads (default 4) and
// Options.PoolQueue (default 1024) bound it; Stop cancels queued work and
// discards the result of running work (a running job cannot be
// interrupted); Loop.Close cancels the queue and waits for running jobs.
// See Work and threadPool for what "OS threads" means in Go.
//
// # IO
//
// NewFD registers any pollable fd (it becomes non-blocking; the FD owns it);
// Pipe, ListenTCP, DialTCP and ListenUDP create registered ones; NewTTY and
// OpenPTY make terminals (a TTY is an FD plus raw mode and window size);
// Spawn gives a child's stdin/stdout/stderr as FDs. Regular files cannot be
// polled: FSReq does their IO on the thread pool. The Try*
// helpers (TryRead, TryWrite, TryAccept, TryRecvfrom, TrySendto) never
// block: on ErrWouldBlock (EAGAIN) the caller starts a Poll, suspends, and
// retries when it fires. The suspension is the runtime's business; the
// reactor only says when to retry. Errors reach the waiter: a peer reset
// wakes the poll with Error set and the retried read returns ECONNRESET; an
// FD closed while a poll waits wakes it with Poll.Err() == ErrClosed.
//
// # The loop
//
// Tick(noWait) runs one iteration in named phases, modelled on libuv's
// uv_run (src/unix/core.c: uv__update_time, uv__run_timers,
// uv_backend_timeout, uv__io_poll, then time and timers again). On one
// screen, with the functions that do each step:
//
//	Tick(noWait)
//	  1 time     l.UpdateTime()        now = clock(): one read for the phase;
//	                                   arms the nodes started since the last
//	                                   read by StartFromNextReading
//	  2 timers   l.runTimers()         move the ring's buckets due by now
//	                                   onto the sorted run (farSync), then
//	                                   fire every node due at now, in
//	                                   (deadline, start order): the earlier
//	                                   of the run's head and the heap's
//	                                   minimum popped one by one, or taken
//	                                   out as one batch when many are due in
//	                                   a big heap and none in the run
//	                                   (takeDue);
//	                                   no syscall and no clock read between
//	                                   firings
//	  3 timeout  block, deadline       block only if !noWait, Active() > 0,
//	                                   nothing queued, no timer due; until
//	                                   l.nearest().deadline (or forever)
//	  4 poll     l.poll → l.wait       one epoll_pwait2 (ns timespec), or
//	                                   epoll_wait + timerfd; retried on EINTR;
//	                                   skipped without blocking when no fd of
//	                                   the caller's is registered and no
//	                                   wake-up is pending (l.userFDs,
//	                                   l.wakePending)
//	             l.dispatch            results are queued (l.ready), not run
//	  5 timers   l.UpdateTime()        the wait took time: refresh once, and
//	             l.runTimers()         fire what came due during it
//	  6 ready    l.runReady()          run queued polls, triggers, signals,
//	                                   process exits (queued before phase 6)
//
// So a scheduler that calls Tick(true) between batches of coroutines pays
// one clock read per timer phase and at most one epoll syscall per tick,
// however many timers fire, and none while only timers are active. With
// noWait the wait has a zero timeout; otherwise it
// blocks until the nearest timer deadline or an fd/trigger/signal/process
// event — unless nothing is active (Active() == 0) or something is already
// ready, when it does not block at all.
//
// # Timers
//
// There is one timer mechanism, the intrusive TimerNode: a deadline and a
// heap position that a runtime embeds in its own per-coroutine waker, with
// firing delivered through the TimerHandler interface the waker implements
// (one interface call, no closure, no allocation). Timer is a TimerNode plus
// a stored callback, for callers without a struct of their own. Nodes due
// soon live in a 4-ary min-heap whose slots hold the key (deadline, start
// sequence) beside the node pointer, so sifting compares without touching a
// node (it only writes the moved node's index back).
// A hierarchical timing wheel was measured against it (wheel_test.go,
// BenchmarkTimerWheel, BenchmarkTimerFireSparse): the wheel arms and disarms
// faster (about 7 against 10 ns), but keeping the start order of equal
// deadlines means sorting each due slot, and it fired 1.4–3.6× slower than
// the heap whenever many timers shared a slot, and only tied with it when
// they were spread one per slot; it would also need occupancy bitmaps to find the nearest deadline
// for a blocking wait. Firing is what a sleeping coroutine pays per wake, so
// the heap stays. What the heap does not hold are the timers due past the
// next bucket boundary: they wait unsorted in a ring of 64 buckets of 131 µs
// (far.go), and when the loop's time reaches their bucket it is
// radix-sorted once onto the end of a sorted run (timerrun.go). Firing
// takes the earlier of the run's head and the heap's minimum, so such a
// timer never sifts through the heap, which holds only the timers started
// within a bucket's width of their deadline (and those past the ring's
// span). BenchmarkTimerChurn's loop, 10000 timers at ~64 due per phase: the
// ring -21% against the heap alone, then the run -15% against the ring
// moving buckets into the heap; 100000 timers: -25%, then about -30%.
// Either way every firing is in (deadline, start order). Start(d) is relative to the cached Now(), not to a fresh
// clock reading: like libuv, a runtime that arms many timers in one round
// calls UpdateTime once for the round rather than once per timer.
// StartFromNextReading(d) is the same saving for timers armed one by one
// between readings (a coroutine's sleep): d counts from the loop's next
// reading, so the timer never fires less than d after the call, and the
// sleeps begun before one reading share it. See ExampleTimerNode for the
// embedding. Neither runtime sleeps through it yet: until the next reading
// the timer's base waits behind whatever the next coroutines run (a
// timeout then fires after, not before, a CPU-bound task's resolve, which
// the shared semantic case race/timeout-wins rejects on stackful), so both
// runtimes read the clock once per timed wait and follow one rule:
// StartFresh(d), which reads the clock and arms the node d after that
// reading in one call.
//
// Blocking waits honour nanosecond deadlines: epoll_pwait2 takes a timespec
// (Linux 5.11+). Where it is missing (ENOSYS, probed once per process by the
// first New), or when Options.UseTimerfd asks for it, a timerfd armed for the
// nearest deadline wakes epoll_wait instead. WaitMethod
// names the choice, e.g. "clock=CLOCK_MONOTONIC wait=epoll_pwait2
// timerslack=50000ns coalesce=50000ns". Go's own timers round a sub-millisecond wait up to
// 1 ms (the runtime's netpoller waits in whole milliseconds) and libuv's
// timers are in milliseconds; these are not. BenchmarkTimerLateness and
// BenchmarkGoSleepLateness measure both. The kernel's timer slack still
// applies to epoll_pwait2 (50 µs by default; prctl PR_SET_TIMERSLACK lowers
// it for the calling thread, so a runtime that locks its loop to a thread
// can lower it, which Options.OwnThread makes the loop do); a timerfd is not
// subject to it. WaitInfo reports the wait and the slack in effect, for a
// results file's timer-floor line.
//
// With 1 ns slack every distinct deadline would get its own wake-up, and a
// wake-up costs the process far more than a firing (the kernel's timer
// interrupt and context switches, and Go's entersyscall/exitsyscall around
// the wait): with a thousand coroutines sleeping random 50 µs–5 ms, about
// 2.8 µs of process CPU per wake. So blocking waits coalesce
// (Options.Coalesce, default DefaultCoalesce = 50 µs, the kernel's default
// slack): if other deadlines fall within the window after the nearest one,
// the wait sleeps until the last of them and one timer phase fires them all;
// an isolated deadline still wakes exactly. The trade-off: a batched timer
// may fire up to the window late (never early, and firing order is
// unchanged), which is what the default slack allows on every wait; in
// exchange light load keeps the exact wake of 1 ns slack and heavy load pays
// one wake-up per window (about 1.3 µs of process CPU per wake at that
// load). WaitInfo.Coalesce records the window.
//
// Fds are registered once, edge-triggered, and never re-armed with epoll_ctl:
// see FD for why, and for the rule that reads and writes go through the Try*
// helpers. Counters (Stats) count ticks, callbacks and every syscall the loop
// goroutine makes, so claims like "a keep-alive request costs no epoll_ctl"
// are checked by tests.
//
// # Invariants
//
//   - One goroutine owns the loop: every method of the Loop and of its events
//     is called from it, except Trigger.Signal, which is safe from anywhere,
//     even during and after Loop.Close.
//   - Callbacks run only inside Tick, on the owning goroutine, never
//     re-entrantly, and never from Start: Start of an already-satisfied
//     event queues it for the next Tick.
//   - An event fires at most once per Start; Active() counts the started
//     events that have not fired or been stopped.
//   - Timers fire in (deadline, start order) order: equal deadlines fire in
//     the order they were started. A timer started from a callback with a
//     deadline that is already due fires in a later phase, never in the
//     running one, so a timer re-arming itself with zero delay cannot hang
//     the loop. Stopping or closing any event from any callback is safe; a
//     stopped event does not fire even if it was already queued.
//   - epoll results carry the fd number and a registration generation; a
//     result whose fd was closed or whose number was reused since is dropped
//     (Stats.Stale), never delivered to the new owner of the number.
//   - Now() changes only at phase boundaries and on UpdateTime.
//   - The loop starts no goroutines, except one per signal number while
//     Signal events for it exist (os/signal delivers through a channel).
//
// Memory: active events are reachable from the Loop (timer heap, fd table,
// ready queue); idle ones only from their owner. A runtime whose only
// pointer to an event sits on one of its own fiber stacks, which the GC does
// not scan, must keep the collector off or hold the pointer elsewhere.
package reactor
