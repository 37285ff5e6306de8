package stackless

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/timerslack"
	"github.com/corobench/corobench/reactor"
)

// reactorState is the scheduler's link to reactor/: the epoll loop, created
// on first use. Timeouts and sleeps are reactor.TimerNodes inline in the
// tasks' wakers, in the loop's own timer heap.
type reactorState struct {
	loop     *reactor.Loop
	owned    bool  // created by the scheduler: Close closes it
	lastTick int64 // loop time of the last tick
	// fresh says addTimer read the clock during the resume that just
	// ended, so the loop's cached time is as good as a new reading for
	// tickThrottled (see there).
	fresh    bool
	interval int64 // throttle of non-blocking ticks, ns

	// The 1 ns timer slack of Run's blocking waits (see lowerSlack).
	slackLowered bool    // this Run locked its thread and set the slack
	slackPrev    uintptr // the slack to restore at the end of Run
	slackSet     bool    // the last Run that blocked waited with 1 ns slack
	slackErr     error   // why the last attempt failed (prctl), nil otherwise
}

// Loop returns the scheduler's reactor, creating it if needed.
func (s *Scheduler) Loop() (*reactor.Loop, error) {
	if err := s.r.open(s); err != nil {
		return nil, err
	}
	return s.r.loop, nil
}

// Now returns a fresh reading of the reactor's monotonic clock
// (CLOCK_MONOTONIC) in nanoseconds, creating the reactor if needed. SleepUntil
// deadlines are on this clock, so a timer's lateness is Now() at wake-up minus
// its deadline. It panics if the reactor cannot be created (see Loop).
func (s *Scheduler) Now() int64 {
	l, err := s.Loop()
	if err != nil {
		panic(err)
	}
	l.UpdateTime()
	return l.Now()
}

// Close releases the reactor the scheduler created (a loop passed to
// Options.Loop is left open). Close it after Run has returned.
func (s *Scheduler) Close() error {
	if s.running {
		return errors.New("stackless: Close called while Run is running")
	}
	if s.r.loop == nil {
		return nil
	}
	var err error
	if s.r.owned {
		err = s.r.loop.Close()
	}
	s.r.loop = nil
	return err
}

func (r *reactorState) open(s *Scheduler) error {
	if r.loop != nil {
		return nil
	}
	// HoldP: the scheduler's thread is the loop's, so its blocking waits
	// keep the P, as a C runtime's loop keeps its thread (see
	// reactor.Options.HoldP; twin of impl/stackful New's setting).
	l, err := reactor.NewWithOptions(reactor.Options{HoldP: true})
	if err != nil {
		return fmt.Errorf("stackless: cannot create the reactor: %w", err)
	}
	r.loop, r.owned = l, true
	return nil
}

// tickThrottled ticks the reactor without blocking if at least the tick
// interval has passed since its last tick. The caller has checked that the
// reactor has active events, so an idle reactor costs no clock reading.
//
// A task that ended its resume with a relative sleep or timeout had the
// clock read by addTimer a few instructions ago; that reading (the loop's
// cached time) serves here instead of a second one: one clock read (about
// 20 ns) less per sleep. The throttle's view of time is then older by
// what ran since that addTimer (the end of the resume, or the microtasks
// of this iteration), so a due tick can come at most one iteration late;
// an iteration with no addTimer reads the clock.
func (s *Scheduler) tickThrottled() {
	l := s.r.loop
	if s.r.fresh {
		s.r.fresh = false
	} else {
		l.UpdateTime()
	}
	if l.Now()-s.r.lastTick >= s.r.interval {
		s.tick(true)
	}
}

// tick runs one reactor iteration; its callbacks queue the tasks they wake.
func (s *Scheduler) tick(noWait bool) {
	if !noWait && !s.r.slackLowered {
		s.lowerSlack()
	}
	s.stats.Ticks++
	if !noWait {
		s.stats.Blocks++
	}
	_, err := s.r.loop.Tick(noWait)
	s.r.lastTick = s.r.loop.Now()
	if err != nil {
		s.fail(fmt.Errorf("stackless: reactor tick failed: %w", err))
	}
}

