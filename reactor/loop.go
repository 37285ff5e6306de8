package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Errors reported by the loop and its events.
var (
	// ErrClosed is delivered to a Poll whose FD was closed while the poll was
	// pending, and returned by IO on a closed FD.
	ErrClosed = errors.New("reactor: file descriptor closed")
	// ErrClosedOutside is delivered when an fd number was closed behind the
	// loop's back (close(2) instead of FD.Close) and then reused for a new FD.
	ErrClosedOutside = errors.New("reactor: file descriptor was closed without FD.Close and its number reused")
	// ErrLoopClosed is returned by Tick and the constructors after Loop.Close.
	ErrLoopClosed = errors.New("reactor: loop closed")
	// ErrNotSupported wraps every "not supported: <reason>" error, so callers
	// can test errors.Is(err, ErrNotSupported).
	ErrNotSupported = errors.New("not supported")
	// ErrWouldBlock is what the Try* IO helpers return when the fd is not
	// ready: it is unix.EAGAIN itself, so errors.Is works with either name.
	ErrWouldBlock error = unix.EAGAIN
)

// pwait2Probe remembers whether epoll_pwait2 works in this process.
var pwait2Probe struct {
	once sync.Once
	err  error
}

// noDeadline marks "no timer pending" in deadline computations.
const noDeadline = int64(-1)

// DefaultCoalesce is the default Options.Coalesce: the kernel's default
// timer slack, so a batched timer is never later than a default-slack wait
// may make any timer.
const DefaultCoalesce = 50 * time.Microsecond

// coalesceScanMax bounds the heap entries wakeDeadline looks at: with more
// deadlines than this inside the window, the wait simply sleeps to the
// window's end, which the last of them is close to anyway.
const coalesceScanMax = 64

// Options configure a Loop. The zero value is the production configuration.
type Options struct {
	// Clock replaces CLOCK_MONOTONIC as the source of Now(). It exists for
	// model tests that advance time by hand; such tests should only use
	// Tick(true), since a blocking Tick still sleeps in real time for the
	// difference between the injected clock and the nearest deadline.
	Clock func() int64
	// UseTimerfd makes blocking waits use epoll_wait plus a timerfd even when
	// the kernel has epoll_pwait2. It costs one timerfd_settime per new
	// nearest deadline, but a timerfd is not subject to the thread's timer
	// slack, which epoll_pwait2 is (see BenchmarkTimerLateness). Also how
	// tests exercise the fallback.
	UseTimerfd bool
	// OwnThread says that the goroutine calling NewWithOptions has locked
	// its OS thread (runtime.LockOSThread) and will call Tick only from it,
	// so the loop may tune that thread: under epoll_pwait2 it sets the
	// thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK), which would
	// otherwise let every blocking wait overrun its deadline by up to 50 µs.
	// Close, called on the same thread, restores the previous slack. Go
	// offers no way to check that a goroutine is locked, so the loop takes
	// the caller's word; on an unlocked goroutine the setting lands on
	// whichever thread ran New and the waits keep the default slack.
	// Loop.WaitInfo says what is in effect.
	OwnThread bool
	// HoldP makes blocking waits keep the calling goroutine's P (Go's
	// scheduler's processor) while the kernel blocks the thread, as a C
	// event loop keeps its thread: the wait is a raw syscall, with no
	// entersyscall/exitsyscall around it. Without it, a wait longer than
	// one sysmon tick (20 µs) has its P taken back and handed to another
	// thread, which looks for work and finds none, and the loop's thread
	// must reacquire a P when it wakes; on a single-P process that churn
	// costs more CPU than the wake itself (an idle 2.5 ms wait: ~43 µs of
	// process CPU against ~22 µs raw on the 2026-12-07 AMD EPYC VM; see
	// docs/design.md §4). The price: while the loop sleeps, no other
	// goroutine runs on its P. Where GOMAXPROCS is 1, other goroutines wait
	// until Go's sysmon preempts the loop's goroutine (after ~10 ms of
	// "running"): its signal interrupts the wait (EINTR), the loop passes
	// a preemption point and waits again. Signal's forwarding goroutine is
	// such a goroutine: on one P a Unix signal can reach an idle loop up
	// to ~10 ms late. A stop-the-world (GC) interrupts the wait the same
	// way. With GOMAXPROCS ≥ 2 the other Ps run them as usual. The
	// stackful and stackless runtimes set it: their loop's thread is the
	// runtime's one thread. WaitInfo.HoldP and WaitMethod report it.
	HoldP bool
	// Coalesce is the window within which a blocking wait gathers timer
	// deadlines into one wake-up. When the nearest deadline d has others
	// due by d+Coalesce, the wait sleeps until the last of them, and one
	// timer phase fires the lot; an isolated deadline (nothing else due
	// within the window) gets its own exact wake-up. So a timer fires at
	// most Coalesce late on account of batching (the kernel's default
	// timer slack, 50 µs, allows as much on every wait, isolated or not),
	// and a loop with many timers pays one wake-up per window instead of
	// one per deadline. 0 means DefaultCoalesce; a negative value turns
	// coalescing off (every deadline its own wake-up). See
	// docs/design.md §4 (the reactor) for the trade-off.
	Coalesce time.Duration
	// MaxEvents is the initial size of the epoll_wait result buffer (default
	// 128). The buffer doubles, up to 4096, whenever a wait fills it.
	MaxEvents int
	// PoolThreads bounds the thread pool that runs Work, file IO and DNS
	// lookups (default DefaultPoolThreads = 4, like libuv). Threads start
	// on demand.
	PoolThreads int
	// PoolCPUs, when not empty, are the only CPUs the pool's threads run on:
	// each sets its own affinity (sched_setaffinity) as it starts, before
	// it takes any work, and keeps it for its life. A caller that keeps the
	// loop's thread on one CPU names the others here, so that a hand-off to
	// the pool always crosses to another CPU, as a libuv pool thread on
	// another core does, instead of the kernel deciding, wake by wake,
	// whether the two threads share a core (pool.go says what that cost
	// the figures). NewWithOptions refuses a set no thread of this process
	// may run on. Empty: the pool's threads run wherever the kernel puts
	// them.
	PoolCPUs []int
	// PoolQueue bounds the Work waiting for a pool thread (default
	// DefaultPoolQueue); Work.Start beyond it fails with ErrPoolQueueFull.
	PoolQueue int
	// DNSServer, "host:port", sends every Resolve to that server over UDP
	// (TCP for truncated answers) instead of the system's resolv.conf
	// servers. Tests and scenarios point it at a responder they run.
	DNSServer string
}

