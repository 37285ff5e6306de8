package stackful

import (
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/semtest"
	"github.com/corobench/corobench/reactor"
)

// init lets this test binary be the IO cases' exec child (semtest.ServeChild).
func init() { semtest.ServeChild() }

// driver runs internal/semtest scripts as straight-line blocking Go code: one
// coroutine per task, a loop over its ops, a real defer for each Defer op.
// viaScheduler runs the asm backend with Options.ViaScheduler: the same
// semantics, every hand-off through the scheduler's context.
type driver struct {
	backend      Backend
	viaScheduler bool
}

func (d driver) Name() string {
	if d.viaScheduler {
		return "stackful-" + d.backend.String() + "-via-scheduler"
	}
	return "stackful-" + d.backend.String()
}

func (d driver) DirectSwitch() bool { return d.backend == Asm && !d.viaScheduler }

func (d driver) Kind(err error) semtest.ErrKind {
	var me *semtest.MicrotaskError
	switch {
	case err == nil:
		return semtest.OK
	case errors.Is(err, ErrDeadlock):
		return semtest.Deadlock
	case errors.Is(err, ErrTimeout):
		return semtest.Timeout
	case errors.Is(err, ErrCancelled):
		return semtest.Cancelled
	case errors.Is(err, semtest.ErrRejected):
		return semtest.Rejected
	case errors.As(err, &me):
		return semtest.MicrotaskFailed
	}
	if k, ok := semtest.IOKind(err); ok {
		return k
	}
	return semtest.Other
}

// Lacks: both backends have every reactor awaitable (offload.go).
func (driver) Lacks(semtest.Feature) (string, bool) { return "", false }

// ioState is one task's open file and watch (the IO ops').
type ioState struct {
	file  *File
	watch *Watch
}