// lowerSlack runs before Run's first blocking reactor wait: it locks the
// goroutine to its OS thread for the rest of Run and sets the thread's timer
// slack to 1 ns, so an epoll_pwait2 deadline is not pushed up to 50 µs late
// (the default slack). A Run that never blocks pays nothing. Under the
// timerfd wait slack does not apply. Twin of impl/stackful
// Scheduler.lowerSlack.
func (s *Scheduler) lowerSlack() {
	r := &s.r
	if r.loop.WaitInfo().Wait != "epoll_pwait2" {
		return
	}
	runtime.LockOSThread()
	prev, err := timerslack.Lower()
	r.slackLowered = true // at most one attempt per Run
	if err != nil {
		runtime.UnlockOSThread()
		r.slackErr, r.slackSet = err, false
		return
	}
	r.slackPrev, r.slackSet, r.slackErr = prev, true, nil
}

// restoreSlack undoes lowerSlack at the end of Run, on the thread it locked.
func (s *Scheduler) restoreSlack() {
	r := &s.r
	if !r.slackLowered {
		return
	}
	r.slackLowered = false
	if r.slackErr != nil {
		return
	}
	timerslack.Restore(r.slackPrev)
	runtime.UnlockOSThread()
}

// WaitInfo describes how Run's blocking reactor waits honour deadlines, for
// the timer-floor line of a result: the loop's clock and wait method and the
// timer slack in effect. A Run lowers its thread's slack to 1 ns at its first
// blocking wait under epoll_pwait2 (Slack 1 ns, SlackSet true once a Run has
// done so); before that it is the loop's report of the thread that created
// it. It creates the reactor if needed and panics if it cannot (see Loop).
func (s *Scheduler) WaitInfo() reactor.WaitInfo {
	l, err := s.Loop()
	if err != nil {
		panic(err)
	}
	wi := l.WaitInfo()
	if s.r.slackSet {
		wi.Slack, wi.SlackSet = timerslack.Slack, true
	}
	return wi
}

// coTimer is a task's reactor.TimerHandler: the node lives inline in the
// task's waker (one timer design with impl/stackful, docs/design.md §4), so a
// timeout or sleep allocates nothing and firing is one interface call on the
// task's own header. A separate named type keeps OnTimer out of Coro's
// method set.
type coTimer Coro

// OnTimer is the timeout: the loop has already disarmed the node. The
// end of a sleep, every Timer wake, is queued here without a further call
// (Scheduler.onTimer's sleep case, its twin, written out).
func (c *coTimer) OnTimer() {
	co := (*Coro)(c)
	w := &co.waker
	if !w.sleeping || w.status != Waiting {
		co.sched.onTimer(co)
		return
	}
	w.status = Queued
	w.triggered, w.result, w.err = nil, nil, nil
	if s := co.sched; co.prio == High || !s.queue.tryPushBack(co) {
		s.enqueue(co)
	}
	// The task's own fields follow its Coro (a task embeds Coro first, the
	// package's idiom) and nothing in the wake has read them yet: the
	// first thing its Resume does is wait for them. Start those loads now
	// (three lines from the Coro's end), so they overlap the rest
	// of the timer phase and the tasks queued ahead of this one. Timer
	// n=10000 (pprof of the timed region): the Resume's first read of its
	// fields went from 20.5% to 6.3% of the samples.
	prefetchTaskFields(uintptr(unsafe.Pointer(co)) + unsafe.Sizeof(Coro{}))
}