// Stats are the loop's counters. Everything but Wakeups is written only by
// the loop goroutine.
type Stats struct {
	Ticks       uint64 // calls to Tick
	Fired       uint64 // event callbacks run
	Syscalls    uint64 // syscalls made by the loop goroutine: waits, epoll_ctl, eventfd/timerfd reads and settime, Try* IO, registration
	Wakeups     uint64 // eventfd writes by Trigger.Signal (any goroutine); coalesced signals do not write
	Stale       uint64 // epoll events dropped because their fd was closed or its number reused since they were queued
	Interrupted uint64 // waits interrupted by a signal (EINTR) and retried

	// Thread pool (Work, and through it file IO and DNS).
	WorkSubmitted uint64 // Work.Start calls accepted
	WorkCompleted uint64 // completions delivered: the Work's callback ran
	WorkCanceled  uint64 // work removed from the queue before it ran (Stop, Loop.Close)
	WorkDiscarded uint64 // jobs that ran but whose Work was stopped (or the loop closed) before the callback
	PoolThreads   uint64 // pool threads started

	WatchEvents uint64 // inotify events read (Watch)
}

// readyEvent is an event queued to fire in the ready phase of a Tick. Its
// fireQueued re-checks the firing condition: the event may have been stopped,
// or its condition consumed, since it was queued.
type readyEvent interface{ fireQueued() }

