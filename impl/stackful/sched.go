package stackful

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/impl/stackful/stackpool"
	"github.com/corobench/corobench/internal/microtask"
	"github.com/corobench/corobench/internal/timerslack"
	"github.com/corobench/corobench/reactor"
)

// Backend selects how coroutines switch.
type Backend uint8

const (
	// Asm runs coroutines on pooled fiber stacks with the Go-assembly switch
	// (row stackful-asm): direct, symmetric switches; the GC is held off
	// during Run.
	Asm Backend = iota
	// Coro runs each coroutine as an iter.Pull coroutine (row
	// stackful-coro): GC-safe, every handoff goes through the scheduler.
	Coro
)

func (b Backend) String() string {
	switch b {
	case Asm:
		return "asm"
	case Coro:
		return "coro"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// DefaultTickInterval is the default Options.TickInterval.
const DefaultTickInterval = 100 * time.Microsecond

// Options configure a Scheduler. The zero value selects the Asm backend with
// default stacks.
type Options struct {
	// Backend selects the switch: Asm (default) or Coro.
	Backend Backend
	// Stacks configures the fiber stack pool (Asm only): stack size, guard
	// pages, slab size, trimming. A fiber's stack never grows: code that
	// needs more than Stacks.StackSize dies with a fatal error
	// (fiber.ExplainCrash names this option).
	Stacks stackpool.Config
	// TickInterval is the least time between two non-blocking reactor ticks
	// made at suspend points while the reactor has active events (default
	// DefaultTickInterval; at most 1ms, the bound internal/semtest assumes).
	TickInterval time.Duration
	// OnMicrotaskError, if set, receives microtask errors and the run goes
	// on; otherwise a microtask error fails Run and starts a shutdown.
	OnMicrotaskError func(error)
	// MainName is the name of the main coroutine Run starts (default
	// "main"), as Coroutine.Name and in deadlock and panic reports.
	MainName string
	// ViaScheduler (Asm) routes every hand-off between two coroutines
	// through the scheduler's own context, two switches instead of one, as
	// schedulers without TrueAsync's direct switch do: a suspending
	// coroutine (Yield, a wait, Sleep) and a finishing one whose successor
	// has already started both switch to the scheduler, which switches to
	// the next coroutine. It exists to measure what the direct switch saves
	// (the handoff scenario); leave it off otherwise. Coro always goes
	// through the scheduler, so it changes nothing there. One thing stays:
	// a finished coroutine's context is taken over by the next coroutine if
	// that one has not started yet (Stats.Takeovers), which is no switch at
	// all, so there is nothing to route.
	ViaScheduler bool
	// ShutdownOnSignal makes SIGINT or SIGTERM delivered during Run start a
	// graceful shutdown (as Shutdown does; Run then returns nil) instead of
	// ending the process. The first such signal restores both signals'
	// default behaviour, so a second one ends the process as usual. The
	// watch is a pair of reactor signal events that do not keep Run alive;
	// while it is on, the reactor has active events, so every suspend point
	// reads the clock for the throttled tick (Options.TickInterval), which
	// is how a signal is noticed while coroutines keep yielding.
	ShutdownOnSignal bool
	// Reactor configures the scheduler's event loop: its thread pool
	// (PoolThreads, PoolQueue: Offload, file IO and DNS go through it),
	// MaxEvents, UseTimerfd and DNSServer (Resolver lookups). Clock and
	// OwnThread are the scheduler's own business and must stay zero: Run
	// lowers the loop thread's timer slack itself (Scheduler.WaitInfo).
	// HoldP is always set: the loop's blocking waits keep the scheduler's P,
	// as a C runtime's loop keeps its thread (reactor.Options.HoldP says
	// what that saves and what it costs other goroutines on a single P).
	Reactor reactor.Options
}

// Stats are a scheduler's counters, cumulative over its Runs.
type Stats struct {
	// Switches counts transfers of control between execution contexts
	// (coroutine stacks and the scheduler's own).
	Switches uint64
	// SchedulerSwitches counts the Switches into or out of the scheduler's
	// own context. Switches-SchedulerSwitches are direct switches.
	SchedulerSwitches uint64
	Spawned           uint64 // coroutines created
	Takeovers         uint64 // unstarted coroutines started on a finished one's context, with no switch
	FastPaths         uint64 // waits that returned without suspending
	MicrotasksRun     uint64 // microtasks executed (cancelled ones are not counted)
	ReactorTicks      uint64 // reactor ticks made by the scheduler
	ContextsCreated   uint64 // execution contexts created (asm: fibers started on a pooled stack; coro: iter.Pull coroutines)
}

// Scheduler runs coroutines on one goroutine. Create it with New, run it with
// Run (any number of times, one after another), release it with Close.
type Scheduler struct {
	opts    Options
	backend backend
	asm     *asmBackend // == backend when it is the asm one: called directly on the hot path
	direct  bool        // switch straight to the next coroutine: backend.symmetric() && !opts.ViaScheduler
	loop    *reactor.Loop

	queue coQueue         // the run queue (queue.go)
	micro microtask.Queue // the microtask queue

	current  *coroutine   // the running coroutine; nil in the scheduler context
	schedCtx *execContext // the scheduler's own context (the goroutine that called Run)
	handoff  *coroutine   // the coroutine a context switching to the scheduler asked it to run

	liveHead, liveTail *coroutine // live (spawned, unfinished) coroutines in spawn order
	live               int
	free               *coroutine // finished records to reuse, linked by liveNext (retire, spawn)
	nfree              int
	records            recordSlab // where the records of new coroutines come from (records.go)

	nextID       uint64
	lastTick     int64
	clockFresh   bool // startTimer read the clock since pickNext last did (pickNext)
	running      bool
	inMicrotask  bool
	shuttingDown bool
	finalCleanup bool
	err          error

	mainStart []SwitchHandler
	sigWatch  []*reactor.Signal       // Options.ShutdownOnSignal's events during Run
	general   map[*coroutine]*genWait // general waits' state (resumewhen.go), per coroutine that made one
	stats     Stats

	slack slackState // the 1 ns timer slack of Run's blocking waits (asm only; see lowerSlack)
}

// slackState is the timer slack Run lowers for its blocking reactor waits.
type slackState struct {
	lowered bool    // this Run locked its thread and set the slack to 1 ns
	prev    uintptr // the slack to restore at the end of Run
	set     bool    // the last Run that blocked ran its waits with 1 ns slack
	err     error   // why the last attempt failed (prctl), nil otherwise
}

// running is the scheduler whose Run is in progress; the package-level
// blocking API acts on it.
var running *Scheduler

// preRunHandlers are the switch handlers AddSwitchHandler received while no
// Scheduler was running: the next Run binds them to its main coroutine.
var preRunHandlers []SwitchHandler

// New returns a scheduler. With the Asm backend it returns an error wrapping
// ErrNotSupported when the fiber switch cannot run safely in this process
// (the self-test of package fiber failed, or the platform is not supported).
func New(opts Options) (*Scheduler, error) {
	if opts.TickInterval == 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.MainName == "" {
		opts.MainName = "main"
	}
	if opts.TickInterval < 0 || opts.TickInterval > time.Millisecond {
		return nil, fmt.Errorf("stackful: Options.TickInterval %v out of range: use 0 for the default %v, or a value in (0, 1ms]",
			opts.TickInterval, DefaultTickInterval)
	}
	s := &Scheduler{opts: opts}
	var err error
	switch opts.Backend {
	case Asm:
		s.backend, err = newAsmBackend(s)
	case Coro:
		s.backend = newCoroBackend(s)
	default:
		err = fmt.Errorf("stackful: unknown Options.Backend %d: use stackful.Asm or stackful.Coro", opts.Backend)
	}
	if err != nil {
		return nil, err
	}
	s.asm, _ = s.backend.(*asmBackend)
	s.direct = s.backend.symmetric() && !opts.ViaScheduler
	if opts.Reactor.Clock != nil || opts.Reactor.OwnThread {
		s.backend.close()
		return nil, errors.New("stackful: Options.Reactor.Clock and Options.Reactor.OwnThread must be left zero: the scheduler reads the real clock and manages its thread's timer slack itself")
	}
	opts.Reactor.HoldP = true // the scheduler's thread is the loop's: see Options.Reactor
	if s.loop, err = reactor.NewWithOptions(opts.Reactor); err != nil {
		s.backend.close()
		return nil, fmt.Errorf("stackful: creating the reactor: %w", err)
	}
	return s, nil
}

// Close releases the scheduler's reactor and pooled contexts. It must not be
// called during Run.
func (s *Scheduler) Close() error {
	if s.running {
		return errors.New("stackful: Scheduler.Close during Run")
	}
	s.backend.close()
	return s.loop.Close()
}

// Backend returns the switch backend.
func (s *Scheduler) Backend() Backend { return s.opts.Backend }

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	st := s.stats
	st.Spawned = s.nextID // every spawn takes the next id, and nothing else does (spawn)
	return st
}

// PoolStats returns the fiber stack pool's counters (zero for Coro). During
// a Run, the stack of the last finished coroutine is kept for the next one
// to start (no pool operation per coroutine lifecycle) and counts as in
// use; Run gives it back when it returns.
func (s *Scheduler) PoolStats() stackpool.Stats {
	if s.asm == nil {
		return stackpool.Stats{}
	}
	return s.asm.stacks.Stats()
}

// TrimStacks closes the stack pool's trimming window now: free stacks above
// the window's peak use give their memory back. It returns how many did (0
// for Coro). It must not be called during Run.
func (s *Scheduler) TrimStacks() int {
	if s.asm == nil || s.running {
		return 0
	}
	return s.asm.stacks.Trim()
}

// Reactor returns the scheduler's event loop, for creating fd events.
func (s *Scheduler) Reactor() *reactor.Loop { return s.loop }

// AddMainStartHandler registers h globally on this scheduler: every Run
// copies it into the main coroutine and fires it as Enter when main starts.
func (s *Scheduler) AddMainStartHandler(h SwitchHandler) {
	if h == nil {
		panic("stackful: AddMainStartHandler(nil)")
	}
	s.mainStart = append(s.mainStart, h)
}

// Run runs main as the main coroutine and returns when every coroutine has
// finished. It returns nil, or the run's errors joined (errors.Join): a
// *DeadlockError, a *PanicError, a *MicrotaskError, a failure to get a stack
// or a reactor error, and (Asm) a GC cycle detected during the run. The
// first error starts a graceful shutdown; an error during the shutdown goes
// straight to final cleanup. Only one Run may be in progress in a process.
// A panic raised in the scheduler's own context (by a reactor or event
// callback while the scheduler idles) escapes Run; the Scheduler must not be
// used after that.
func (s *Scheduler) Run(main func()) (err error) {
	if main == nil {
		return errors.New("stackful: Run(nil): pass the main function")
	}
	if running != nil {
		return errors.New("stackful: Run while another Scheduler.Run is in progress: one scheduler runs at a time")
	}
	running, s.running = s, true
	s.err, s.shuttingDown, s.finalCleanup = nil, false, false
	defer func() {
		running, s.running = nil, false
		s.restoreSlack() // one deferred closure: see impl/stackless Run
	}()

	if s.schedCtx, err = s.backend.begin(); err != nil {
		return err
	}
	ended := false
	defer func() {
		// A panic in the scheduler's own context (a reactor callback or
		// an event subscriber run by a blocking tick) escapes Run: release
		// the backend first. Suspended fibers are never resumed, and their
		// stacks are not GC roots, so restoring the collector is safe.
		if !ended {
			s.backend.end()
		}
	}()
	if s.opts.ShutdownOnSignal {
		if err := s.watchShutdownSignals(); err != nil {
			ended = true
			s.backend.end()
			return fmt.Errorf("stackful: Options.ShutdownOnSignal: %w", err)
		}
		defer s.stopShutdownSignals()
	}
	co := spawn("Run", main, s.opts.MainName, Normal) // running is s (set above)
	co.addHandlers(s.mainStart...)
	co.addHandlers(preRunHandlers...)
	preRunHandlers = nil

	s.loop.UpdateTime()
	s.lastTick = s.loop.Now()
	s.schedule()

	ended = true
	if endErr := s.backend.end(); endErr != nil {
		s.err = errors.Join(s.err, endErr)
	}
	return s.err
}

// schedule is the scheduler's main loop, in its own context: microtasks, the
// next coroutine, a switch to it; when nothing is runnable, a blocking
// reactor tick, or the end of the run, a shutdown step, or a deadlock.
func (s *Scheduler) schedule() {
	for {
		next := s.handoff
		s.handoff = nil
		if next == nil {
			next = s.pickNext()
		}
		if next != nil {
			s.enter(next)
			continue
		}
		if s.asm != nil {
			// Idle: let the stack pool close a time-based trimming window
			// (Options.Stacks.DecayTime) before the reactor blocks.
			s.asm.stacks.Tick(time.Now())
		}
		switch {
		case s.activeEvents() > 0:
			s.tick(false)
		case s.micro.Len() > 0:
			// A failed microtask left others queued: run them next round.
		case s.live == 0:
			return
		case s.finalCleanup:
			// Leftovers woken by final cleanup are queued; anything else
			// alive was dropped while unstarted. Kill again: progress is
			// guaranteed because a killed coroutine cannot wait.
			s.killAll()
		case s.shuttingDown:
			s.beginFinalCleanup()
		default:
			s.fail(&DeadlockError{Waiting: s.liveNames()}, errDeadlockCancel)
		}
	}
}

// enter switches from the scheduler context to next.
func (s *Scheduler) enter(next *coroutine) {
	ctx, err := s.contextFor(next)
	if err != nil {
		s.dropUnstarted(next, err)
		return
	}
	s.current = next
	if s.asm == nil {
		// coro: resume directly (see Scheduler.suspend on frames).
		s.stats.Switches++
		s.stats.SchedulerSwitches++
		ctx.resume()
	} else {
		s.transfer(s.schedCtx, ctx)
	}
	s.current = nil
}

// pickNext is the scheduler tick run at a suspend point, in the suspending
// context (docs/design.md §1: scheduler_next_tick): the microtask batch, a throttled
// non-blocking reactor tick, then the head of the run queue (nil if empty).
func (s *Scheduler) pickNext() *coroutine {
	if s.micro.Len() > 0 {
		s.runMicrotasks()
	}
	if s.loop.Active() > 0 {
		// A coroutine that suspends with a timeout had the clock read by
		// startTimer a few instructions ago; that reading (the loop's
		// cached time) serves here instead of a second one: one clock
		// read less per timed wait. The throttle's view of time is then
		// older by what ran since (the end of the suspend, the
		// microtasks), so a due tick comes at most one suspend late; a
		// suspend without a timer start reads the clock. Twin of
		// impl/stackless's tickThrottled.
		if s.clockFresh {
			s.clockFresh = false
		} else {
			s.loop.UpdateTime()
		}
		if s.loop.Now()-s.lastTick >= int64(s.opts.TickInterval) {
			s.tick(true)
		}
	}
	for {
		co := s.queue.PopFront()
		if co == nil {
			return nil
		}
		if s.queue.n >= prefetchMin {
			// The deep stack lines only while shutting down: the
			// cancelled waits unwind then; a wake returns into its
			// loop (see fiber.RingDeep).
			if below := uintptr(fiber.RingPick); !s.shuttingDown {
				s.prefetchAhead(below)
			} else {
				s.prefetchAhead(below | fiber.RingDeep)
			}
		}
		if co.waker.status == WakerIgnored && co.state == coNew {
			s.dropUnstarted(co, nil)
			continue
		}
		return co // an IGNORED started coroutine (Destroy) unwinds when resumed
	}
}

// prefetchMin is the run-queue length (after the pop) from which a pick
// prefetches the coroutines ahead (prefetchAhead): in pickNext and in the
// inline picks of Yield and Await. Below it their lines are likely still
// in cache and the prefetch costs more than it saves.
//
// History: 1024 at first (BenchmarkYieldN, prefetch=on/off, best of 6: +2
// to +4 ns per yield at n = 16, 64 and 256, -7 % at 4096, -18 % at 65536),
// then lowered to 256: the queue's length understates how cold the next
// coroutines are when more are alive than queued or were last run long
// ago: a shutdown of 1000 blocked coroutines queues all of them at once,
// each on a stack not touched since it blocked, and a reactor tick among
// 10000 sleepers queues the few hundred it woke.
//
// Measured again with the one-call pipeline (fiber.PrefetchRing) on a
// 2-core EPYC VM (Zen 5, KVM), pinned, medians of 4 rounds, cpu-ns/yield
// (`YIELDN_NS=512,1024,2048,4096,8192 taskset -c 0 stackful.test
// -test.run '^$' -test.bench 'YieldN/' -test.benchtime 2000000x`),
// prefetch on against off: n = 512 11.9 against 10.0 (a loss: everything
// fits in L2), 1024 12.6 against 13.2, 2048 13.7 against 14.9, 4096 15.1
// against 15.0 (a wash), 8192 15.8 against 17.3; 65536 53.5 against 103.2
// and 262144 91.5 against 176.4 (3 rounds). n = 256 never prefetches:
// 255 stay queued after the pop. Kept at 256 for the shutdown and timer
// cases: prefetchMin at 256 / 768 / off (set by a throwaway test-only
// init), 6 rounds alternated, medians (`taskset -c 0 stackful.test
// -test.run '^$' -test.bench 'ShutdownCycle|TimerWake/n=10000'
// -test.benchtime 1s`): BenchmarkShutdownCycle 123.5 / 159.1 / 138.9
// cpu-ns per coroutine, BenchmarkTimerWake n=10000 89.5 / 89.1 / 96.4
// cpu-ns per wake. A variable so that the benchmarks can turn it off.
var prefetchMin = 256

// prefetchAhead starts the loads the next switches will wait on, as a
// three-stage pipeline over the run queue (fiber.PrefetchRing, one call):
// the records of the coroutines sixteen picks ahead of the head, the
// fiber contexts (saved SPs) of those eight ahead, whose records were
// fetched eight picks ago (on amd64 both eight records at a time, on every
// eighth pick: see fiber.PrefetchRing), and the stack of the one next
// after the head, whose context was fetched seven picks ago or more: its
// Switch frame and return address and
// the frames above them up to the user's code. Each is a hint. Called
// after a pop with at least prefetchMin queued (a High coroutine pushed
// at the head is not in the pipeline: enqueue prefetches its lines when
// it pushes it); it inlines, so the pick in Yield and Await makes it
// without a call of its own. below has fiber.RingPick from pickNext: a
// coroutine that suspended through pickNext will call it again at its
// next suspend, whose frames then land on the line below its saved SP, so
// that line is fetched for writing too (the pipeline with that line
// against the one without, at n = 65536: -39 %, when Yield still picked
// through pickNext), and so is the record's timer line; the stack lines
// up to the fiber's entry (fiber.PrefetchRingDeepLines) are fetched when
// below has fiber.RingDeep as well: a
// coroutine picked during a shutdown or after a finish often runs its
// whole chain, as the cancelled waits of a shutdown do when they unwind
// (Shutdown n=100000, stackful-asm, 4 rounds alternated: 377 ns per
// coroutine with six lines, 239 with twelve); a woken sleeper does not,
// so pickNext asks for them only while shutting down (the timer wake's
// figures are in fiber.PrefetchRing); the inline picks pass 0.
//
// PrefetchRing's invariants hold here: a slot is nil or a queued record,
// whose first word is co.fc (nil, or the context in its stack's top, live
// while it is queued: see the check below).
func (s *Scheduler) prefetchAhead(below uintptr) {
	q := &s.queue
	fiber.PrefetchRing(unsafe.Pointer(unsafe.SliceData(q.buf)), uintptr(q.head), uintptr(len(q.buf)-1), below)
}

// PrefetchRing reads a record's *fiber.Context from its first word.
var _ [0]struct{} = [unsafe.Offsetof(coroutine{}.fc)]struct{}{}

func (s *Scheduler) tick(noWait bool) {
	if !noWait && !s.slack.lowered && s.asm != nil {
		s.lowerSlack()
	}
	s.stats.ReactorTicks++
	_, err := s.loop.Tick(noWait)
	s.lastTick = s.loop.Now()
	if err != nil {
		s.fail(fmt.Errorf("stackful: reactor tick: %w", err), errShutdownCancel)
	}
}

// lowerSlack runs before Run's first blocking reactor wait (asm only): it
// locks the goroutine to its OS thread for the rest of Run and sets the
// thread's timer slack to 1 ns, so an epoll_pwait2 deadline is not pushed
// up to 50 µs late (the default slack). A Run that never blocks pays
// nothing. Coro does not lock: its goroutines must keep the thread-lock
// state they were created with (runtime/coro.go), and pooled contexts
// outlive a Run; its waits keep the thread's default slack, which WaitInfo
// reports. Under the timerfd wait slack does not apply. Twin of
// impl/stackless Scheduler.lowerSlack.
func (s *Scheduler) lowerSlack() {
	if s.loop.WaitInfo().Wait != "epoll_pwait2" {
		return
	}
	runtime.LockOSThread()
	prev, err := timerslack.Lower()
	if err != nil {
		runtime.UnlockOSThread()
		s.slack.err, s.slack.set = err, false
		s.slack.lowered = true // do not retry in this Run; nothing to restore
		s.slack.prev = timerslack.Slack
		return
	}
	s.slack = slackState{lowered: true, prev: prev, set: true}
}

// restoreSlack undoes lowerSlack at the end of Run, on the thread it locked.
func (s *Scheduler) restoreSlack() {
	if !s.slack.lowered {
		return
	}
	s.slack.lowered = false
	if s.slack.err != nil {
		return
	}
	timerslack.Restore(s.slack.prev)
	runtime.UnlockOSThread()
}

// WaitInfo describes how Run's blocking reactor waits honour deadlines, for
// the timer-floor line of a result: the loop's clock and wait method and the
// timer slack in effect. On asm, a Run lowers its thread's slack to 1 ns at
// its first blocking wait under epoll_pwait2 (Slack 1 ns, SlackSet true once
// a Run has done so); on coro, and before any Run has blocked, it is the
// loop's report of the thread that created it (Slack its PR_GET_TIMERSLACK).
func (s *Scheduler) WaitInfo() reactor.WaitInfo {
	wi := s.loop.WaitInfo()
	if s.slack.set {
		wi.Slack, wi.SlackSet = timerslack.Slack, true
	}
	return wi
}

// suspend gives the CPU away for co, which the caller has queued (Yield) or
// left waiting on its started waker, and returns when co runs again. The
// next coroutine is chosen here, in co's context; only the switch itself
// differs between backends.
//
// Yield, AwaitWith and Sleep spell out the common cases (a direct asm switch to a
// started or unstarted coroutine; a coro yield to the scheduler) themselves instead of
// calling suspend: after a stack
// switch every return up the call chain misses the CPU's return-address
// predictor, so each frame between the switch and the user's code costs
// several nanoseconds per switch.
func (s *Scheduler) suspend(co *coroutine) {
	if co.handlers != nil {
		s.suspendHandlers(co, false)
		return
	}
	next := s.pickNext()
	if next == co {
		return // a Yield with nobody else ready: no switch
	}
	s.switchFrom(co.ctx, next)
}

// suspendHandlers is the suspend point of a coroutine with switch handlers
// (Yield and the waits take it before anything else when co has any). Leave
// is called when co gives control up and before the scheduler tick picks
// the next coroutine, as in TrueAsync: a coroutine a Leave handler spawns
// with High priority runs next, ahead of those already queued (the
// reference design's shutdown example relies on it; docs/design.md §1,
// switch handlers). Enter is called when co runs again.
//
// A Yield with nobody else queued usually continues without a switch and
// then calls no handler, so for it the tick runs first: Leave is called only
// if the tick picked another coroutine, which is then put back at the head
// of the queue and the pick made again, so a High coroutine spawned by Leave
// still runs first. A wait whose event fires during the tick (before any
// switch) calls Leave then Enter: co gave control up and got it back.
func (s *Scheduler) suspendHandlers(co *coroutine, yield bool) {
	var next *coroutine
	if yield && s.queue.Len() == 1 { // only co itself is queued
		if next = s.pickNext(); next == co {
			return
		}
		co.fire(Leave)
		if next != nil {
			s.queue.PushFront(next)
		}
		next = s.pickNext()
	} else {
		co.fire(Leave)
		next = s.pickNext()
	}
	if next != co {
		s.switchFrom(co.ctx, next)
	}
	co.fire(Enter)
}

// startContext gives next, a coroutine that has not started, its context
// (contextFor), so that a suspend point (Yield, AwaitWith) switches to it
// directly, with fiber.Switch in its own frame as for a started one: the
// suspended coroutine then resumes with two frames less to return through
// (switchFrom, transfer), each return after a switch a mispredicted one.
// It reports false if no context could be made; the caller then takes
// switchFrom, which tries again and, failing, hands next to the scheduler
// to report. The callers test it in a case of its own after the started
// case, not in one condition with it: merged, the started case's code
// changed and benchrun's PingPong read 2–6 % slower (8 alternated
// processes), though nothing it runs had changed.
//
// next has no context: its callers reach it only after the started case
// (next.fc != nil) failed, on a direct, so asm, scheduler, where fc is nil
// exactly while the coroutine is unbound (bind). So it calls
// newContextFor, contextFor's out-of-line half, itself: startContext then
// stays small enough to inline into the suspend points.
func (s *Scheduler) startContext(next *coroutine) bool {
	_, err := s.newContextFor(next)
	return err == nil
}

// switchFrom leaves the context from (running s.current, or a finished
// coroutine) for next, or for the scheduler context if next is nil. A
// symmetric backend switches straight to next; an asymmetric one, or a
// failure to get next a context, goes through the scheduler, which runs
// next (s.handoff).
func (s *Scheduler) switchFrom(from *execContext, next *coroutine) {
	if next != nil && s.direct {
		if to, err := s.contextFor(next); err == nil {
			s.current = next
			s.transfer(from, to)
			return
		}
		// The scheduler retries and reports the failure.
	}
	s.handoff = next
	s.current = nil
	s.transfer(from, s.schedCtx)
}

// transfer switches contexts and counts it. It returns when from is
// switched to again (never, for a dead asm context).
func (s *Scheduler) transfer(from, to *execContext) {
	s.count(from, to)
	if s.asm != nil {
		fiber.Switch(&from.fiber.fc, &to.fiber.fc)
	} else {
		s.backend.switchTo(from, to)
	}
}

func (s *Scheduler) count(from, to *execContext) {
	s.stats.Switches++
	if from == s.schedCtx || to == s.schedCtx {
		s.stats.SchedulerSwitches++
	}
}

// contextFor returns the context next runs on, creating one for a coroutine
// that has not started.
func (s *Scheduler) contextFor(co *coroutine) (*execContext, error) {
	if co.ctx != nil {
		return co.ctx, nil
	}
	return s.newContextFor(co) // out of line: contextFor inlines into every switch path
}

// newContextFor is contextFor for a coroutine that has not started.
func (s *Scheduler) newContextFor(co *coroutine) (*execContext, error) {
	var ctx *execContext
	var err error
	if b := s.asm; b == nil {
		ctx, err = s.backend.newContext()
	} else if c := b.spare; c != nil {
		// asmBackend.newContext's spare case, inline (its twin; it is
		// over the inliner's budget): every pooled start comes here, so
		// this saves a call per lifecycle. Await's start of an unstarted
		// head spells it out again (its twin too).
		b.spare = nil
		if err := c.fiber.fc.Restart(b.entry); err != nil {
			spareBroken(err)
		}
		ctx = c
	} else { // direct, not through the interface
		ctx, err = b.newPooledContext()
	}
	if err != nil {
		return nil, err
	}
	s.stats.ContextsCreated++
	ctx.co = co
	co.bind(ctx)
	return ctx, nil
}

// contextMain is the body of every execution context: it runs the
// coroutine assigned to it, then hands the context to the next unstarted
// coroutine (no switch), or gives it up and switches to the next coroutine.
// A coro context given up is parked for reuse and continues here when
// reassigned (it returns nil when the backend closes it). An asm context
// given up returns the context to continue with: the fiber finishes by
// switching there, and the context is kept as the backend's spare or, if
// there is one already, its stack goes back to the pool before that switch
// (asmBackend.putDying).
//
// It also returns nil, with ctx.co still set, after a panic in the body
// it recovered (bodyUnwound): its callers (asmBackend's entry, the coro
// context's function) then call it again, and it finishes that coroutine
// without running its body again (its state is no longer coNew).
//
// Its one deferred call does what two did, runBody's recovery and
// package fiber's Goexit check in fiberMain (the asm contexts tell
// fiberMain they report Goexit themselves: fiber.Context.EntryReportsGoexit):
// while a body runs (body set), a panic is recovered into Run's error and
// a Goexit reported; outside a body a panic goes on unwinding and crashes
// the program, as before, and a Goexit is still reported (a Finish
// handler, a microtask or an event subscriber run here can call it).
// One deferred call and one frame less per coroutine (runBody's), and
// none in fiberMain: BenchmarkSpawnLifecycleSplit's figures are in
// the commit that made it.
//
// co is ctx.co, passed by the callers, which have it at hand (s.current,
// on asm): loading it through ctx here put two more dependent loads
// (the record's ctx, the context's co) before the body's first.
//
// After a recovered panic it returns nil (the result is set only right
// before the returns below, so a panic finds it nil: the deferred call
// need not capture it).
func (s *Scheduler) contextMain(ctx *execContext, co *coroutine) *execContext {
	var body *coroutine // the coroutine whose body runs (Enter handlers included), else nil
	returned := false
	defer func() {
		if returned {
			return // no panic, no Goexit: nothing to recover (no recover call per context)
		}
		if co := body; co != nil {
			s.bodyUnwound(co, recover()) // recover must be called by the deferred function itself; the caller calls again to finish co
			return
		}
		if s.asm != nil {
			fiber.ExitOnGoexit() // outside a body: a panic is not recovered; a Goexit ends the process
		}
	}()
	for {
		if co.state == coNew { // else its body panicked and was recovered: finish it
			// runBody's steps, inline (it was a frame and a deferred call
			// of its own per coroutine).
			co.state = coRunning
			co.waker.status = WakerNoStatus
			body = co
			co.fire(Enter)
			co.fn()
			body = nil
		}
		// s.finish(co), inline (one frame less per coroutine; twin of
		// finish, which goexited and dropUnstarted's callers keep).
		co.fire(Finish)
		s.retire(co)
		// s.pickNext(), its common case inline (twin of Await's and
		// Yield's, which say why: no microtask, no live reactor handle,
		// a head that is not IGNORED; pickNext decides every other case),
		// with pickNext's prefetch (below 1). One call less per finish.
		var next *coroutine
		q := &s.queue
		if f := q.first; s.micro.Len()|s.loop.Active() == 0 && f != nil && f.waker.status != WakerIgnored {
			next = f // the head in coQueue's slot (PopFront's first case, its twin)
			q.first = nil
		} else if b := q.buf; s.micro.Len()|s.loop.Active() == 0 && f == nil && q.n != 0 &&
			b[q.head&(len(b)-1)].waker.status != WakerIgnored {
			i := q.head & (len(b) - 1)
			next = b[i]
			b[i] = nil // drop the reference for the collector
			q.head = (i + 1) & (len(b) - 1)
			if q.n--; q.n >= prefetchMin {
				s.prefetchAhead(fiber.RingPick | fiber.RingDeep) // after a finish: the next may finish too
			}
		} else {
			next = s.pickNext()
		}
		if next != nil && next.state == coNew {
			s.stats.Takeovers++
			ctx.co = next
			next.bind(ctx)
			s.current = next
			co = next
			continue
		}
		ctx.co = nil
		if s.asm == nil && s.backend.park(ctx) { // asm never parks: no interface call there
			s.switchFrom(ctx, next)
			if co = ctx.co; co == nil {
				returned = true
				return nil
			}
			continue
		}
		var to *execContext
		if next != nil && s.direct && next.ctx != nil {
			// exitTo's started case, inline (its twin): a lifecycle's
			// child finishes into the coroutine that awaits it with one
			// call less. count's part: neither context is the
			// scheduler's, so only Switches.
			to, s.current = next.ctx, next
			s.stats.Switches++
		} else {
			to = s.exitTo(ctx, next)
		}
		// The dying context becomes the spare when there is none, so a
		// one-at-a-time lifecycle makes no pool operation; otherwise its
		// stack goes back to the pool now, from the dying fiber itself
		// (putDying says why that is safe and why not after the switch).
		// Both after exitTo, which may make a context for next
		// (newContextFor takes the spare, or a pool stack): this fiber is
		// still running until fiberMain finishes it, and no context is
		// made between here and that switch. Only asm gets here (coro
		// parked above), so s.asm is set.
		if b := s.asm; b.spare == nil {
			b.spare = ctx
		} else {
			b.putDying(ctx)
		}
		returned = true
		return to
	}
}

// exitTo chooses the context a dying context finishes into: next's, or the
// scheduler's (with next handed off) if next is nil or has no context, or if
// Options.ViaScheduler routes every hand-off through the scheduler. It
// counts the switch the backend is about to make.
func (s *Scheduler) exitTo(from *execContext, next *coroutine) *execContext {
	to := s.schedCtx
	s.current = nil
	if next != nil && !s.direct {
		s.handoff = next
	} else if next != nil && next.ctx != nil { // started: contextFor's first case, inline (twin in contextMain)
		to, s.current = next.ctx, next
	} else if next != nil {
		if c, err := s.contextFor(next); err == nil {
			to, s.current = c, next
		} else {
			s.handoff = next
		}
	}
	s.count(from, to)
	return to
}

// bodyUnwound handles a body that did not return (contextMain's deferred
// call, for co's body): r is what recover returned. The kill panic of
// final cleanup ends the coroutine quietly; any other panic becomes Run's
// error; a Goexit (r nil) ends the process on asm (package fiber's
// message) and finishes co on coro (goexited).
func (s *Scheduler) bodyUnwound(co *coroutine, r any) {
	if r == nil { // runtime.Goexit (panic(nil) is a *runtime.PanicNilError unless GODEBUG=panicnil=1, which this cannot tell from Goexit)
		if s.asm == nil {
			s.goexited(co) // never returns
		}
		fiber.ExitOnGoexit() // returns only for panic(nil) under panicnil=1: co then finishes as if it returned
		return
	}
	if _, ok := r.(killSignal); ok {
		return
	}
	co.err = &PanicError{Coroutine: co.String(), Value: r, Stack: string(debug.Stack())}
	s.fail(co.err, errShutdownCancel)
}

// goexited handles runtime.Goexit called by co's code on the coro backend
// (recover returns nil for it in contextMain's deferred call, and the body
// did not return). Left alone, Goexit would end co's Pull goroutine and
// iter.Pull would re-raise
// it in the goroutine that called Run, which would then never return, with
// no other coroutine's cleanup run and nothing printed. Instead, with co's
// deferred calls already run, co is finished and Run fails with an error
// wrapping ErrGoexit (a graceful shutdown follows); then this goroutine
// hands control back to the scheduler for good, parked in the middle of its
// Goexit: its context is never resumed or reused (one goroutine leaks per
// such misuse). The asm backend cannot do this (the fiber shares the
// scheduler's goroutine); package fiber ends the process with a message
// instead.
func (s *Scheduler) goexited(co *coroutine) {
	ctx := co.ctx
	co.err = &PanicError{Coroutine: co.String(), Value: ErrGoexit, Stack: string(debug.Stack())}
	s.fail(co.err, errShutdownCancel)
	s.finish(co)
	ctx.co = nil
	s.handoff, s.current = nil, nil
	s.stats.Switches++
	s.stats.SchedulerSwitches++
	ctx.yield(struct{}{})
	select {} // never resumed: nothing holds ctx any more
}

// finish ends co after its body returned or unwound (contextMain spells it
// out: its twin).
func (s *Scheduler) finish(co *coroutine) {
	co.fire(Finish)
	s.retire(co)
}

// dropUnstarted finishes a coroutine that never ran: cancelled before it
// started (err nil), or without a context (err).
func (s *Scheduler) dropUnstarted(co *coroutine, err error) {
	if err != nil {
		co.err = err
		s.fail(fmt.Errorf("stackful: starting coroutine %s: %w", co, err), errShutdownCancel)
	}
	co.fire(Finish)
	s.retire(co)
}

// retire marks co finished and forgets it.
//
// Its common case comes first, with all its tests before any store and
// every store in one block, so that the compiler tests the write barrier
// once for them all (eight tests before, one per group of pointer stores
// between branches, as Await's hand-off had): a coroutine whose last
// wait, if any, was plain and is over (nothing linked, no timer, no
// general wait), whose Done nobody asked for, whose record is
// recyclable, and which is the live list's tail behind another one (a
// lifecycle's child behind its parent). The same stores as the general
// code below (its twin), in which the tests that passed make the rest
// nothing.
func (s *Scheduler) retire(co *coroutine) {
	w := &co.waker
	// The scheduler's fields it updates are loaded with the tests, before
	// the first store: s.free loaded after the stores, as the general
	// code's free-list push does, held 18 % of this function's samples
	// (perf, Spawn alive=1 pool=warm), and split the stores in two
	// write-barrier blocks.
	if p, fr, nf := co.livePrev, s.free, s.nfree; w.nsubs == 0 && w.mode == modePlain && w.timeout == -1 && !w.hasGen &&
		!co.timer.Active() && co.done == nil && co.name == nil && co.priority == Normal && co.err == nil &&
		p != nil && co.liveNext == nil && nf < maxFreeRecords {
		co.handlers = nil
		co.state = coFinished
		w.status = WakerNoStatus // reset's other fields hold its values already (tested)
		w.triggered, w.result, w.err = nil, nil, nil
		co.fn = nil
		co.ctx, co.fc = nil, nil // unbind
		co.cancelPending, co.cancelErr = false, nil
		p.liveNext, s.liveTail = nil, p // unlinkLive's tail case
		co.livePrev = nil
		s.live--
		co.liveNext = fr
		s.free, s.nfree = co, nf+1
		return
	}
	co.handlers = nil
	co.state = coFinished
	if w := &co.waker; w.nsubs != 0 || w.mode != modePlain || w.timeout >= 0 {
		w.stop() // out of line; a coroutine that never waited, or whose last wait was plain, has nothing linked
	}
	co.waker.reset()
	if co.waker.hasGen {
		delete(s.general, co)
		co.waker.hasGen = false
	}
	if co.timer.Active() { // stop above disarmed a timed wait; this keeps retire total
		co.timer.Stop() // out of line; Active inlines, and Stop does nothing when it is false
	}
	co.fn = nil
	co.unbind()
	co.cancelPending, co.cancelErr = false, nil
	s.unlinkLive(co)
	if co.done != nil { // nobody asked for Done: no event to fire (see coroutine.done)
		co.done.Resolve(nil)
	}
	if co.recyclable() && s.nfree < maxFreeRecords {
		co.liveNext = s.free
		s.free = co
		s.nfree++
	}
}

// maxFreeRecords bounds the free list of finished coroutine records: enough
// for every coroutine of a 10000-alive round to be reused, while a run that
// once had a million coroutines alive does not keep a million records (320
// MB) for the scheduler's life; the rest go to the collector, each with
// the rest of its chunk (recordSlab).
const maxFreeRecords = 1 << 16

// spawn creates a coroutine on the running scheduler and enqueues it. op
// names the API call for a misuse panic: it checks first what scheduler
// checks (its twin: a running Scheduler, and on asm a caller on the
// current coroutine's stack), so that Go and GoWith make this one call.
// Run spawns main through it too, with running set and no coroutine
// current, so the check passes.
func spawn(op string, fn func(), name string, p Priority) *coroutine {
	s := running
	if s == nil || s.current != nil && s.asm != nil && !s.current.onOwnStack() {
		schedulerMisuse(op)
	}
	if fn == nil {
		panic("stackful: Go(nil)")
	}
	s.nextID++ // also the Spawned count (Stats): one counter per spawn, not two
	// The lifecycle's spawn (a finished record to reuse, unnamed, Normal,
	// no shutdown, others alive, an empty run queue) with every test
	// first and every store after them in one block, so that the
	// compiler tests the write barrier once for them all (retire's
	// common case says why). The same stores as the general code below
	// (its twin: the reuse, linkLive, tryPushBack's slot case), in which
	// the tests that passed make the rest nothing.
	if r, t, q := s.free, s.liveTail, &s.queue; r != nil && r != s.current && name == "" && p == Normal &&
		!s.shuttingDown && t != nil && q.first == nil && q.n == 0 {
		s.free, s.nfree = r.liveNext, s.nfree-1
		r.id, r.fn, r.priority, r.state = s.nextID, fn, p, coNew
		r.killed, r.unwinding = false, false
		r.done = nil
		r.waker.building = false
		r.waker.status = WakerQueued
		r.livePrev, r.liveNext = t, nil
		t.liveNext, s.liveTail = r, r
		s.live++
		q.first = r
		return r
	}
	var co *coroutine
	// Reuse a finished coroutine's record (retire): a warm spawn allocates
	// nothing and touches memory that is likely in cache, where a new
	// record is fresh memory to clear and fault in while the collector is
	// held off. Not the record of s.current: a coroutine that just
	// finished is still current until the next switch (its pickNext may
	// run microtasks or Finish handlers that spawn).
	if r := s.free; r != nil && r != s.current {
		s.free, s.nfree = r.liveNext, s.nfree-1
		co = r
		// What retire left: unlinked, unbound, waker stopped and reset,
		// timer stopped (its binding to s.loop kept), handlers, done, err,
		// name and cancellation cleared, priority Normal (recyclable).
		co.liveNext = nil
		co.id, co.fn, co.priority, co.state = s.nextID, fn, p, coNew
		co.killed, co.unwinding = false, false
		// done may have been made by a Done call after the finish (the
		// record was on the free list by then); err and name are nil
		// (recyclable), so they need no store. stackLo and stackSpan
		// keep the last stack's bounds (unbind): no check reads them
		// before bind sets them, since only the current coroutine is
		// checked (onOwnStack), and a coroutine is bound before it is
		// current (newContextFor, the takeover) and never current while
		// its record is on the free list (spawn skips s.current's).
		co.done = nil
		// The waker: retire reset it (no wait since: a finished
		// coroutine's handle starts none), so only building is left.
		co.waker.building = false
	} else {
		co = s.records.get() // from a chunk: see recordSlab
		co.s, co.id, co.fn, co.priority = s, s.nextID, fn, p
		co.waker.co = co
		co.waker.reset()
	}
	if name != "" {
		// A copy made only here: taking &name would move the parameter to
		// the heap on every spawn, named or not.
		n := new(string)
		*n = name
		co.name = n
	}
	co.waker.status = WakerQueued
	if s.shuttingDown {
		// Every coroutine receives the shutdown's cancellation, one spawned
		// during it too (by a cleanup, say): it starts cancelled, so it
		// cannot hold Run open. In final cleanup it is dropped unstarted.
		if s.finalCleanup {
			co.waker.status = WakerIgnored
		} else {
			co.cancelPending, co.cancelErr = true, errShutdownCancel
		}
	}
	s.linkLive(co)
	// s.enqueue(co), its Normal case inline (enqueue itself is over the
	// inliner's budget): a spawn then makes no call to queue itself.
	if p != Normal || !s.queue.tryPushBack(co) {
		s.enqueue(co)
	}
	return co
}

// enqueue puts co in the run queue by its priority.
//
// The priority rule (docs/design.md §1: High at the head, Normal at the tail; Yield
// always at the tail; dequeue from the head) is these few lines here and in
// impl/stackless on purpose: a shared wrapper around a queue cannot be
// inlined (two push calls exceed the inliner's budget), so it would add a
// call to every wake-up, the hot path of every handoff. The pushes
// themselves inline (coQueue).
func (s *Scheduler) enqueue(co *coroutine) {
	if co.priority == High {
		if !s.queue.tryPushFront(co) {
			s.queue.pushFrontGrow(co)
		}
		// A High coroutine runs next, out of turn: the run queue's
		// prefetch pipeline (prefetchAhead) never saw it, and once many
		// are queued its Context and frames are long out of cache (in
		// the Priority scenario, n normal coroutines ran since it
		// suspended). Start their misses now, all at once, while the
		// waker and the suspending coroutine finish: PrefetchTop needs no
		// load (its saved SP is not known yet, the Context's line is
		// what is missing) and covers a wait's frames up to the entry
		// (TestPrefetchTopCoversAWait). Without it the resume waits on
		// the Context's line, then on each frame's return address, one
		// after the other. Priority stackful-asm n=1000, 8 rounds
		// interleaved: 155.2 -> 100.7 ns/wake (-35%); the full A/B is
		// in the commit. Only with a long queue (prefetchMin, counted
		// after the pop as in the picks): with a short one the lines are
		// likely in cache.
		if s.queue.n > prefetchMin && co.fc != nil {
			fiber.PrefetchTop(co.fc)
		}
	} else if !s.queue.tryPushBack(co) {
		s.queue.pushBackGrow(co)
	}
}

// runMicrotasks runs the microtask batch (see Microtask). A microtask's
// panic is recovered into an error: it runs in the suspending coroutine's
// context, and would otherwise be reported as that coroutine's panic.
func (s *Scheduler) runMicrotasks() {
	if s.finalCleanup {
		s.micro.Drop()
		return
	}
	s.inMicrotask = true
	err := s.micro.RunBatchRecover(&s.stats.MicrotasksRun)
	s.inMicrotask = false
	if err != nil { // the rest run at the next suspend point
		if h := s.opts.OnMicrotaskError; h != nil {
			h(err)
		} else {
			s.fail(&MicrotaskError{Err: err}, errShutdownCancel)
		}
	}
}

// fail records err as Run's error (joined to earlier ones) and starts a
// graceful shutdown delivering cancel; during a shutdown it goes straight
// to final cleanup.
func (s *Scheduler) fail(err error, cancel error) {
	s.err = errors.Join(s.err, err)
	if s.shuttingDown {
		s.beginFinalCleanup()
		return
	}
	s.shutdown(cancel)
}

// shutdown starts a graceful shutdown: set the flag and cancel every live
// coroutine, in spawn order.
func (s *Scheduler) shutdown(cancel error) {
	if s.shuttingDown {
		return
	}
	s.shuttingDown = true
	for co := s.liveHead; co != nil; {
		next := co.liveNext // cancel may drop co from the list
		co.cancel(cancel)
		co = next
	}
}

// beginFinalCleanup drops the microtasks and makes every live coroutine
// unwind.
func (s *Scheduler) beginFinalCleanup() {
	if s.finalCleanup {
		return
	}
	s.shuttingDown, s.finalCleanup = true, true
	s.micro.Drop()
	s.killAll()
}

func (s *Scheduler) killAll() {
	for co := s.liveHead; co != nil; {
		next := co.liveNext
		co.kill()
		co = next
	}
}

func (s *Scheduler) linkLive(co *coroutine) {
	co.livePrev = s.liveTail
	if s.liveTail != nil {
		s.liveTail.liveNext = co
	} else {
		s.liveHead = co
	}
	s.liveTail = co
	s.live++
}

func (s *Scheduler) unlinkLive(co *coroutine) {
	if co.livePrev != nil {
		co.livePrev.liveNext = co.liveNext
	} else if s.liveHead == co {
		s.liveHead = co.liveNext
	} else {
		return // not linked
	}
	if co.liveNext != nil {
		co.liveNext.livePrev = co.livePrev
	} else {
		s.liveTail = co.livePrev
	}
	co.livePrev, co.liveNext = nil, nil
	s.live--
}

// liveNames lists the live coroutines in spawn order, as DeadlockError
// names them: by name, or by "#id" if unnamed (the same names impl/stackless
// reports, so both runtimes word a deadlock alike).
func (s *Scheduler) liveNames() []string {
	names := make([]string, 0, s.live)
	for co := s.liveHead; co != nil; co = co.liveNext {
		if co.name != nil {
			names = append(names, *co.name)
		} else {
			names = append(names, co.String())
		}
	}
	return names
}