// addTimer starts co's timer: at the absolute deadline t, or t ns from now
// on a fresh clock reading taken here (TimerNode.StartFresh: the loop's
// cached time may be a whole tick old, which would fire early). The same
// rule and the same call as impl/stackful's waker.startTimer, its twin.
func (s *Scheduler) addTimer(co *Coro, t int64, absolute bool) {
	// co is about to give control up, and the queue's head runs next.
	// When tasks sleep one after another (the Timer scenario), the head
	// was woken by a timer phase whose hundreds of wakes have pushed its
	// lines out of L1 and often L2; fetching them now overlaps the misses
	// with this arming (a clock read and the timer's insert) instead of
	// stalling the next Resume. Here, not in Scheduler.resume's sleep case
	// that calls this: the call there moved resume's loops and cost
	// Yield n=2 5% (benchrun cell, pinned, alternated), and on a yield or
	// an await the head is usually in cache anyway.
	// BenchmarkTimerWakeRandom n=10000 (random sleeps of 1-100 us,
	// pinned): ~141 -> ~116 cpu-ns/wake.
	if next := s.queue.Front(); next != nil {
		prefetchTask(uintptr(unsafe.Pointer(next)))
	}
	l := s.r.loop
	n := &co.waker.timer
	if n.Loop() != l {
		// Bound at the first timed wait on this loop: the loop is created
		// on first use, and a pooled task struct may be spawned on another
		// scheduler. The handler is always co itself (the node lives in
		// co), so a node bound to l needs nothing more (impl/stackful
		// binds once per record: timerBound).
		n.Init(l, (*coTimer)(co))
	}
	if absolute {
		n.StartAt(t)
		return
	}
	n.StartFresh(time.Duration(t))
	s.r.fresh = true
}

// removeTimer stops co's timeout.
func (s *Scheduler) removeTimer(co *Coro) { co.waker.timer.Stop() }

// Source is a reactor event a task can wait on: an fd poll, a trigger, a
// signal or a process exit. It is made once and reused for every wait; the
// waker starts it when the task suspends and stops it when the wait ends
// (the reference design's "created inactive, started at suspend, stopped after"). At
// most one task at a time may wait on a Source.
type Source struct {
	ev interface {
		Start()
		Stop()
	}
	waiter  *Coro               // the task waiting on it, nil if none
	outcome func() (any, error) // the wait's result when the event fires
}

// fireSource is the callback of every Source's reactor event: it wakes the
// task waiting on it, if it still waits on it.
func (s *Scheduler) fireSource(src *Source) {
	co := src.waiter
	src.waiter = nil
	if co != nil && co.waker.src == src {
		v, err := src.outcome()
		s.wake(co, nil, v, err)
	}
}

// AwaitSource suspends the task until src fires (or the timeout, if d > 0,
// expires: ErrTimeout). Result and Err are the source's outcome.
func (c *Context) AwaitSource(src *Source, d time.Duration) Step {
	co := c.cur
	w := co.waker.prepare()
	if other := src.waiter; other != nil && other != co && other.waker.status == Waiting && other.waker.src == src {
		w.immediate, w.extras = true, true
		w.err = fmt.Errorf("stackless: task %s waits on a source task %s already waits on: one waiter per source (per fd direction)", taskName(co), taskName(other))
		return Step{stepSuspend}
	}
	src.waiter = co
	w.src = src
	w.setTimeout(d) // also marks the wait as having extras
	return Step{stepSuspend}
}

// FD is a file descriptor registered with the scheduler's reactor, with one
// reusable poll Source per direction, so that tasks wait for readiness with
// Context.AwaitReadable / AwaitWritable without allocating. The fd is
// registered once, edge-triggered: waiting again costs no syscall.
type FD struct {
	s      *Scheduler
	fd     *reactor.FD
	rd, wr Source
}

// NewFD registers fd (which becomes non-blocking and owned by the FD: Close
// closes it) with the scheduler's reactor.
func (s *Scheduler) NewFD(fd int) (*FD, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	rf, err := l.NewFD(fd)
	if err != nil {
		return nil, err
	}
	return s.wrapFD(rf), nil
}

// wrapFD makes the FD of a registered reactor descriptor.
func (s *Scheduler) wrapFD(rf *reactor.FD) *FD {
	f := &FD{s: s, fd: rf}
	rd := rf.NewPoll(reactor.Readable, func() { s.fireSource(&f.rd) })
	wr := rf.NewPoll(reactor.Writable, func() { s.fireSource(&f.wr) })
	f.rd = Source{ev: rd, outcome: func() (any, error) { return rd.Revents(), rd.Err() }}
	f.wr = Source{ev: wr, outcome: func() (any, error) { return wr.Revents(), wr.Err() }}
	return f
}