// Loop is a single-threaded epoll event loop. All methods, and all methods of
// the events it creates, must be called from the goroutine that owns the
// loop; the only exception is Trigger.Signal.
type Loop struct {
	epfd int
	// injected is Options.Clock, nil for the real clock: readClock calls
	// nanotime directly then, not through a func value (an indirect call on
	// every sleep's fresh reading).
	injected func() int64
	now      int64 // cached clock, refreshed at tick start, after the wait, and by UpdateTime
	// coalesce is Options.Coalesce resolved: the batching window of a
	// blocking wait in ns, 0 when off.
	coalesce int64
	active   int // started events that can still fire
	closed   bool

	timers timerHeap
	seq    uint64    // insertion counter: orders timers with equal deadlines
	far    farTimers // the timers due from the next bucket on (far.go)
	run    timerRun  // the ring's moved buckets, sorted (timerrun.go)
	// pending holds the nodes started by StartFromNextReading since the
	// last clock reading, in call order; nil where one was stopped or
	// re-armed since. UpdateTime arms them.
	pending []*TimerNode
	batch   []timerEntry // runTimers' buffer of due entries, kept between phases
	due     dueScratch   // takeDue's scratch

	fds    []fdSlot // indexed by fd number
	events []unix.EpollEvent
	ready  []readyEvent // events to fire in this tick's ready phase
	spare  []readyEvent // the other half of the double buffer

	// userFDs counts the fds in fds that are not the loop's own eventfd or
	// timerfd (fdKind.userFD): IO FDs, pidfds, the inotify fd. While it is
	// 0 and no wake-up is pending, a non-blocking poll cannot return an
	// event, and Tick skips it.
	userFDs int

	// Blocking-wait strategy, fixed at New.
	pwait2       bool
	tfd          *FD   // timerfd (fallback only)
	tfdArmed     int64 // deadline the timerfd is armed for, noDeadline if disarmed
	waitMethod   string
	waitInfo     WaitInfo
	slackTid     int   // thread whose slack New lowered, 0 if none
	slackPrev    int64 // that thread's slack before, restored by Close
	wake         *FD   // eventfd that Trigger.Signal writes
	wakePending  atomic.Uint32
	signalling   atomic.Int32 // Signal calls between checking closedShared and writing the eventfd
	closedShared atomic.Bool  // closed, readable from other goroutines
	wakeups      atomic.Uint64
	triggers     []*Trigger
	signals      *signalState
	pool         *threadPool
	inotify      *inotifyState
	resolver     *net.Resolver      // Resolve's, made on first use
	baseCtx      context.Context    // parent of every lookup's context
	baseCancel   context.CancelFunc // Close cancels lookups in flight with it
	opts         Options

	stats Stats
}

// New creates a loop with the default options.
func New() (*Loop, error) { return NewWithOptions(Options{}) }

// NewWithOptions creates a loop: an epoll instance, an eventfd for
// cross-thread wakeups and, when epoll_pwait2 is missing (ENOSYS/EPERM,
// detected once here) or UseTimerfd is set, a timerfd for sub-millisecond
// deadlines.
func NewWithOptions(o Options) (*Loop, error) {
	if o.MaxEvents < 0 {
		return nil, fmt.Errorf("reactor: Options.MaxEvents is %d; use a positive size or 0 for the default", o.MaxEvents)
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = 128
	}
	if o.Coalesce == 0 {
		o.Coalesce = DefaultCoalesce
	}
	if err := checkPoolCPUs(o.PoolCPUs); err != nil {
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	l := &Loop{epfd: epfd, tfdArmed: noDeadline, events: make([]unix.EpollEvent, o.MaxEvents), opts: o,
		pending: make([]*TimerNode, 0, pendingCap)}
	clockName := "CLOCK_MONOTONIC"
	if o.Clock != nil {
		l.injected, clockName = o.Clock, "injected"
	}
	l.now = l.readClock()
	l.coalesce = max(0, int64(o.Coalesce))
	l.waitInfo.Coalesce = time.Duration(l.coalesce)

	// Probe epoll_pwait2 once per process with a zero timeout. ENOSYS (old
	// kernel) or EPERM (a seccomp filter that predates it) selects the
	// timerfd fallback.
	pwait2Probe.once.Do(func() {
		var zero unix.Timespec
		_, pwait2Probe.err = epollPwait2(epfd, l.events, &zero, true)
		l.stats.Syscalls++
	})
	perr := pwait2Probe.err
	l.pwait2 = perr == nil && !o.UseTimerfd
	l.waitInfo.Clock = clockName
	switch {
	case l.pwait2:
		// epoll_pwait2 sleeps with the calling thread's timer slack; name the
		// creating thread's so a reader knows the floor (timerfd has none).
		// On a thread the caller gave us, lower it to 1 ns first.
		l.waitInfo.Wait = "epoll_pwait2"
		l.waitMethod = "clock=" + clockName + " wait=epoll_pwait2"
		slack, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
		if errno == 0 && o.OwnThread && slack != 1 {
			if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1, 0); errno == 0 {
				l.slackTid, l.slackPrev = unix.Gettid(), int64(slack)
				slack = 1
			}
		}
		if errno == 0 {
			l.waitInfo.Slack = time.Duration(slack)
			l.waitInfo.SlackSet = o.OwnThread && slack == 1
			l.waitMethod += fmt.Sprintf(" timerslack=%dns", slack)
			if l.waitInfo.SlackSet {
				l.waitMethod += " (set by the loop: Options.OwnThread)"
			}
		} else {
			l.waitInfo.Slack = -1
			l.waitMethod += " timerslack=unknown (PR_GET_TIMERSLACK: " + errno.Error() + ")"
		}
	default:
		reason := "chosen by Options.UseTimerfd"
		if perr != nil {
			reason = "epoll_pwait2: " + perr.Error()
		}
		tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			unix.Close(epfd)
			return nil, os.NewSyscallError("timerfd_create", err)
		}
		if l.tfd, err = l.register(tfd, kindTimerfd, unix.EPOLLIN|unix.EPOLLET); err != nil {
			unix.Close(tfd)
			unix.Close(epfd)
			return nil, err
		}
		l.waitMethod = "clock=" + clockName + " wait=epoll_wait+timerfd (" + reason + ")"
		l.waitInfo.Wait, l.waitInfo.Reason = "epoll_wait+timerfd", reason
	}

	if l.coalesce > 0 {
		l.waitMethod += fmt.Sprintf(" coalesce=%dns", l.coalesce)
	} else {
		l.waitMethod += " coalesce=off"
	}
	if l.waitInfo.HoldP = o.HoldP; o.HoldP {
		l.waitMethod += " hold-P"
	}

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		l.Close()
		return nil, os.NewSyscallError("eventfd", err)
	}
	if l.wake, err = l.register(efd, kindWake, unix.EPOLLIN|unix.EPOLLET); err != nil {
		unix.Close(efd)
		l.Close()
		return nil, err
	}
	return l, nil
}

