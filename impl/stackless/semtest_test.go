package stackless_test

import (
	"errors"
	"fmt"
	"io"
	"time"

	"testing"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/internal/semtest"
	"github.com/corobench/corobench/reactor"
)

// init lets this test binary be the IO cases' exec child (semtest.ServeChild).
func init() { semtest.ServeChild() }

// TestSemantics runs the shared semantic suite on the stackless runtime.
func TestSemantics(t *testing.T) { semtest.Run(t, driver{}) }

// driver runs semtest programs on the stackless scheduler. Each script task
// is interpreted as a state machine whose state is its op index, written
// against the package's public API only, as a user would.
type driver struct{}

func (driver) Name() string       { return "stackless" }
func (driver) DirectSwitch() bool { return false }

func (driver) Kind(err error) semtest.ErrKind {
	var de *stackless.DeadlockError
	var me *semtest.MicrotaskError
	switch {
	case err == nil:
		return semtest.OK
	case errors.As(err, &de):
		return semtest.Deadlock
	case errors.As(err, &me):
		return semtest.MicrotaskFailed
	case errors.Is(err, semtest.ErrRejected):
		return semtest.Rejected
	case errors.Is(err, stackless.ErrTimeout):
		return semtest.Timeout
	case errors.Is(err, stackless.ErrCancelled):
		return semtest.Cancelled
	}
	if k, ok := semtest.IOKind(err); ok {
		return k
	}
	return semtest.Other
}

// Lacks: the stackless runtime has every reactor awaitable (offload.go).
func (driver) Lacks(semtest.Feature) (string, bool) { return "", false }

func (driver) DeadlockNames(err error) []string {
	var de *stackless.DeadlockError
	if !errors.As(err, &de) {
		return nil
	}
	return de.Waiting
}

// run is one program's execution: the scheduler, the events and the tasks.
type run struct {
	p      *semtest.Program
	rec    *semtest.Recorder
	s      *stackless.Scheduler
	events []stackless.Event
	tasks  []*scriptTask
}

func (d driver) Run(p *semtest.Program, rec *semtest.Recorder) (semtest.Stats, error) {
	var o stackless.Options
	if p.MicrotaskErrors == semtest.HandleErrors {
		o.OnMicrotaskError = rec.HandlerError
	}
	if p.IO != nil {
		loop, err := reactor.NewWithOptions(p.IO.Reactor())
		if err != nil {
			return semtest.Stats{}, err
		}
		defer loop.Close()
		o.Loop = loop
	}
	s, err := stackless.NewWithOptions(o)
	if err != nil {
		return semtest.Stats{}, err
	}
	defer s.Close()
	if p.IO != nil {
		defer p.IO.Run().Release() // before Close: the pool awaits its running jobs
	}
	r := &run{p: p, rec: rec, s: s, events: make([]stackless.Event, p.Events)}
	for i := range p.Tasks {
		r.tasks = append(r.tasks, &scriptTask{r: r, idx: i})
	}
	for i, keep := range p.MainStartHandlers {
		r.s.AddStartHandler(r.handler(0, semtest.StartHandlerName(i), keep))
	}
	for i, keep := range p.PreRunHandlers {
		r.s.AddCurrentSwitchHandler(r.handler(0, semtest.PreRunHandlerName(i), keep))
	}
	err = r.s.RunMain(r.tasks[0])
	st := r.s.Stats()
	// Every handoff returns to Run's loop and calls the next Resume: two
	// transfers of control, both through the scheduler.
	return semtest.Stats{Switches: 2 * st.Switches, SchedulerSwitches: 2 * st.Switches}, err
}

// handler returns a switch handler logging for task as name, kept for keep
// calls and removed on call keep+1.
func (r *run) handler(task int, name string, keep int) stackless.SwitchHandler {
	calls := 0
	return func(_ stackless.Task, ev stackless.SwitchEvent) bool {
		r.rec.Switch(task, name, ev)
		calls++
		return calls <= keep
	}
}