// Reactor returns the underlying reactor FD.
func (f *FD) Reactor() *reactor.FD { return f.fd }

// Fd returns the file descriptor number (for syscalls such as accept4).
func (f *FD) Fd() int { return f.fd.Fd() }

// ClearReady forgets cached readiness: call it after an EAGAIN from a
// syscall made without TryRead/TryWrite (accept4, recvfrom, ...), before
// awaiting readiness again.
func (f *FD) ClearReady(e reactor.Events) { f.fd.ClearReady(e) }

// TryRead reads without blocking; reactor.ErrWouldBlock means: return
// c.AwaitReadable(f) and read again when resumed.
func (f *FD) TryRead(p []byte) (int, error) { return f.fd.TryRead(p) }

// TryWrite writes without blocking; a short count or reactor.ErrWouldBlock
// means: return c.AwaitWritable(f) and write the rest when resumed.
func (f *FD) TryWrite(p []byte) (int, error) { return f.fd.TryWrite(p) }

// Close closes the polls and the fd. A task waiting on it is woken with
// reactor.ErrClosed (here, not in a later tick: the polls are released now).
func (f *FD) Close() error {
	for _, src := range []*Source{&f.rd, &f.wr} {
		if co := src.waiter; co != nil && co.waker.src == src {
			src.waiter = nil
			f.s.wake(co, nil, nil, reactor.ErrClosed)
		}
		src.ev.(*reactor.Poll).Close()
	}
	return f.fd.Close()
}

// AwaitReadable suspends the task until f is readable (or hung up, in error,
// or closed: then Err says so). Result is the reactor.Events it fired with.
func (c *Context) AwaitReadable(f *FD) Step { return c.AwaitSource(&f.rd, 0) }

// AwaitWritable suspends the task until f is writable.
func (c *Context) AwaitWritable(f *FD) Step { return c.AwaitSource(&f.wr, 0) }

// AwaitReadableTimeout is AwaitReadable with a timeout (ErrTimeout).
func (c *Context) AwaitReadableTimeout(f *FD, d time.Duration) Step {
	return c.AwaitSource(&f.rd, d)
}

// Trigger wakes a task from another goroutine or thread (a reactor trigger:
// an eventfd). Signal is the only method safe off the scheduler's goroutine;
// signals coalesce, and a Signal while no task waits is remembered: the next
// wait fires at the next reactor tick.
type Trigger struct {
	Source
	tr *reactor.Trigger
}

// NewTrigger returns a trigger; await it with c.AwaitSource(&tr.Source, d).
func (s *Scheduler) NewTrigger() (*Trigger, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	t := &Trigger{}
	t.tr = l.NewTrigger(func() { s.fireSource(&t.Source) })
	t.Source = Source{ev: t.tr, outcome: func() (any, error) { return nil, nil }}
	return t, nil
}

// Signal wakes the trigger's waiter; safe from any goroutine.
func (t *Trigger) Signal() { t.tr.Signal() }

// Close releases the trigger.
func (t *Trigger) Close() { t.tr.Close() }

// Signal is a Unix signal as a Source (reactor.Signal); the wait's Result is
// the number of deliveries the firing covered (uint64).
type Signal struct {
	Source
	sg *reactor.Signal
}

// NewSignal returns a source for sig; only deliveries after NewSignal count.
func (s *Scheduler) NewSignal(sig unix.Signal) (*Signal, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	g := &Signal{}
	if g.sg, err = l.NewSignal(sig, func() { s.fireSource(&g.Source) }); err != nil {
		return nil, err
	}
	g.Source = Source{ev: g.sg, outcome: func() (any, error) { return g.sg.Count(), nil }}
	return g, nil
}

// Close releases the signal event (the signal gets its default behaviour
// back when it was the last one).
func (g *Signal) Close() { g.sg.Close() }