// Now returns the loop's cached monotonic time in nanoseconds. Like libuv's
// loop time it is refreshed at the start of each Tick and after the wait, so
// every callback of one phase sees the same value; call UpdateTime for a
// fresh reading.
func (l *Loop) Now() int64 { return l.now }

// UpdateTime refreshes the cached time from the clock, and arms the nodes
// started by StartFromNextReading since the last reading.
//
// TimerNode.StartFresh has its twin written out: change both.
func (l *Loop) UpdateTime() {
	old := l.now
	if l.injected == nil {
		l.now = nanotime()
	} else {
		l.now = l.injected()
	}
	if len(l.pending) > 0 {
		l.commitPending(l.now - old)
	}
}

// readClock reads the loop's clock: the injected one, or CLOCK_MONOTONIC.
func (l *Loop) readClock() int64 {
	if l.injected != nil {
		return l.injected()
	}
	return nanotime()
}

// Active returns the number of started events that can still fire. Zero
// means a blocking Tick would have nothing to wait for: a scheduler with no
// runnable coroutine, Active() == 0 and coroutines still suspended is
// deadlocked.
func (l *Loop) Active() int { return l.active }

// WaitMethod says how blocking waits honour nanosecond deadlines, e.g.
// "clock=CLOCK_MONOTONIC wait=epoll_pwait2 timerslack=50000ns
// coalesce=50000ns" or "clock=CLOCK_MONOTONIC wait=epoll_wait+timerfd
// (epoll_pwait2: function not implemented) coalesce=50000ns" (coalesce is
// Options.Coalesce, "off" when disabled). timerslack is the creating thread's PR_GET_TIMERSLACK: the
// kernel may let an epoll_pwait2 sleep overrun by that much (a timerfd is
// not subject to it).
func (l *Loop) WaitMethod() string { return l.waitMethod }

// WaitInfo describes a loop's blocking wait, field by field, for a results
// file's timer-floor line. Loop.WaitMethod is the same in one string.
type WaitInfo struct {
	Clock string // "CLOCK_MONOTONIC", or "injected" (Options.Clock)
	Wait  string // "epoll_pwait2" or "epoll_wait+timerfd"
	// Reason says why the timerfd wait is used: "chosen by
	// Options.UseTimerfd" or the error epoll_pwait2 gave. Empty otherwise.
	Reason string
	// Slack is the timer slack the kernel may add to a blocking wait: under
	// epoll_pwait2 the PR_GET_TIMERSLACK of the thread that created the loop
	// (after SlackSet), -1 if it could not be read; under the timerfd wait
	// 0, since a timerfd expiry is not subject to slack.
	Slack time.Duration
	// SlackSet reports that the loop lowered the thread's slack to 1 ns
	// itself (Options.OwnThread under epoll_pwait2).
	SlackSet bool
	// Coalesce is the batching window of blocking waits (Options.Coalesce):
	// deadlines within it of the nearest one share its wake-up, which is
	// then up to Coalesce late; an isolated deadline wakes exactly. 0:
	// coalescing is off.
	Coalesce time.Duration
	// HoldP reports Options.HoldP: blocking waits keep the goroutine's P.
	HoldP bool
}

