package stackless

import (
	"errors"
	"fmt"
	"strings"
)

// Scheduler runs state-machine tasks on the calling goroutine: a run queue
// (ring buffer, two priorities), microtasks, a reactor for timers and fd
// readiness, deadlock detection and graceful shutdown, with the semantics of
// the TrueAsync scheduler (seed 000) and of impl/stackful.
//
// Switching between tasks is a return from one Resume and a call of the
// next: there is no stack to switch, so the seed's "direct switch" and
// "scheduler coroutine" collapse into the loop in Run.
//
// A Scheduler is not safe for concurrent use: every method, and every Event
// its tasks await, belongs to the goroutine that calls Run.
type Scheduler struct {
	ctx   Context
	queue ringQueue[*Coro]      // runnable tasks; high priority at the head
	micro ringQueue[*Microtask] // FIFO, run before each resume

	liveHead, liveTail *Coro // unfinished tasks in spawn order
	live               int   // len(live list)
	waiting            int   // tasks whose waker is Waiting
	nextID             uint32

	startHandlers []SwitchHandler
	phase         phase
	errs          []error // task, microtask and deadlock errors, in order
	running       bool
	stats         Stats

	r reactorState // see reactor.go
}

type phase uint8

const (
	phaseRunning  phase = iota
	phaseGraceful       // every task was sent its cancellation; cleanups run
	phaseFinal          // leftovers are finalised without running
)

// Stats counts the scheduler's work since New.
type Stats struct {
	Spawns     uint64 // tasks spawned
	Resumes    uint64 // calls of Task.Resume
	FastPaths  uint64 // waits that ended at start (event already done): no queue round trip
	Microtasks uint64 // microtask handlers run
	Ticks      uint64 // reactor ticks (non-blocking and blocking)
	Finalised  uint64 // tasks finalised without finishing (final shutdown phase)
}