// scriptTask interprets one semtest.Task. pc is the state: the index of the
// next op, or, with blocked set, of the blocking op whose outcome the next
// Resume delivers.
type scriptTask struct {
	stackless.Coro
	r       *run
	idx     int
	pc      int
	blocked bool
	defers  []semtest.Op // OpDefer and OpDeferSpawn, run in reverse at exit
	io      taskIO       // the IO ops' state; io.busy: the op at pc is in progress
}

func (t *scriptTask) Name() string { return t.r.p.Tasks[t.idx].Name }

func (t *scriptTask) Resume(c *stackless.Context) stackless.Step {
	r, ops := t.r, t.r.p.Tasks[t.idx].Ops
	if c.Unwinding() {
		return t.exit(c, semtest.Cancelled)
	}
	if t.io.busy {
		step, suspend, err := t.ioStep(c, ops[t.pc], true)
		if suspend {
			return step
		}
		if err != nil && !ops[t.pc].Continue {
			return t.exit(c, driver{}.Kind(err))
		}
		t.pc++
	}
	if t.blocked {
		t.blocked = false
		op := ops[t.pc]
		kind := driver{}.Kind(c.Err())
		switch op.Kind {
		case semtest.OpAwait, semtest.OpAwaitTimeout:
			v := 0
			if kind == semtest.OK {
				v, _ = c.Result().(int)
			}
			r.rec.Awaited(t.idx, op.Event, v, kind)
		case semtest.OpAwaitAny, semtest.OpAwaitAll:
			v, _ := c.Result().(int)
			var trig []int
			for _, ev := range c.TriggeredEvents(nil) {
				for i := range r.events {
					if &r.events[i] == ev {
						trig = append(trig, i)
					}
				}
			}
			r.rec.General(t.idx, op, v, kind, trig)
		default:
			if kind != semtest.OK {
				r.rec.Failed(t.idx, op.Kind, kind)
			}
		}
		if kind != semtest.OK && !op.Continue {
			return t.exit(c, kind)
		}
		t.pc++
	}
	for ; t.pc < len(ops); t.pc++ {
		op := ops[t.pc]
		switch op.Kind {
		case semtest.OpLog:
			r.rec.Log(t.idx, op.Tag)
		case semtest.OpYield:
			t.blocked = true
			return c.Yield()
		case semtest.OpAwait:
			t.blocked = true
			return c.Await(&r.events[op.Event])
		case semtest.OpAwaitTimeout:
			t.blocked = true
			return c.AwaitTimeout(&r.events[op.Event], op.Dur)
		case semtest.OpSleep:
			t.blocked = true
			return c.Sleep(op.Dur)
		case semtest.OpResolve:
			if !r.events[op.Event].Resolve(op.Value) {
				r.rec.ResolveIgnored(t.idx, op.Event)
			}
		case semtest.OpReject:
			if !r.events[op.Event].Reject(semtest.ErrRejected) {
				r.rec.ResolveIgnored(t.idx, op.Event)
			}
		case semtest.OpReset:
			r.events[op.Event].Reset()
		case semtest.OpSpin:
			for start := time.Now(); time.Since(start) < op.Dur; {
			}
		case semtest.OpSpawn:
			if err := c.SpawnPriority(r.tasks[op.Task], priority(op.Priority)); err != nil {
				return c.Fail(err)
			}
		case semtest.OpMicrotask:
			tag, fail := op.Tag, op.Fail
			err := r.s.QueueMicrotask(func() error {
				r.rec.MicrotaskRan(tag, fail)
				if fail {
					return &semtest.MicrotaskError{Tag: tag}
				}
				return nil
			})
			if err != nil {
				return c.Fail(err)
			}
		case semtest.OpCancel:
			if target := r.tasks[op.Task]; target.ID() != 0 { // never spawned: nothing to cancel
				if err := r.s.Cancel(target); err != nil {
					return c.Fail(err)
				}
			}
		case semtest.OpShutdown:
			c.Shutdown()
		case semtest.OpDefer, semtest.OpDeferSpawn:
			t.defers = append(t.defers, op)
		case semtest.OpLeaveSpawn:
			task, prio := op.Task, priority(op.Priority)
			c.AddSwitchHandler(func(_ stackless.Task, ev stackless.SwitchEvent) bool {
				if ev != stackless.Leave {
					return true
				}
				r.rec.LeaveSpawned(t.idx, task)
				if err := r.s.SpawnPriority(r.tasks[task], prio); err != nil {
					panic(err)
				}
				return false
			})
		case semtest.OpAwaitAny, semtest.OpAwaitAll:
			count := 0
			all := stackless.CustomCallback(func(*stackless.Event, any, error) (bool, any, error) {
				count++
				return count == len(op.Events), count, nil
			})
			for _, e := range op.Events {
				if op.Kind == semtest.OpAwaitAny {
					c.ResumeWhen(&r.events[e], stackless.ResolveCallback)
				} else {
					c.ResumeWhen(&r.events[e], all)
				}
			}
			t.blocked = true
			return c.Suspend(0)
		case semtest.OpDestroy:
			if target := r.tasks[op.Task]; target.ID() != 0 {
				if err := r.s.Destroy(target); err != nil {
					return c.Fail(err)
				}
			}
		case semtest.OpSwitchHandler:
			c.AddSwitchHandler(r.handler(t.idx, "handler", op.Keep))
		case semtest.OpWakerState:
			r.rec.Waker(t.idx, op.Task, r.tasks[op.Task].WakerStatus())
		case semtest.OpWork, semtest.OpOpenGate, semtest.OpWaitStarted, semtest.OpFileOpen, semtest.OpFileWrite,
			semtest.OpFileWriteAt, semtest.OpFileReadAt, semtest.OpFileClose, semtest.OpExec, semtest.OpExecKill,
			semtest.OpWatch, semtest.OpWatchWait, semtest.OpWatchClose, semtest.OpAppend, semtest.OpLookup:
			t.io.sub = 0
			step, suspend, err := t.ioStep(c, op, false)
			if suspend {
				return step
			}
			if err != nil && !op.Continue {
				return t.exit(c, driver{}.Kind(err))
			}
		default:
			return c.Fail(fmt.Errorf("stackless semtest driver: op %s not supported", op.Kind))
		}
	}
	return t.exit(c, semtest.OK)
}