// WaitInfo returns how the loop's blocking waits honour deadlines.
func (l *Loop) WaitInfo() WaitInfo { return l.waitInfo }

// Stats returns a snapshot of the counters.
func (l *Loop) Stats() Stats {
	s := l.stats
	s.Wakeups = l.wakeups.Load()
	if l.pool != nil {
		s.PoolThreads = uint64(l.pool.threadsStarted.Load())
	}
	return s
}

// Tick runs one iteration of the loop and returns how many callbacks ran.
// With noWait it only collects what is ready now; otherwise it blocks until
// an fd event, a trigger, a signal, a process exit or the nearest timer — but
// never when nothing is active (Active() == 0), something is already ready,
// or its timer phase has just run a callback (the caller may have work now).
func (l *Loop) Tick(noWait bool) (fired int, err error) {
	if l.closed {
		return 0, ErrLoopClosed
	}
	l.stats.Ticks++
	before := l.stats.Fired

	// 1. Time: one clock reading serves the whole phase.
	l.UpdateTime()
	// 2. Timers due now, in (deadline, start order).
	l.runTimers()
	if l.closed { // by a timer callback
		return int(l.stats.Fired - before), nil
	}
	// 3. Decide whether the poll may block, and until when. Not after step 2
	//    ran a callback: it may have made work for the caller (a coroutine
	//    made runnable), which must not wait behind another event or the next
	//    timer. A blocking Tick therefore returns at once after firing due
	//    timers; the caller's next Tick blocks if there is still nothing to do.
	//    Step 1's reading armed every node started by StartFromNextReading;
	//    one a timer handler starts has not got its deadline yet, but such a
	//    tick ran a callback, so it does not block, and step 5's reading
	//    arms the node.
	block := !noWait && l.active > 0 && len(l.ready) == 0 && !l.timerDue() && l.stats.Fired == before
	deadline := noDeadline
	if block && l.far.n > 0 {
		l.farEnsureMin()
	}
	if block && l.nearest() != nil {
		deadline = l.wakeDeadline()
	}
	// 4. Poll: one epoll wait; readiness is queued, not run, so no callback
	//    can invalidate an event later in the same batch. A non-blocking
	//    poll is skipped when the kernel can hold no event for us: no fd of
	//    the caller's is registered (userFDs) and no trigger, signal or pool
	//    completion has written the eventfd (wakePending is set before that
	//    write and cleared only after the eventfd is drained). A wake-up
	//    whose flag lands after this load is seen by the next Tick, as it
	//    would be had it come after the poll. So the non-blocking Tick a
	//    scheduler makes between coroutines (every 100 µs by default in
	//    impl/stackful and impl/stackless) costs no syscall while only
	//    timers are active.
	if block || l.userFDs > 0 || l.wakePending.Load() != 0 {
		err = l.poll(block, deadline)
	}
	// 5. Timers that came due while we were blocked.
	l.UpdateTime()
	l.runTimers()
	// 6. Ready callbacks: polls, triggers, signals, process exits.
	l.runReady()

	return int(l.stats.Fired - before), err
}

