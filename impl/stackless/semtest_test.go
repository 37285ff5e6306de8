package stackless_test

import (
	"errors"
	"fmt"
	"time"

	"testing"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/internal/semtest"
)

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
	return semtest.Other
}

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
	s, err := stackless.NewWithOptions(o)
	if err != nil {
		return semtest.Stats{}, err
	}
	defer s.Close()
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
}

func (t *scriptTask) Name() string { return t.r.p.Tasks[t.idx].Name }

func (t *scriptTask) Resume(c *stackless.Context) stackless.Step {
	r, ops := t.r, t.r.p.Tasks[t.idx].Ops
	if c.Unwinding() {
		return t.exit(c, semtest.Cancelled)
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
	t.r.rec.Exit(t.idx, kind)
	return c.Done()
}

func priority(p semtest.Priority) stackless.Priority {
	if p == semtest.High {
		return stackless.High
	}
	return stackless.Normal
}