// Process is a process exit as a Source (reactor.Process, pidfd): awaiting it
// returns once pid has exited; it does not reap the child.
type Process struct {
	Source
	p *reactor.Process
}

// NewProcess returns a source for pid's exit; it fails with an error wrapping
// reactor.ErrNotSupported on kernels without pidfd_open.
func (s *Scheduler) NewProcess(pid int) (*Process, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	p := &Process{}
	if p.p, err = l.NewProcess(pid, func() { s.fireSource(&p.Source) }); err != nil {
		return nil, err
	}
	p.Source = Source{ev: p.p, outcome: func() (any, error) { return nil, nil }}
	return p, nil
}

// Close releases the event and its pidfd.
func (p *Process) Close() { p.p.Close() }

// shutdownSignals are the signals Options.ShutdownOnSignal turns into a
// graceful shutdown (the reference design's shutdown on an OS signal,
// docs/design.md §1, graceful shutdown). impl/stackful has the twin of
// this watch (its watchShutdownSignals).
var shutdownSignals = [...]unix.Signal{unix.SIGINT, unix.SIGTERM}

// watchShutdownSignals starts, for one Run, a reactor signal event per
// shutdown signal; the first delivery closes them all (a second Ctrl-C then
// has its default effect) and starts a graceful shutdown.
func (s *Scheduler) watchShutdownSignals() error {
	l, err := s.Loop()
	if err != nil {
		return err
	}
	for _, sig := range shutdownSignals {
		ev, err := l.NewSignal(sig, func() {
			s.stopShutdownSignals()
			s.Shutdown()
		})
		if err != nil {
			s.stopShutdownSignals()
			return err
		}
		ev.Start()
		s.sigWatch = append(s.sigWatch, ev)
	}
	return nil
}

// stopShutdownSignals closes the watch (at the first signal, or when Run
// ends): the signals get their default behaviour back.
func (s *Scheduler) stopShutdownSignals() {
	for i, ev := range s.sigWatch {
		ev.Close()
		s.sigWatch[i] = nil
	}
	s.sigWatch = s.sigWatch[:0]
}

// activeEvents is the number of active reactor events that can wake a
// task: the shutdown-signal watch is not one of them, so it neither keeps
// an idle run alive nor hides a deadlock.
func (s *Scheduler) activeEvents() int {
	n := s.r.loop.Active()
	for _, ev := range s.sigWatch {
		if ev.Active() {
			n--
		}
	}
	return n
}

// ListenUDP returns a UDP socket bound to addr (port 0: any free port),
// registered with the scheduler's reactor: receive with f.TryRecvfrom and
// c.AwaitReadable, send with f.TrySendto and c.AwaitWritable (impl/stackful's
// ListenUDP is the blocking twin).
func (s *Scheduler) ListenUDP(addr netip.AddrPort) (*FD, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	rf, err := l.ListenUDP(addr)
	if err != nil {
		return nil, err
	}
	return s.wrapFD(rf), nil
}

// TryRecvfrom receives one datagram without blocking; reactor.ErrWouldBlock
// means: return c.AwaitReadable(f) and receive again when resumed. The
// sender is a unix.Sockaddr, which allocates.
func (f *FD) TryRecvfrom(p []byte) (int, unix.Sockaddr, error) { return f.fd.TryRecvfrom(p) }

// TrySendto sends one datagram to to without blocking; reactor.ErrWouldBlock
// means: return c.AwaitWritable(f) and send again when resumed.
func (f *FD) TrySendto(p []byte, to unix.Sockaddr) error { return f.fd.TrySendto(p, to) }

// Connect sets a datagram socket's default peer; TryRead and TryWrite then
// exchange datagrams with it.
func (f *FD) Connect(addr netip.AddrPort) error { return f.fd.Connect(addr) }

// LocalAddr returns the socket's bound address (the port picked for port 0).
func (f *FD) LocalAddr() (netip.AddrPort, error) { return f.fd.LocalAddr() }