// wakeDeadline is when a blocking wait should end for the timers: the
// nearest deadline d if no other falls in (d, d+coalesce], else the last
// deadline in that window (the window's end if more than coalesceScanMax
// fall in it), so that one wake-up fires them all (Options.Coalesce). The
// heap or the run has at least one entry (nearest), and nearest is the
// earliest timer of all (farEnsureMin).
//
// The heap's entries due by the window's end form a subtree at the root of
// the 4-ary heap (a child is never earlier than its parent), so a
// depth-first walk that stops at the first later entry of each branch
// visits those entries and at most four times as many others. The run's
// are a prefix of it from the head (stopped entries skipped).
func (l *Loop) wakeDeadline() int64 {
	wake := l.nearest().deadline
	if l.coalesce <= 0 {
		return wake
	}
	limit := wake + l.coalesce
	l.farSync(limit) // the window's timers in the ring join the heap or run
	// found counts the window's entries, the earliest included.
	found := 0
	for r, i := &l.run, l.run.h; i < len(r.a) && r.a[i].deadline <= limit; i++ {
		if r.a[i].t == nil {
			continue // stopped
		}
		if found++; found > coalesceScanMax+1 {
			return limit // dense: many deadlines in the window
		}
		wake = max(wake, r.a[i].deadline)
	}
	a := l.timers.a
	if len(a) == 0 || a[0].deadline > limit {
		return wake
	}
	if found++; found > coalesceScanMax+1 {
		return limit
	}
	wake = max(wake, a[0].deadline)
	var stack [coalesceScanMax]int32
	sp, n := 0, len(a)
	for i := 0; ; {
		for c, end := 4*i+1, min(4*i+5, n); c < end; c++ {
			d := a[c].deadline
			if d > limit {
				continue
			}
			if found++; found > coalesceScanMax+1 {
				return limit // dense: many deadlines in the window
			}
			wake = max(wake, d)
			stack[sp] = int32(c)
			sp++
		}
		if sp == 0 {
			return wake
		}
		sp--
		i = int(stack[sp])
	}
}

// timerDue reports whether the earliest timer has expired at the cached time.
func (l *Loop) timerDue() bool {
	e := l.nearest()
	return e != nil && e.deadline <= l.now
}

// poll waits once (retrying on EINTR) and dispatches the returned events.
func (l *Loop) poll(block bool, deadline int64) error {
	for {
		n, err := l.wait(block, deadline)
		if err == unix.EINTR {
			// Go preempts goroutines with SIGURG, so EINTR is routine.
			l.stats.Interrupted++
			if deadline != noDeadline && l.readClock() >= deadline {
				block = false
			}
			continue
		}
		if err != nil {
			return os.NewSyscallError("epoll_wait", err)
		}
		l.dispatch(l.events[:n])
		if n == len(l.events) && n < 4096 {
			// Events left in the kernel's ready list come next tick; a bigger
			// buffer makes that rarer.
			l.events = make([]unix.EpollEvent, 2*n)
		}
		return nil
	}
}

// wait performs the epoll wait with the right timeout for the wait method.
func (l *Loop) wait(block bool, deadline int64) (int, error) {
	l.stats.Syscalls++
	if l.pwait2 {
		var ts unix.Timespec
		switch {
		case !block:
			return epollPwait2(l.epfd, l.events, &ts, true)
		case deadline == noDeadline:
			return epollPwait2(l.epfd, l.events, nil, l.opts.HoldP)
		default:
			if d := deadline - l.readClock(); d > 0 {
				ts = unix.NsecToTimespec(d)
			}
			return epollPwait2(l.epfd, l.events, &ts, l.opts.HoldP)
		}
	}
	if !block {
		return epollWait(l.epfd, l.events, 0, true)
	}
	if deadline != noDeadline && deadline != l.tfdArmed {
		// Re-arm only when the nearest deadline changed: a loop that blocks
		// repeatedly for the same timer pays one timerfd_settime.
		d := deadline - l.readClock()
		if d <= 0 {
			return epollWait(l.epfd, l.events, 0, true)
		}
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d)}
		l.stats.Syscalls++
		if err := unix.TimerfdSettime(l.tfd.fd, 0, &spec, nil); err != nil {
			return 0, err
		}
		l.tfdArmed = deadline
	}
	// A timerfd still armed for a cancelled timer just causes an empty tick.
	return epollWait(l.epfd, l.events, -1, l.opts.HoldP)
}

// dispatch turns epoll results into queued events. Each result carries the
// fd number and the generation it was registered with; a mismatch means the
// fd was closed (and maybe its number reused) after the kernel queued it.
func (l *Loop) dispatch(evs []unix.EpollEvent) {
	for i := range evs {
		ev := &evs[i]
		fdn := int(ev.Fd)
		if fdn >= len(l.fds) || l.fds[fdn].fd == nil || l.fds[fdn].gen != uint32(ev.Pad) {
			l.stats.Stale++
			continue
		}
		f := l.fds[fdn].fd
		switch f.kind {
		case kindIO:
			f.onEpoll(ev.Events)
		case kindWake:
			l.onWake()
		case kindTimerfd:
			l.stats.Syscalls++
			readCounter(f.fd)
			l.tfdArmed = noDeadline
		case kindPidfd:
			f.proc.onExit()
		case kindInotify:
			l.inotify.read(l)
		}
	}
}

