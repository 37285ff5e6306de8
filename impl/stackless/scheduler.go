package stackless

import (
	"errors"
	"fmt"
	"time"

	"github.com/corobench/corobench/internal/deadlock"
	"github.com/corobench/corobench/internal/microtask"
	"github.com/corobench/corobench/reactor"
)

// Scheduler runs state-machine tasks on the calling goroutine: a run queue
// (ring buffer, two priorities), microtasks, a reactor for timers and fd
// readiness, deadlock detection and graceful shutdown, with the semantics of
// the TrueAsync scheduler (docs/design.md §1) that impl/stackful shares, as pinned
// down by internal/semtest.
//
// Switching between tasks is a return from one Resume and a call of the
// next: there is no stack to switch, so the reference design's direct switch and its
// scheduler coroutine collapse into the run loop (Run, and resume, which
// runs hand-off after hand-off itself while Run's loop would only pop the
// next task). Every handoff goes through that loop (two transfers of
// control, each a return or a call).
//
// A Scheduler is not safe for concurrent use: every method, and every Event
// its tasks await, belongs to the goroutine that calls Run.
type Scheduler struct {
	ctx   Context
	queue taskQueue       // runnable tasks; high priority at the head (queue.go)
	micro microtask.Queue // FIFO, run at each suspend point

	liveHead, liveTail *Coro // unfinished tasks in spawn order
	live               int   // len(live list)
	nextID             uint32

	// left is the task that last gave control up (waited or yielded) and
	// whose Leave handlers have not run yet: they run only once another
	// task, or the blocking reactor, really takes control. If the next task
	// is left itself, it continues without a switch.
	left *Coro

	startHandlers []SwitchHandler
	preRun        []SwitchHandler // AddCurrentSwitchHandler before Run: bound to the next RunMain's main task
	microErr      func(error)     // microtask error handler; nil: errors fail the run
	phase         phase
	errs          []error // task, microtask and deadlock errors, in order
	running       bool
	onSignal      bool              // Options.ShutdownOnSignal
	sigWatch      []*reactor.Signal // its events during Run
	stats         Stats

	general map[*Coro]*genWait // general waits' state (resumewhen.go), per task that made one

	r reactorState // see reactor.go
}

type phase uint8

const (
	phaseRunning  phase = iota
	phaseGraceful       // every task was sent its cancellation; cleanups run
	phaseFinal          // leftovers unwind (started) or are dropped (unstarted)
)

// Stats counts the scheduler's work since New.
type Stats struct {
	Spawns     uint64 // tasks spawned
	Resumes    uint64 // calls of Task.Resume
	Switches   uint64 // resumes of a task other than the one that last had control: real switches (each a return to the run loop plus a call)
	FastPaths  uint64 // waits that ended at start (event already fired, cancellation pending): no queue round trip
	Microtasks uint64 // microtask handlers run
	Ticks      uint64 // reactor ticks (non-blocking and blocking)
	Blocks     uint64 // blocking reactor ticks (the queue was empty)
	Ignored    uint64 // tasks dropped without running (cancelled before they started)
	Unwound    uint64 // tasks marked to unwind by the final shutdown phase
}

// DefaultTickInterval is the default throttle of the non-blocking reactor
// tick at suspend points (the same as impl/stackful's): the reactor is ticked
// if it has active events and at least this long has passed since its last
// tick.
const DefaultTickInterval = 100 * time.Microsecond

// Options configure a Scheduler. The zero value is the default.
type Options struct {
	// TickInterval is the least time between two non-blocking reactor ticks
	// made at suspend points while the reactor has active events (0:
	// DefaultTickInterval; at most 1ms, the bound internal/semtest assumes).
	TickInterval time.Duration
	// OnMicrotaskError, if set, receives microtask errors and the run goes
	// on; otherwise a microtask error fails Run and starts a shutdown.
	OnMicrotaskError func(error)
	// ShutdownOnSignal makes SIGINT or SIGTERM delivered during Run start a
	// graceful shutdown (as Shutdown does; Run then returns nil) instead of
	// ending the process. The first such signal restores both signals'
	// default behaviour, so a second one ends the process as usual. The
	// watch is a pair of reactor signal events that do not keep Run alive;
	// while it is on, the reactor exists and has active events, so every
	// suspend point reads the clock for the throttled tick, which is how a
	// signal is noticed while tasks keep yielding.
	ShutdownOnSignal bool
	// Loop, if set, is the reactor to use; the caller keeps ownership.
	// Otherwise the scheduler creates one on first use (Sleep, a timeout, an
	// FD) and Close releases it.
	Loop *reactor.Loop
}