// exit runs the task's defers in reverse order and logs its exit.
func (t *scriptTask) exit(c *stackless.Context, kind semtest.ErrKind) stackless.Step {
	for i := len(t.defers) - 1; i >= 0; i-- {
		if op := t.defers[i]; op.Kind == semtest.OpDeferSpawn {
			if err := c.SpawnPriority(t.r.tasks[op.Task], priority(op.Priority)); err != nil {
				return c.Fail(err)
			}
		} else {
			t.r.rec.Deferred(t.idx, op.Tag)
		}
	}
	t.defers = nil
	t.io.release()
	t.r.rec.Exit(t.idx, kind)
	return c.Done()
}

func priority(p semtest.Priority) stackless.Priority {
	if p == semtest.High {
		return stackless.High
	}
	return stackless.Normal
}

// taskIO is a task's state for the IO ops (semtest/io.go): its open file,
// watch, pool slots, and the child and progress of an exec op.
type taskIO struct {
	busy  bool // an op is in progress: the next Resume continues it (ioStep)
	sub   int  // the op's step
	out   *int // OpWork's value, written by the job
	buf   []byte
	file  *stackless.File
	watch *stackless.Watch
	work  *stackless.Work
	res   *stackless.Resolver
	child *stackless.Child
}

// release frees what the task still holds when it exits.
func (io *taskIO) release() {
	if io.child != nil {
		io.child.Close()
	}
	if io.watch != nil {
		io.watch.Close()
	}
	if io.work != nil {
		io.work.Close()
	}
	if io.res != nil {
		io.res.Close()
	}
	if io.file != nil {
		io.file.Release()
	}
	*io = taskIO{}
}