// noneIfZero maps a script's "no timeout" (<= 0) to the API's (-1).
func noneIfZero(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// ioOp runs one IO op (semtest/io.go) as straight-line blocking code and
// logs its outcome; the error decides whether the task goes on.
func (d driver) ioOp(rec *semtest.Recorder, cfg *semtest.IOConfig, ti int, op semtest.Op, st *ioState) error {
	result, err := semtest.ResultOK, error(nil)
	switch op.Kind {
	case semtest.OpOpenGate:
		cfg.Run().OpenGate(op.Gate)
		return nil
	case semtest.OpWaitStarted:
		cfg.Run().WaitStarted(op.Gate)
		return nil
	case semtest.OpWork:
		out := new(int)
		wk := NewWork()
		err = wk.Run(reactor.JobFunc(cfg.Run().Job(op, out)), noneIfZero(op.Dur))
		wk.Close()
		if err == nil {
			result = semtest.ResultInt(*out)
		}
	case semtest.OpFileOpen:
		flag, perm := semtest.FileFlags(op)
		st.file, err = OpenFile(cfg.Path(op.Tag), flag, perm)
	case semtest.OpFileWrite:
		var n int
		n, err = st.file.Write([]byte(op.Tag))
		result = semtest.ResultInt(n)
	case semtest.OpFileWriteAt:
		var n int
		n, err = st.file.WriteAt([]byte(op.Tag), int64(op.Value))
		result = semtest.ResultInt(n)
	case semtest.OpFileReadAt:
		p := make([]byte, op.Keep)
		var n int
		n, err = st.file.ReadAt(p, int64(op.Value))
		result = semtest.ResultBytes(p[:n])
	case semtest.OpFileClose:
		err = st.file.Close()
		st.file = nil
	case semtest.OpExec:
		path, argv := semtest.ChildArgv(op, false)
		var ch *Child
		if ch, err = StartProcess(path, argv, reactor.ExecOptions{Stdout: true}); err == nil {
			out, rerr := io.ReadAll(ch.Stdout)
			ps, werr := ch.Wait(-1)
			ch.Close()
			err = errors.Join(rerr, werr)
			result = semtest.ResultExit(out, ps)
		}
	case semtest.OpExecKill:
		path, argv := semtest.ChildArgv(op, true)
		var ch *Child
		if ch, err = StartProcess(path, argv, reactor.ExecOptions{}); err != nil {
			break
		}
		ps, werr := ch.Wait(op.Dur)
		if werr == nil { // it exited by itself: nothing to kill
			ch.Close()
			result = semtest.ResultExit(nil, ps)
			break
		}
		rec.IO(ti, op, "", d.Kind(werr))
		if err = ch.Kill(unix.SIGKILL); err == nil {
			ps, err = ch.Wait(-1)
			result = semtest.ResultExit(nil, ps)
		}
		ch.Close()
	case semtest.OpWatch:
		st.watch, err = NewWatch(cfg.Path(op.Tag), semtest.WatchMask)
	case semtest.OpWatchWait:
		var evs []reactor.FSEvent
		evs, err = st.watch.Wait(noneIfZero(op.Dur))
		result = semtest.ResultEvents(evs)
	case semtest.OpWatchClose:
		st.watch.Close()
		st.watch = nil
	case semtest.OpAppend:
		err = semtest.AppendFile(cfg.Path(op.Tag))
	case semtest.OpLookup:
		r := NewResolver()
		addrs, lerr := r.Lookup(op.Tag, op.Dur)
		r.Close()
		err, result = lerr, semtest.ResultAddrs(addrs)
	default:
		panic("stackful semtest driver: op " + op.Kind.String() + " is not an IO op")
	}
	rec.IO(ti, op, result, d.Kind(err))
	return err
}

func (driver) DeadlockNames(err error) []string {
	var de *DeadlockError
	if !errors.As(err, &de) {
		return nil
	}
	return de.Waiting
}

func countingHandler(rec *semtest.Recorder, task int, name string, keep int) SwitchHandler {
	calls := 0
	return func(_ Coroutine, kind SwitchKind) bool {
		rec.Switch(task, name, kind)
		calls++
		return calls <= keep
	}
}

func (d driver) Run(p *semtest.Program, rec *semtest.Recorder) (semtest.Stats, error) {
	// Every coroutine, main included, carries its script task's name: the
	// deadlock error must name the waiting tasks by it (semtest.Task).
	opts := Options{Backend: d.backend, MainName: p.Tasks[0].Name, ViaScheduler: d.viaScheduler}
	if p.IO != nil {
		opts.Reactor = p.IO.Reactor()
	}
	if p.MicrotaskErrors == semtest.HandleErrors {
		opts.OnMicrotaskError = rec.HandlerError
	}
	s, err := New(opts)
	if err != nil {
		return semtest.Stats{}, err
	}
	defer s.Close()
	if p.IO != nil {
		defer p.IO.Run().Release() // before Close: the pool awaits its running jobs
	}
	for i, keep := range p.MainStartHandlers {
		s.AddMainStartHandler(countingHandler(rec, 0, semtest.StartHandlerName(i), keep))
	}
	for i, keep := range p.PreRunHandlers {
		AddSwitchHandler(countingHandler(rec, 0, semtest.PreRunHandlerName(i), keep))
	}
	events := make([]*Event, p.Events)
	for i := range events {
		events[i] = NewEvent()
	}
	cos := make([]Coroutine, len(p.Tasks))
	var runTask func(ti int)
	runTask = func(ti int) {
		exit := semtest.OK
		var io ioState
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(killSignal); !ok {
					panic(r)
				}
				exit = semtest.Cancelled
				rec.Exit(ti, exit)
				panic(r)
			}
			rec.Exit(ti, exit)
		}()
		for _, op := range p.Tasks[ti].Ops {
			var err error
			switch op.Kind {
			case semtest.OpLog:
				rec.Log(ti, op.Tag)
			case semtest.OpYield:
				if err = Yield(); err != nil {
					rec.Failed(ti, op.Kind, d.Kind(err))
				}
			case semtest.OpAwait, semtest.OpAwaitTimeout:
				var v any
				if op.Kind == semtest.OpAwait {
					v, err = Await(events[op.Event])
				} else {
					v, err = AwaitTimeout(events[op.Event], op.Dur)
				}
				n, _ := v.(int)
				rec.Awaited(ti, op.Event, n, d.Kind(err))
			case semtest.OpResolve:
				if !events[op.Event].Resolve(op.Value) {
					rec.ResolveIgnored(ti, op.Event)
				}
			case semtest.OpReject:
				if !events[op.Event].Reject(semtest.ErrRejected) {
					rec.ResolveIgnored(ti, op.Event)
				}
			case semtest.OpReset:
				events[op.Event].Reset()
			case semtest.OpSleep:
				if err = Sleep(op.Dur); err != nil {
					rec.Failed(ti, op.Kind, d.Kind(err))
				}
			case semtest.OpSpin:
				for start := time.Now(); time.Since(start) < op.Dur; {
				}
			case semtest.OpSpawn:
				task := op.Task
				cos[task] = GoWith(p.Tasks[task].Name, Priority(op.Priority), func() { runTask(task) })
			case semtest.OpMicrotask:
				tag, fail := op.Tag, op.Fail
				QueueMicrotask(func() error {
					rec.MicrotaskRan(tag, fail)
					if fail {
						return &semtest.MicrotaskError{Tag: tag}
					}
					return nil
				})
			case semtest.OpCancel:
				if co := cos[op.Task]; !co.IsZero() {
					co.Cancel()
				}
			case semtest.OpShutdown:
				Shutdown()
			case semtest.OpDefer:
				tag := op.Tag
				defer rec.Deferred(ti, tag)
			case semtest.OpSwitchHandler:
				AddSwitchHandler(countingHandler(rec, ti, "handler", op.Keep))
			case semtest.OpLeaveSpawn:
				task, prio := op.Task, Priority(op.Priority)
				AddSwitchHandler(func(_ Coroutine, kind SwitchKind) bool {
					if kind != Leave {
						return true
					}
					rec.LeaveSpawned(ti, task)
					cos[task] = GoWith(p.Tasks[task].Name, prio, func() { runTask(task) })
					return false
				})
			case semtest.OpDeferSpawn:
				task, prio := op.Task, Priority(op.Priority)
				defer func() { cos[task] = GoWith(p.Tasks[task].Name, prio, func() { runTask(task) }) }()
			case semtest.OpAwaitAny, semtest.OpAwaitAll:
				count := 0
				all := CustomCallback(func(*Event, any, error) (bool, any, error) {
					count++
					return count == len(op.Events), count, nil
				})
				for _, e := range op.Events {
					if op.Kind == semtest.OpAwaitAny {
						ResumeWhen(events[e], ResolveCallback)
					} else {
						ResumeWhen(events[e], all)
					}
				}
				var v any
				v, err = Suspend(-1)
				n, _ := v.(int)
				var trig []int
				for _, ev := range Current().Waker().TriggeredEvents(nil) {
					for i := range events {
						if events[i] == ev {
							trig = append(trig, i)
						}
					}
				}
				rec.General(ti, op, n, d.Kind(err), trig)
			case semtest.OpDestroy:
				if co := cos[op.Task]; !co.IsZero() {
					co.Destroy()
				}
			case semtest.OpWork, semtest.OpOpenGate, semtest.OpWaitStarted, semtest.OpFileOpen, semtest.OpFileWrite,
				semtest.OpFileWriteAt, semtest.OpFileReadAt, semtest.OpFileClose, semtest.OpExec, semtest.OpExecKill,
				semtest.OpWatch, semtest.OpWatchWait, semtest.OpWatchClose, semtest.OpAppend, semtest.OpLookup:
				err = d.ioOp(rec, p.IO, ti, op, &io)
			case semtest.OpWakerState:
				st := WakerNoStatus // never spawned
				if co := cos[op.Task]; !co.IsZero() {
					st = co.WakerStatus()
				}
				rec.Waker(ti, op.Task, st)
			}
			if err != nil && !op.Continue {
				exit = d.Kind(err)
				return
			}
		}
	}
	err = s.Run(func() {
		cos[0] = Current()
		runTask(0)
	})
	st := s.Stats()
	return semtest.Stats{Switches: st.Switches, SchedulerSwitches: st.SchedulerSwitches}, err
}

func backends(t *testing.T) []driver {
	ds := []driver{{backend: Coro}}
	if s, err := New(Options{Backend: Asm}); err != nil {
		t.Logf("stackful-asm skipped: %v", err)
	} else {
		s.Close()
		ds = append([]driver{{backend: Asm}, {backend: Asm, viaScheduler: true}}, ds...)
	}
	return ds
}

func TestSemantics(t *testing.T) {
	for _, d := range backends(t) {
		t.Run(d.Name(), func(t *testing.T) { semtest.Run(t, d) })
	}
}