// New returns a scheduler with the default options. Its reactor is created
// on first use, so a scheduler that never waits on time or fds opens no
// epoll instance. Call Close to release it.
func New() *Scheduler {
	s, _ := NewWithOptions(Options{})
	return s
}

// NewWithOptions returns a scheduler configured by o.
func NewWithOptions(o Options) (*Scheduler, error) {
	if o.TickInterval < 0 || o.TickInterval > time.Millisecond {
		return nil, fmt.Errorf("stackless: Options.TickInterval %v out of range: use 0 (default %v) up to 1ms", o.TickInterval, DefaultTickInterval)
	}
	if o.TickInterval == 0 {
		o.TickInterval = DefaultTickInterval
	}
	s := &Scheduler{microErr: o.OnMicrotaskError, onSignal: o.ShutdownOnSignal}
	s.ctx.s = s
	s.r.interval = int64(o.TickInterval)
	if o.Loop != nil {
		s.r.loop = o.Loop
	}
	return s, nil
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats { return s.stats }

// Live returns the number of spawned tasks that have not finished.
func (s *Scheduler) Live() int { return s.live }

// Spawn starts t with normal priority: it is queued at the tail and first
// resumed by Run. t's state struct is the task's whole memory; Spawn itself
// allocates nothing (beyond amortised growth of the run queue).
//
// A finished task's struct may be spawned again once its own fields are reset:
// that is how callers pool task memory.
func (s *Scheduler) Spawn(t Task) error { return s.SpawnPriority(t, Normal) }

// SpawnPriority starts t with priority p (High: queued at the head, and at
// the head again on every wake-up by an event).
func (s *Scheduler) SpawnPriority(t Task, p Priority) error {
	if t == nil {
		return errors.New("stackless: Spawn(nil): pass a pointer to a struct embedding stackless.Coro")
	}
	if p != Normal && p != High {
		return fmt.Errorf("stackless: invalid priority %d: use stackless.Normal or stackless.High", uint8(p))
	}
	co := t.coro()
	if co.life == lifeSpawned || co.life == lifeRunning {
		return fmt.Errorf("stackless: task %s is already spawned: spawn a separate state struct per task", taskName(co))
	}
	if s.phase == phaseFinal {
		return errors.New("stackless: Spawn during the final shutdown phase: the scheduler is stopping")
	}
	s.nextID++
	// Keep handlers added before Spawn (a finished task has none left).
	*co = Coro{task: t, sched: s, id: s.nextID, prio: p, life: lifeSpawned, handlers: co.handlers}
	// A task spawned during a graceful shutdown (by a cleanup, say) starts
	// cancelled: every task receives the shutdown's cancellation, so it
	// cannot hold Run open.
	co.cancelPending = s.phase == phaseGraceful
	for i := range co.waker.nodes {
		co.waker.nodes[i].co = co
	}
	co.livePrev = s.liveTail
	if s.liveTail != nil {
		s.liveTail.liveNext = co
	} else {
		s.liveHead = co
	}
	s.liveTail = co
	s.live++
	s.stats.Spawns++
	co.waker.status = Queued
	s.enqueue(co)
	return nil
}

// enqueue puts a Queued task into the run queue by its priority.
//
// The priority rule (docs/design.md §1: High at the head, Normal at the tail; Yield
// always at the tail; dequeue from the head) is these few lines here, their
// normal-priority half again in Event.fire, and in impl/stackful, on
// purpose: enqueue itself is over the inliner's budget, so a shared wrapper
// would add a call to every wake-up, the hot path of every handoff.
func (s *Scheduler) enqueue(co *Coro) {
	if co.prio == High {
		if !s.queue.tryPushFront(co) {
			s.queue.pushFrontGrow(co)
		}
	} else if !s.queue.tryPushBack(co) {
		s.queue.pushBackGrow(co)
	}
}

// RunMain spawns main as the main task, copies the start handlers
// (AddStartHandler) into it, and runs. It is Run with a main task; the run
// still ends only when every task has finished.
func (s *Scheduler) RunMain(main Task) error {
	if err := s.Spawn(main); err != nil {
		return err
	}
	if len(s.startHandlers) > 0 || len(s.preRun) > 0 {
		co := main.coro()
		hs := append([]SwitchHandler(nil), s.startHandlers...)
		hs = append(hs, s.preRun...)
		if co.handlers != nil { // added with AddSwitchHandler before RunMain
			hs = append(hs, *co.handlers...)
		}
		co.handlers = &hs
		s.preRun = nil
	}
	return s.Run()
}

// Run runs tasks until every task has finished, then returns nil, or the
// errors that happened (a *TaskError per failed task, a microtask's error, a
// *DeadlockError), joined in order. The first error starts a graceful
// shutdown, so every task still gets its cancellation and runs its cleanup.
// A run ended by a requested Shutdown returns nil.
//
// Each iteration is one suspend point of the reference design's main loop: the
// microtask batch, a non-blocking reactor tick if the reactor has active
// events and the tick interval has passed, then the head of the run queue is
// resumed until it waits, yields or finishes. With the queue empty the
// reactor blocks until an event or the nearest timer. With nothing runnable,
// no active reactor event and tasks still waiting: a deadlock (while
// running), or the final shutdown phase (while shutting down).
func (s *Scheduler) Run() error {
	if s.running {
		return errors.New("stackless: Run called while the scheduler is running (from a task?)")
	}
	s.running = true
	// One deferred closure for both: a second defer in Run made its task
	// loop measurably slower (BenchmarkPingPong 18 -> 30 cpu-ns/switch).
	defer func() {
		s.running = false
		if s.r.slackLowered {
			s.restoreSlack()
		}
	}()
	if s.onSignal {
		if err := s.watchShutdownSignals(); err != nil {
			return fmt.Errorf("stackless: Options.ShutdownOnSignal: %w", err)
		}
		defer s.stopShutdownSignals()
	}
	for {
		if s.micro.Len() > 0 {
			s.runMicrotasks()
		}
		if s.r.loop != nil && s.r.loop.Active() > 0 {
			s.tickThrottled()
		}
		if co := s.next(); co != nil {
			s.resume(co)
			continue
		}
		if s.r.loop != nil && s.activeEvents() > 0 {
			s.leave()
			s.tick(false)
			continue
		}
		if s.live == 0 {
			if s.micro.Len() > 0 {
				continue // microtasks left behind a failed one still run
			}
			break
		}
		s.leave()
		switch s.phase {
		case phaseRunning:
			s.deadlock()
		case phaseGraceful:
			s.beginFinal()
		default:
			panic("stackless: internal error: tasks left waiting in the final shutdown phase")
		}
	}
	s.leave()
	s.phase = phaseRunning
	errs := s.errs
	s.errs = nil
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// leave runs the Leave handlers of the task that last gave control up, now
// that control really goes elsewhere.
func (s *Scheduler) leave() {
	if co := s.left; co != nil {
		s.left = nil
		if co.handlers != nil {
			callHandlers(co, Leave)
		}
	}
}

// next dequeues the next task to resume, dropping Ignored tasks on the way
// (dropping one is not a suspend point: no microtasks run in between).
func (s *Scheduler) next() *Coro {
	for {
		co := s.queue.PopFront()
		if co == nil {
			return nil
		}
		if co.waker.status != Ignored || co.life == lifeRunning {
			return co // a started Ignored task (Destroy) is resumed to unwind
		}
		s.stats.Ignored++
		s.retire(co)
	}
}

// resume runs one dequeued task until it waits, yields or finishes. Then,
// as long as nothing else needs Run's loop, it dequeues and runs the next
// task itself: that is one hand-off without a return to Run and without
// the calls of next and resume. It does what Run's loop does at its next
// iteration, in the same order (the throttled non-blocking tick, then the
// pop), and returns to Run for everything else: a microtask queued, an
// empty queue (a blocking tick, the end, a deadlock), an Ignored task at
// the head (next drops it). The continuation is taken only after a wait or
// a yield; a finished task returns to Run.
func (s *Scheduler) resume(co *Coro) {
	c := &s.ctx
	// left is s.left held in a register: the task that gave control up
	// without handlers, or nil. s.left stays nil while tasks run here and is
	// set again only when control goes back to Run.
	left := s.left
	s.left = nil
	for {
		w := &co.waker
		if co != left { // else the task that gave control up continues: no switch
			if left != nil && left.handlers != nil {
				s.leaveBefore(left, co)
				return
			}
			s.stats.Switches++
			co.life = lifeRunning
			if co.handlers != nil {
				callHandlers(co, Enter)
			}
		}
		if w.waited {
			w.waited = false
			w.status = Result
		} else {
			w.status = NoStatus
		}
		if co.unwinding {
			// Final phase: the wait does not deliver its outcome; the task unwinds.
			w.triggered, w.result, w.err = nil, nil, ErrCancelled
		}
		c.cur = co
		spins := 0 // waits that ended at once in this resume (bounded while unwinding)
	run:
		for {
			s.stats.Resumes++
			step := co.task.Resume(c)
			switch step.kind {
			case stepSuspend:
				// Waker.start's hot half, its twin, written out: one awaited
				// event, nothing else (pingpong, most awaits).
				if n := &w.nodes[slotEvent]; !w.extras && !co.cancelPending && !co.unwinding && n.ev != nil {
					ev := n.ev
					if ev.done {
						w.status, w.triggered, w.result, w.err = Result, ev, ev.result, ev.err
						s.stats.FastPaths++
						continue // the wait is already over: no suspend point, no switch
					}
					w.startWaiting(s, co, n, ev)
				} else if w.sleeping && !co.cancelPending && !co.unwinding && !w.plain && s.r.loop != nil {
					// A Sleep or SleepUntil: startSlow's first case, its
					// twin, written out (its timer is its one event).
					w.status, w.waited = Waiting, true
					s.addTimer(co, w.timeout, w.absolute)
				} else if w.startSlow(s, co) {
					s.stats.FastPaths++
					if co.unwinding {
						if spins++; spins > maxUnwindSpins {
							s.abandon(co)
							return
						}
					}
					continue // the wait is already over: no suspend point, no switch
				}
				if co.handlers != nil {
					// Leave is called as the task gives control up, before the
					// scheduler picks the next task (as in TrueAsync), so a High
					// task a Leave handler spawns runs next.
					callHandlers(co, Leave)
					left = nil
				} else {
					left = co
				}
				break run // co gave control up
			case stepYield:
				if co.cancelPending || co.unwinding {
					// Returns at once; the waker status stays as it was.
					co.cancelPending = false
					w.err = ErrCancelled
					s.stats.FastPaths++
					if co.unwinding {
						if spins++; spins > maxUnwindSpins {
							s.abandon(co)
							return
						}
					}
					continue
				}
				w.status = Queued
				if !s.queue.tryPushBack(co) { // a yield always goes to the tail
					s.queue.pushBackGrow(co)
				}
				if co.handlers != nil {
					s.yieldLeave(co) // may set s.left: Run's loop goes on
					return
				}
				left = co
				break run // co gave control up
			case stepDone:
				s.finish(co, nil)
			case stepFail:
				err := c.failErr
				c.failErr = nil
				s.finish(co, err)
			default:
				s.finish(co, errors.New("its Resume returned the zero Step: return a Step from a Context helper (Done, Fail, Yield, Await, Sleep, ...)"))
			}
			// c.cur keeps pointing at co: Context is valid only inside Resume, and
			// not clearing it saves a pointer store per resume.
			return
		}
		// Run's loop, for the case that needs nothing but the pop (see
		// above): the same checks in the same order.
		if s.micro.Len() > 0 {
			s.left = left
			return
		}
		if l := s.r.loop; l != nil && l.Active() > 0 {
			// tickThrottled, its twin, written out (it is over the
			// inliner's budget). The non-blocking tick does not leave:
			// left may wait.
			if s.r.fresh {
				s.r.fresh = false
			} else {
				l.UpdateTime()
			}
			if l.Now()-s.r.lastTick >= s.r.interval {
				s.tick(true)
			}
		}
		next := s.queue.PopFront()
		if next == nil {
			s.left = left
			return
		}
		if next.waker.status == Ignored && next.life != lifeRunning {
			s.queue.PushFront(next) // next drops it
			s.left = left
			return
		}
		co = next
	}
}

// leaveBefore runs the Leave handlers of l, a task whose Yield deferred
// them (see yieldLeave), now that co, just dequeued, is about to get
// control: a High task they spawn must go first, so co goes back to the
// head of the queue and Run picks again. Out of line, like callHandlers:
// it keeps the handler-less resume small.
//
//go:noinline
func (s *Scheduler) leaveBefore(l, co *Coro) {
	callHandlers(l, Leave)
	s.queue.PushFront(co)
}

// yieldLeave is the Leave of a yielding task with handlers. With others
// queued, control leaves co for sure, so Leave is called now, before the
// pick (as for a wait). With nobody else queued co usually continues
// without a switch and no handler call: Leave is deferred until another
// task really takes control (s.left, then leaveBefore).
//
//go:noinline
func (s *Scheduler) yieldLeave(co *Coro) {
	if s.queue.Len() > 1 {
		callHandlers(co, Leave)
	} else {
		s.left = co
	}
}

// maxUnwindSpins bounds the waits an unwinding task may make in one resume:
// each returns ErrCancelled at once, so a task that keeps waiting instead of
// finishing would spin forever.
var maxUnwindSpins = 1 << 20 // a variable so that tests can lower it

// abandon finishes an unwinding task that does not finish by itself, with an
// error saying so.
func (s *Scheduler) abandon(co *Coro) {
	s.finish(co, fmt.Errorf("did not finish while unwinding at shutdown (%d waits returned ErrCancelled at once): a task must run its cleanup and finish when Context.Unwinding() is true", maxUnwindSpins))
}

// finish ends a task that returned Done or Fail.
func (s *Scheduler) finish(co *Coro, err error) {
	s.retire(co)
	if err != nil {
		s.fail(&TaskError{Task: taskName(co), Err: err})
	}
}

// retire removes a task from the live list and calls its Finish handlers.
func (s *Scheduler) retire(co *Coro) {
	co.life = lifeFinished
	co.waker.status = NoStatus
	if s.general != nil {
		// The task's general-wait state, if it made one: a map delete per
		// finished task, only on schedulers where a task used ResumeWhen
		// or Suspend (a flag per waker would cost every task 8 bytes of
		// header: the Waker's flag bytes are full).
		delete(s.general, co)
		co.waker.general = false
	}
	co.cancelPending, co.unwinding = false, false
	if co.livePrev != nil {
		co.livePrev.liveNext = co.liveNext
	} else {
		s.liveHead = co.liveNext
	}
	if co.liveNext != nil {
		co.liveNext.livePrev = co.livePrev
	} else {
		s.liveTail = co.livePrev
	}
	co.livePrev, co.liveNext = nil, nil
	s.live--
	if co.handlers != nil {
		callHandlers(co, Finish)
		co.handlers = nil
	}
}

// fail records err. The first error starts a graceful shutdown; an error
// during the graceful phase goes straight to the final phase (reference design:
// TRY_HANDLE_EXCEPTION).
func (s *Scheduler) fail(err error) {
	s.errs = append(s.errs, err)
	switch s.phase {
	case phaseRunning:
		s.Shutdown()
	case phaseGraceful:
		s.beginFinal()
	}
}

// Shutdown starts a graceful shutdown: every unfinished task, in spawn order,
// is cancelled as by Cancel, so it runs its cleanup states. When nothing is
// runnable any more and the reactor has nothing active, the final phase
// starts (see beginFinal): tasks still suspended unwind, tasks that never
// started and pending microtasks are dropped. Calling Shutdown again has no
// effect.
func (s *Scheduler) Shutdown() {
	if s.phase != phaseRunning {
		return
	}
	s.phase = phaseGraceful
	for co := s.liveHead; co != nil; co = co.liveNext {
		s.cancel(co)
	}
}

// Destroy finalises t without running more of its code (the reference
// design's IGNORED waker; docs/design.md §1, the waker). A task not yet
// started is dropped without running, as by Cancel. A started task that is
// queued or waiting becomes Ignored (a waiting one is woken): when the
// scheduler reaches it, it is resumed once with Context.Unwinding true and
// ErrCancelled instead of its wait's outcome, as in the final shutdown
// phase, so it runs its cleanup states and finishes; every further wait
// returns ErrCancelled at once. A task destroying itself unwinds from its
// next wait. Destroying a finished task does nothing.
func (s *Scheduler) Destroy(t Task) error {
	co := t.coro()
	if co.sched != s {
		return fmt.Errorf("stackless: Destroy: task %T was not spawned on this scheduler", t)
	}
	switch co.life {
	case lifeSpawned:
		co.waker.status = Ignored
	case lifeRunning:
		co.unwinding, co.cancelPending = true, false
		if co.waker.status == Waiting {
			s.wake(co, nil, nil, ErrCancelled)
		}
		if co.waker.status == Queued {
			co.waker.status = Ignored
		}
	}
	return nil
}

// ShuttingDown reports whether a shutdown has started.
func (s *Scheduler) ShuttingDown() bool { return s.phase != phaseRunning }

// Cancel cancels t. A finished task is left alone; a task that has not started
// yet becomes Ignored and is dropped without ever running; a waiting task is
// woken with ErrCancelled; a queued or running task keeps its current outcome
// and gets ErrCancelled from its next blocking op (Await, Yield, Sleep, ...),
// which returns at once. A cancellation is delivered once: later waits work
// normally.
func (s *Scheduler) Cancel(t Task) error {
	co := t.coro()
	if co.sched != s {
		return fmt.Errorf("stackless: Cancel: task %T was not spawned on this scheduler", t)
	}
	s.cancel(co)
	return nil
}

func (s *Scheduler) cancel(co *Coro) {
	switch {
	case co.life == lifeSpawned:
		co.waker.status = Ignored
	case co.life != lifeRunning:
	case co.waker.status == Waiting:
		s.wake(co, nil, nil, ErrCancelled)
	default:
		co.cancelPending = true
	}
}

// beginFinal starts the final phase (reference design: finally_shutdown): pending
// microtasks are dropped, tasks that never started become Ignored (dropped
// when dequeued), and every started task is marked unwinding: a waiting one is
// woken (queued by its priority), a queued one keeps its place. When resumed,
// each sees Unwinding and ErrCancelled instead of its wait's outcome, and
// every further wait or yield returns ErrCancelled at once, so it runs its
// cleanup and finishes. Spawn is refused from now on, so the run ends.
func (s *Scheduler) beginFinal() {
	if s.phase == phaseFinal {
		return
	}
	s.phase = phaseFinal
	s.micro.Drop()
	for co := s.liveHead; co != nil; co = co.liveNext {
		switch co.life {
		case lifeSpawned:
			co.waker.status = Ignored
		case lifeRunning:
			s.stats.Unwound++
			co.unwinding, co.cancelPending = true, false
			if co.waker.status == Waiting {
				s.wake(co, nil, nil, ErrCancelled)
			}
		}
	}
}

// DeadlockError reports tasks waiting with nothing left that could wake them:
// no runnable task, no microtask, no active reactor event.
type DeadlockError struct {
	Waiting []string // names of the waiting tasks, in spawn order
}

// Error names the first deadlock.MaxNamed (20) waiting tasks and counts the
// rest; Waiting has them all.
func (e *DeadlockError) Error() string { return deadlock.Message("stackless", "task", e.Waiting) }

// deadlock reports the waiting tasks, then starts a graceful shutdown so
// their cleanup runs.
func (s *Scheduler) deadlock() {
	var names []string
	for co := s.liveHead; co != nil; co = co.liveNext {
		if co.waker.status == Waiting {
			names = append(names, taskName(co))
		}
	}
	s.fail(&DeadlockError{Waiting: names})
}