// ioStep runs IO op as a state machine: called with resumed false when the
// task reaches the op, and again with resumed true on each Resume while
// suspend keeps it busy. When the op is over (suspend false) its outcome
// is logged and err decides whether the task goes on.
func (t *scriptTask) ioStep(c *stackless.Context, op semtest.Op, resumed bool) (step stackless.Step, suspend bool, err error) {
	r, s, st := t.r, t.r.s, &t.io
	cfg := r.p.IO
	wait := func(next stackless.Step) (stackless.Step, bool, error) {
		st.busy = true
		return next, true, nil
	}
	st.busy = false
	result := semtest.ResultOK
	switch op.Kind {
	case semtest.OpOpenGate:
		cfg.Run().OpenGate(op.Gate)
		return step, false, nil
	case semtest.OpWaitStarted:
		cfg.Run().WaitStarted(op.Gate)
		return step, false, nil
	case semtest.OpWork:
		if !resumed {
			if st.work != nil {
				st.work.Close() // a fresh slot per job: a withdrawn one may still run
			}
			if st.work, err = s.NewWork(); err != nil {
				break
			}
			st.out = new(int)
			return wait(c.AwaitWork(st.work, reactor.JobFunc(cfg.Run().Job(op, st.out)), op.Dur))
		}
		if err = c.Err(); err == nil {
			result = semtest.ResultInt(*st.out)
		}
	case semtest.OpFileOpen, semtest.OpFileWrite, semtest.OpFileWriteAt, semtest.OpFileReadAt, semtest.OpFileClose:
		if !resumed {
			if st.file == nil {
				if st.file, err = s.NewFile(); err != nil {
					break
				}
			}
			switch op.Kind {
			case semtest.OpFileOpen:
				flag, perm := semtest.FileFlags(op)
				return wait(st.file.Open(c, cfg.Path(op.Tag), flag, perm))
			case semtest.OpFileWrite:
				return wait(st.file.Write(c, []byte(op.Tag)))
			case semtest.OpFileWriteAt:
				return wait(st.file.WriteAt(c, []byte(op.Tag), int64(op.Value)))
			case semtest.OpFileReadAt:
				st.buf = make([]byte, op.Keep)
				return wait(st.file.ReadAt(c, st.buf, int64(op.Value)))
			default:
				return wait(st.file.Close(c))
			}
		}
		err = c.Err()
		n, _ := c.Result().(int)
		switch op.Kind {
		case semtest.OpFileWrite, semtest.OpFileWriteAt:
			result = semtest.ResultInt(n)
		case semtest.OpFileReadAt:
			result = semtest.ResultBytes(st.buf[:n])
		}
	case semtest.OpExec:
		return t.execStep(c, op, resumed)
	case semtest.OpExecKill:
		return t.execKillStep(c, op, resumed)
	case semtest.OpWatch:
		st.watch, err = s.NewWatch(cfg.Path(op.Tag), semtest.WatchMask)
	case semtest.OpWatchWait:
		if !resumed {
			return wait(c.AwaitSource(&st.watch.Source, op.Dur))
		}
		err = c.Err()
		evs, _ := c.Result().([]reactor.FSEvent)
		result = semtest.ResultEvents(evs)
	case semtest.OpWatchClose:
		st.watch.Close()
		st.watch = nil
	case semtest.OpAppend:
		err = semtest.AppendFile(cfg.Path(op.Tag))
	case semtest.OpLookup:
		if !resumed {
			if st.res == nil {
				if st.res, err = s.NewResolver(); err != nil {
					break
				}
			}
			return wait(c.AwaitLookup(st.res, op.Tag, op.Dur))
		}
		err = c.Err()
		result = semtest.ResultAddrs(stackless.Addrs(c))
	default:
		panic("stackless semtest driver: op " + op.Kind.String() + " is not an IO op")
	}
	r.rec.IO(t.idx, op, result, driver{}.Kind(err))
	return step, false, err
}