// onWake handles the trigger eventfd: drain it, then clear wakePending, then
// look for pending triggers. The order matters: a Signal that sees
// wakePending still set skips its write, so its trigger's pending flag must
// be checked after the clear (see Trigger.Signal).
func (l *Loop) onWake() {
	l.stats.Syscalls++
	readCounter(l.wake.fd)
	l.wakePending.Store(0)
	for _, t := range l.triggers {
		if t.state == stateActive && t.pending.Load() != 0 {
			l.enqueue(t, &t.queued)
		}
	}
	if l.signals != nil {
		l.signals.scan(l)
	}
	if l.pool != nil {
		l.pool.collect(l)
	}
}

// enqueue adds e to the ready queue unless it is already there.
func (l *Loop) enqueue(e readyEvent, queued *bool) {
	if !*queued {
		*queued = true
		l.ready = append(l.ready, e)
	}
}

// runReady fires the events queued before this phase began. Events queued by
// these callbacks wait for the next tick, so a callback that re-arms an
// always-ready event cannot starve the loop.
func (l *Loop) runReady() {
	batch := l.ready
	l.ready = l.spare[:0]
	for i, e := range batch {
		batch[i] = nil
		if !l.closed { // a callback may close the loop
			e.fireQueued()
		}
	}
	l.spare = batch[:0]
}

// Close releases the loop: every FD still registered is closed (NewFD took
// ownership), process-exit pidfds too, and signal delivery is stopped. Events
// never fire after Close. Trigger.Signal stays safe to call from other
// goroutines during and after Close.
func (l *Loop) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	if l.baseCancel != nil {
		l.baseCancel() // lookups in flight return now rather than at their timeout
	}
	if l.pool != nil {
		// Queued work is cancelled; running jobs are awaited (they cannot
		// be interrupted), so that none outlives the loop.
		l.pool.close(l)
	}
	if l.signals != nil {
		l.signals.stop()
	}
	// Wait out Signal calls that may still write to the eventfd, so that no
	// write can hit a reused fd number after we close it.
	l.closedShared.Store(true)
	for l.signalling.Load() != 0 {
		osYield()
	}
	// Leave every event idle, so that Stop and Close on it after Loop.Close
	// are the no-ops their owners expect.
	for i := range l.timers.a {
		l.timers.a[i].t.index = -1
	}
	l.farClose()
	l.run.close()
	for _, n := range l.pending {
		if n != nil {
			n.index = -1
		}
	}
	l.pending = nil
	for _, t := range l.triggers {
		t.deactivate()
	}
	if l.inotify != nil {
		for _, ws := range l.inotify.watches {
			for _, w := range ws {
				w.deactivate()
			}
		}
	}
	for _, e := range l.ready {
		if w, ok := e.(*Work); ok && w.state == stateActive {
			l.stats.WorkDiscarded++ // collected, never delivered
		}
		if d, ok := e.(interface{ deactivate() }); ok {
			d.deactivate() // e.g. a Work whose completion was collected but not fired
		}
	}
	if l.signals != nil {
		for _, s := range l.signals.events {
			s.deactivate()
		}
	}
	var first error
	for i := range l.fds {
		if f := l.fds[i].fd; f != nil {
			for p := f.polls; p != nil; {
				next := p.next
				p.prev, p.next = nil, nil
				p.deactivate()
				p = next
			}
			f.polls = nil
			if f.proc != nil {
				f.proc.deactivate()
			}
			f.closed, f.err = true, ErrClosed
			l.fds[i].fd = nil
			if err := unix.Close(f.fd); err != nil && first == nil {
				first = os.NewSyscallError("close", err)
			}
		}
	}
	if l.slackTid != 0 && l.slackTid == unix.Gettid() {
		// Give the thread back as we found it; from another thread this
		// would change the wrong one's slack, so then it is left alone.
		unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, uintptr(l.slackPrev), 0)
		l.slackTid = 0
	}
	if err := unix.Close(l.epfd); err != nil && first == nil {
		first = os.NewSyscallError("close", err)
	}
	l.timers = timerHeap{}
	l.ready, l.spare, l.triggers = nil, nil, nil
	l.active, l.userFDs = 0, 0
	return first
}