// New returns an empty scheduler. Its reactor is created on first use
// (Sleep, a timeout, fd waits), so a scheduler that never waits on time or
// fds opens no epoll instance.
func New() *Scheduler {
	s := &Scheduler{}
	s.ctx.s = s
	return s
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats { return s.stats }

// Live returns the number of spawned tasks that have not finished.
func (s *Scheduler) Live() int { return s.live }

// Spawn starts t with normal priority: it is queued at the tail and first
// resumed by Run. t's state struct is the task's whole memory; Spawn itself
// allocates nothing (beyond amortised growth of the run queue).
//
// A finished task's struct may be spawned again (reset its own state
// first): that is how callers pool task memory.
func (s *Scheduler) Spawn(t Task) error { return s.SpawnPriority(t, Normal) }

// SpawnPriority starts t with priority p (High: queued at the head, and at
// the head again on every wake-up).
func (s *Scheduler) SpawnPriority(t Task, p Priority) error {
	if t == nil {
		return errors.New("stackless: Spawn(nil): pass a pointer to a struct embedding stackless.Coro")
	}
	if p != Normal && p != High {
		return fmt.Errorf("stackless: invalid priority %d: use stackless.Normal or stackless.High", uint8(p))
	}
	co := t.coro()
	if co.life == lifeStarted {
		return fmt.Errorf("stackless: task %s is already running: spawn a separate state struct per task", taskName(co))
	}
	if s.phase == phaseFinal {
		return errors.New("stackless: Spawn during the final shutdown phase: the scheduler is stopping")
	}
	s.nextID++
	*co = Coro{task: t, sched: s, id: s.nextID, prio: p, life: lifeStarted}
	for i := range co.waker.nodes {
		co.waker.nodes[i].co = co
	}
	if len(s.startHandlers) > 0 {
		hs := append([]SwitchHandler(nil), s.startHandlers...)
		co.handlers = &hs
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
func (s *Scheduler) enqueue(co *Coro) {
	if co.prio == High {
		s.queue.PushFront(co)
	} else {
		s.queue.PushBack(co)
	}
}

// Run runs tasks until every task has finished, then returns nil, or the
// errors that happened (a *TaskError per failed task, a microtask's error, a
// *DeadlockError), joined in order. The first error starts a graceful
// shutdown, so every task still gets its cancellation and runs its cleanup.
//
// Each iteration follows the seed's main loop: microtasks, then the next
// task from the head of the queue (with a throttled non-blocking reactor
// tick before it), resumed until it waits; with the queue empty the reactor
// blocks until an event or the nearest timer; with nothing runnable, no
// active reactor event and tasks still waiting, that is a deadlock.
func (s *Scheduler) Run() error {
	if s.running {
		return errors.New("stackless: Run called while the scheduler is running (from a task?)")
	}
	s.running = true
	defer func() { s.running = false }()
	for {
		if s.micro.Len() > 0 {
			if err := s.runMicrotasks(); err != nil {
				s.fail(fmt.Errorf("stackless: microtask failed: %w", err))
			}
		}
		if co, ok := s.queue.PopFront(); ok {
			if s.r.active() {
				s.tickThrottled()
			}
			s.resume(co)
			continue
		}
		if s.r.active() {
			s.tick(false)
			continue
		}
		if s.live == 0 {
			break
		}
		s.deadlock()
	}
	s.phase = phaseRunning
	switch len(s.errs) {
	case 0:
		return nil
	case 1:
		err := s.errs[0]
		s.errs = nil
		return err
	}
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}

// resume runs one dequeued task until it waits, yields or finishes.
func (s *Scheduler) resume(co *Coro) {
	w := &co.waker
	if w.status == Ignored {
		s.finalise(co)
		return
	}
	w.status = Result
	if co.cancelPending {
		co.cancelPending = false
		w.triggered, w.result, w.err = nil, nil, ErrCanceled
	}
	c := &s.ctx
	c.cur = co
	if co.handlers != nil {
		callHandlers(co, Enter)
	}
	for {
		s.stats.Resumes++
		step := co.task.Resume(c)
		switch step.kind {
		case stepSuspend:
			if w.start(s, co) {
				s.stats.FastPaths++
				continue // fast path: the wait is already over, no queue, no leave
			}
			if co.handlers != nil {
				callHandlers(co, Leave)
			}
		case stepYield:
			w.status = Queued
			s.enqueue(co)
			if co.handlers != nil {
				callHandlers(co, Leave)
			}
		case stepDone:
			s.finish(co, nil)
		case stepFail:
			err := c.failErr
			c.failErr = nil
			s.finish(co, err)
		default:
			s.finish(co, errors.New("Resume returned the zero Step: return a Step from a Context helper (Done, Fail, Yield, Await, Sleep, ...)"))
		}
		break
	}
	c.cur = nil
}

// finish ends a task that returned Done or Fail.
func (s *Scheduler) finish(co *Coro, err error) {
	s.retire(co)
	if err != nil {
		s.fail(&TaskError{Task: taskName(co), Err: err})
	}
}

// finalise ends a task without running it (IGNORED, final shutdown phase).
func (s *Scheduler) finalise(co *Coro) {
	s.stats.Finalised++
	s.retire(co)
}

// retire removes a task from the live list and calls its Finish handlers.
func (s *Scheduler) retire(co *Coro) {
	co.life = lifeFinished
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
// during the graceful phase goes straight to the final cleanup (seed:
// TRY_HANDLE_EXCEPTION).
func (s *Scheduler) fail(err error) {
	s.errs = append(s.errs, err)
	switch s.phase {
	case phaseRunning:
		s.Shutdown()
	case phaseGraceful:
		s.finalCleanup()
	}
}

// Shutdown starts a graceful shutdown: every unfinished task receives
// ErrCanceled on its next Resume (a waiting task is woken for it) and can run
// its cleanup states; cleanup may still await events. When every task has
// finished, Run returns. If the cleanups deadlock or fail, the final phase
// finalises the leftovers without running them. Calling Shutdown again has no
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

// ShuttingDown reports whether a shutdown has started.
func (s *Scheduler) ShuttingDown() bool { return s.phase != phaseRunning }

// Cancel delivers ErrCanceled into t on its next Resume; a waiting t is woken
// for it. Cancelling a finished task does nothing.
func (s *Scheduler) Cancel(t Task) error {
	co := t.coro()
	if co.sched != s {
		return fmt.Errorf("stackless: Cancel: task %T was not spawned on this scheduler", t)
	}
	s.cancel(co)
	return nil
}

func (s *Scheduler) cancel(co *Coro) {
	if co.life != lifeStarted {
		return
	}
	co.cancelled = true
	if co.waker.status == Waiting {
		s.wake(co, nil, nil, ErrCanceled)
		return
	}
	// Queued: delivered when dequeued, replacing the stored result.
	// Running (NoStatus/Result): delivered at its next wait or resume.
	co.cancelPending = true
}

// finalCleanup is the seed's finally_shutdown: stop every leftover wait,
// finalise every task without running it (queued ones are marked Ignored and
// finalised when dequeued), and drop the queued microtasks.
func (s *Scheduler) finalCleanup() {
	s.phase = phaseFinal
	for co := s.liveHead; co != nil; {
		next := co.liveNext
		switch co.waker.status {
		case Queued:
			co.waker.status = Ignored
		case Ignored:
		case Waiting:
			co.waker.stop(s)
			co.waker.status = NoStatus
			s.waiting--
			s.finalise(co)
		default:
			// The running task: it finishes or waits when its Resume
			// returns; its next wait is ended by the next final cleanup.
		}
		co = next
	}
	for {
		m, ok := s.micro.PopFront()
		if !ok {
			break
		}
		m.Release()
	}
}

// DeadlockError reports tasks waiting with nothing left that could wake them:
// no runnable task, no microtask, no active reactor event.
type DeadlockError struct {
	Waiting []string // names of the waiting tasks, in spawn order
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("stackless: deadlock: %d task(s) wait and nothing can wake them (no runnable task, no active reactor event): %s",
		len(e.Waiting), strings.Join(e.Waiting, ", "))
}

// deadlock handles "nothing runnable, nothing active, tasks still waiting":
// report the waiting tasks, then cancel them so their cleanup runs; if the
// cleanups themselves deadlock, finalise the leftovers.
func (s *Scheduler) deadlock() {
	var names []string
	for co := s.liveHead; co != nil; co = co.liveNext {
		if co.waker.status == Waiting {
			names = append(names, taskName(co))
		}
	}
	s.fail(&DeadlockError{Waiting: names})
}