// execStep is OpExec: start the child (sub 0), read its stdout to end of
// file (sub 1, awaiting readability), await its exit (sub 2) and reap it.
func (t *scriptTask) execStep(c *stackless.Context, op semtest.Op, resumed bool) (stackless.Step, bool, error) {
	st := &t.io
	done := func(result string, err error) (stackless.Step, bool, error) {
		if st.child != nil {
			st.child.Close()
			st.child = nil
		}
		t.r.rec.IO(t.idx, op, result, driver{}.Kind(err))
		return stackless.Step{}, false, err
	}
	if resumed {
		if err := c.Err(); err != nil {
			return done("", err)
		}
	}
	for {
		switch st.sub {
		case 0:
			path, argv := semtest.ChildArgv(op, false)
			ch, err := t.r.s.StartProcess(path, argv, reactor.ExecOptions{Stdout: true})
			if err != nil {
				return done("", err)
			}
			st.child, st.buf, st.sub = ch, make([]byte, 0, 64), 1
		case 1:
			if len(st.buf) == cap(st.buf) {
				st.buf = append(st.buf, 0)[:len(st.buf)]
			}
			n, err := st.child.Stdout.TryRead(st.buf[len(st.buf):cap(st.buf)])
			st.buf = st.buf[:len(st.buf)+n]
			switch {
			case errors.Is(err, reactor.ErrWouldBlock):
				st.busy = true
				return c.AwaitReadable(st.child.Stdout), true, nil
			case errors.Is(err, io.EOF):
				st.sub = 2
				if !st.child.Exited() {
					st.busy = true
					return c.AwaitSource(&st.child.Source, 0), true, nil
				}
			case err != nil:
				return done("", err)
			}
		case 2:
			ps, err := st.child.Wait()
			return done(semtest.ResultExit(st.buf, ps), err)
		}
	}
}

// execKillStep is OpExecKill: start a sleeping child (sub 0), await its
// exit with the op's timeout (sub 1: logged), kill it and await the exit
// (sub 2), reap it.
func (t *scriptTask) execKillStep(c *stackless.Context, op semtest.Op, resumed bool) (stackless.Step, bool, error) {
	st := &t.io
	done := func(result string, err error) (stackless.Step, bool, error) {
		if st.child != nil {
			st.child.Close()
			st.child = nil
		}
		t.r.rec.IO(t.idx, op, result, driver{}.Kind(err))
		return stackless.Step{}, false, err
	}
	switch st.sub {
	case 0:
		path, argv := semtest.ChildArgv(op, true)
		ch, err := t.r.s.StartProcess(path, argv, reactor.ExecOptions{})
		if err != nil {
			return done("", err)
		}
		st.child, st.sub, st.busy = ch, 1, true
		return c.AwaitSource(&ch.Source, op.Dur), true, nil
	case 1:
		werr := c.Err()
		if werr == nil { // it exited by itself: nothing to kill
			ps, err := st.child.Wait()
			return done(semtest.ResultExit(nil, ps), err)
		}
		t.r.rec.IO(t.idx, op, "", driver{}.Kind(werr))
		if err := st.child.Kill(unix.SIGKILL); err != nil {
			return done("", err)
		}
		st.sub, st.busy = 2, true
		return c.AwaitSource(&st.child.Source, 0), true, nil
	default:
		if err := c.Err(); err != nil {
			return done("", err)
		}
		ps, err := st.child.Wait()
		return done(semtest.ResultExit(nil, ps), err)
	}
}
