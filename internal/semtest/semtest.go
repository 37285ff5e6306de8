// Package semtest is the semantic test suite shared by corobench's coroutine
// runtimes (impl/stackful with both switch backends, impl/stackless). The
// tests are written once, as scripts, and every runtime runs them through a
// small Driver, so the runtimes are held to one definition of the scheduler
// and waker semantics of the TrueAsync design (docs/design.md §1).
//
// # Scripts
//
// A Program is a list of Tasks; each Task is a list of Ops. Task 0 is the
// main task, started by Driver.Run; the other tasks start only when an Op
// spawns them (each task index at most once). Events are numbered
// 0..Program.Events-1, one-shot, and all pending at start.
//
// A stackful driver interprets a task as straight-line blocking code (a loop
// over the ops, a real defer for Defer); a stackless driver interprets it as a
// state machine whose state is the op index. Both must produce the same log,
// entry for entry, through the Recorder, which owns the log's wording.
//
// # Semantics every driver must implement
//
//   - Queue. Spawn enqueues the new task without switching: Normal priority at
//     the tail, High priority at the head; the next task is always taken from
//     the head. A task woken by an event (resolve, reject, timeout,
//     cancellation) is enqueued the same way, by its spawn priority. Yield
//     always enqueues the current task at the tail, whatever its priority.
//   - Suspend points are Yield, an Await/AwaitTimeout that does not take the
//     fast path, Sleep, and a task's finish. At a suspend point the runtime
//     (1) runs the microtask batch, (2) ticks the reactor without blocking if
//     at least 1ms has passed since its last tick and the reactor has active
//     events (a runtime may tick more often, never less), (3) takes the head
//     of the queue. If that is the suspending task itself (a Yield with nobody
//     else ready) it continues without a switch.
//   - Fast path. Await on an event that has already fired returns its outcome
//     at once: no suspend, no microtasks, no switch.
//   - Microtasks run FIFO in the current context, never switching. A
//     microtask that fails stops the batch; the microtasks behind it stay
//     queued and run at the next suspend point. With
//     Program.MicrotaskErrors == HandleErrors the driver installs an error
//     handler that calls Recorder.HandlerError and the run goes on; with
//     FailRun there is no handler: the error starts a graceful shutdown and
//     becomes the run's error (kind MicrotaskFailed).
//   - Waker states, as WakerState logs them: a spawned task not yet started
//     is Queued; a running task is NoStatus; a task suspended in Await or
//     Sleep is Waiting; once woken and not yet running again it is Queued; a
//     task that resumed from an Await is Result until its next blocking call;
//     a not-yet-started task that was cancelled is Ignored (it never runs; the
//     scheduler drops it when dequeued); a finished task is NoStatus.
//   - Races. The first trigger wins: once a waker is Queued, later triggers
//     (a resolve, a timer expiring, a cancellation event) are ignored for that
//     wait; the event itself still records its outcome. A timer that expired
//     is only noticed by a reactor tick, so a Resolve made before the next
//     tick wins over an expired timeout, and a timeout delivered by a tick
//     wins over a Resolve made after it.
//   - Cancellation (Cancel, shutdown, deadlock). Cancelling a finished task
//     does nothing; a not-yet-started one becomes Ignored; a Waiting one is
//     woken with kind Cancelled; a Queued or running one keeps its current
//     outcome and gets Cancelled from its next blocking op, which returns at
//     once. A cancellation is delivered once: later blocking ops work normally.
//   - Shutdown: set the shutdown flag; cancel every live task in spawn order
//     (main first); let them run; when nothing is runnable and the reactor has
//     nothing active, final cleanup: each task still suspended is resumed so
//     that its blocking op does not return but the task unwinds: its Defers
//     run and it exits with kind Cancelled, whatever Continue says. Pending
//     microtasks at final cleanup are dropped without running. A run that
//     ends by a requested Shutdown returns no error.
//   - Deadlock: nothing runnable, nothing active in the reactor, tasks still
//     waiting. The run's error has kind Deadlock and lists every waiting task,
//     in spawn order, by its Task.Name exactly (main too: a driver gives
//     every coroutine its task's name); then a graceful shutdown runs as
//     above.
//   - A task spawned during a graceful shutdown (by a cleanup, say) starts
//     cancelled: its first blocking op returns Cancelled at once, so it
//     cannot hold the run open.
//   - Destroy finalises a task without running more of its code: one not
//     yet started is Ignored and dropped; a started one that is queued or
//     waiting becomes Ignored (a waiting one is woken), and when the
//     scheduler reaches it it unwinds as in final cleanup (its Defers run,
//     its Exit is logged with kind Cancelled) instead of returning from its
//     blocking op.
//   - General waits (resume_when): AwaitAny subscribes to its events with
//     the standard resolve callback, so the first to fire ends the wait
//     with its outcome and the others are stopped; AwaitAll uses a custom
//     callback that counts and ends the wait when every event has fired.
//     Events that had already fired are decided when the wait starts (no
//     suspend if that ends it). The triggered set is every subscribed
//     event that fired while the wait was active, in firing order.
//   - The run ends when every task has finished (not when main does).
//   - Switch handlers are called in the task's own context when control
//     really leaves it (Leave), enters it again (Enter) and when it finishes
//     (Finish); a Yield that continues without a switch calls none. A handler
//     added by SwitchHandler(keep) returns true (kept) for its first keep
//     calls and false (removed) on call keep+1. Program.MainStartHandlers are
//     registered before the run; the runtime copies them into the main task
//     and fires them as Enter when it starts. Program.PreRunHandlers are
//     added before the run with the "current coroutine" form, which binds
//     them to main. Leave is called when the task gives control up and
//     before the scheduler picks the next task, so a High task spawned by a
//     Leave handler (LeaveSpawn) runs next, ahead of tasks already queued.
//
// # Reactor awaitables
//
// Cases named io/... hold the runtimes' reactor awaitables (pool work, file
// IO, exec, inotify watches, DNS; docs/design.md §4) to one behaviour: the
// ops of io.go, each one awaitable call whose outcome Recorder.IO words. A
// driver runs them only if it is an IODriver and does not lack the
// features a case lists (Program.IO); RunCase skips the case otherwise,
// saying which feature is missing and why.
//
// A blocking op logs its outcome only where the Recorder method says so: Await
// and AwaitTimeout always log (value or error kind); Yield and Sleep log only
// an error. After a blocking op fails, the task returns (its Defers run, in
// reverse order, then its Exit is logged with that error's kind) unless the op
// has Continue set. Every task that ran logs Exit when it returns.
package semtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corobench/corobench/internal/switchhook"
	"github.com/corobench/corobench/internal/wakerstate"
)

// OpKind names one script operation.
type OpKind uint8

const (
	OpLog           OpKind = iota // log Tag
	OpYield                       // let the others run; the task goes to the tail
	OpAwait                       // wait for Event; log its value or error kind
	OpAwaitTimeout                // like OpAwait, failing with Timeout after Dur
	OpResolve                     // resolve Event with Value (no switch)
	OpReject                      // reject Event with ErrRejected (no switch)
	OpReset                       // make Event pending again for reuse
	OpSleep                       // sleep for Dur through a reactor timer
	OpSpin                        // busy-wait Dur without yielding (to let a timer expire unnoticed)
	OpSpawn                       // start task Task with Priority (no switch)
	OpMicrotask                   // enqueue a microtask that logs Tag and fails if Fail
	OpCancel                      // cancel task Task
	OpShutdown                    // start a graceful shutdown
	OpDefer                       // register a cleanup that logs Tag when the task returns or unwinds
	OpSwitchHandler               // add a switch handler to this task, kept for Keep calls
	OpWakerState                  // log the waker state of task Task
	OpLeaveSpawn                  // add a switch handler that, at this task's first Leave, logs and spawns task Task with Priority, then removes itself
	OpDeferSpawn                  // register a cleanup that spawns task Task with Priority when this task returns or unwinds
	OpDestroy                     // destroy task Task: finalise it without running more of its code (its cleanup runs)
	OpAwaitAny                    // general wait (resume_when) on Events, each with the resolve callback: the first to fire ends it; log value and triggered set
	OpAwaitAll                    // general wait on Events with a custom callback that ends it when all have fired (value: how many); log value and triggered set

	// The reactor's awaitables (io.go): each needs its Feature in
	// Program.IO.Needs and logs through Recorder.IO.
	OpWork        // run a pool job that returns Value*Value (after waiting for gate Gate if Gated), timeout Dur (<= 0: none)
	OpOpenGate    // let the jobs waiting for gate Gate go on (no switch)
	OpWaitStarted // block the thread (not a suspend) until a job is waiting for gate Gate on a pool thread
	OpFileOpen    // open Tag in the case's directory: Value 0 read-only, 1 created read-write
	OpFileWrite   // write Tag at the file offset
	OpFileWriteAt // write Tag at offset Value
	OpFileReadAt  // read Keep bytes at offset Value; log what was read
	OpFileClose   // close the open file
	OpExec        // run the child that prints Tag and exits with Value, read its output to EOF, await and reap it; Missing: a binary that does not exist
	OpExecKill    // run a child that sleeps, await its exit with timeout Dur (logs the timeout), kill it, await and log how it ended
	OpWatch       // watch the file Tag in the case's directory for IN_MODIFY
	OpWatchWait   // await the watch's events, timeout Dur (<= 0: none); log them
	OpWatchClose  // remove the watch
	OpAppend      // append a byte to the file Tag (created if missing) with a plain blocking write
	OpLookup      // resolve the name Tag, timeout Dur (<= 0: none); log the addresses
	numOpKinds
)

var opNames = [...]string{"Log", "Yield", "Await", "AwaitTimeout", "Resolve", "Reject", "Reset",
	"Sleep", "Spin", "Spawn", "Microtask", "Cancel", "Shutdown", "Defer", "SwitchHandler", "WakerState",
	"LeaveSpawn", "DeferSpawn", "Destroy", "AwaitAny", "AwaitAll",
	"Work", "OpenGate", "WaitStarted", "FileOpen", "FileWrite", "FileWriteAt", "FileReadAt", "FileClose",
	"Exec", "ExecKill", "Watch", "WatchWait", "WatchClose", "Append", "Lookup"}

func (k OpKind) String() string {
	if k < numOpKinds {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// Priority is a spawn priority.
type Priority uint8

const (
	Normal Priority = iota // enqueued at the tail
	High                   // enqueued at the head
)

// Op is one script operation. Which fields matter depends on Kind.
type Op struct {
	Kind     OpKind
	Tag      string        // OpLog, OpMicrotask, OpDefer
	Event    int           // OpAwait, OpAwaitTimeout, OpResolve, OpReject, OpReset
	Value    int           // OpResolve
	Task     int           // OpSpawn, OpCancel, OpWakerState
	Priority Priority      // OpSpawn
	Dur      time.Duration // OpAwaitTimeout, OpSleep, OpSpin
	Fail     bool          // OpMicrotask
	Keep     int           // OpSwitchHandler
	Continue bool          // blocking ops: go on after an error instead of returning
	Events   []int         // OpAwaitAny, OpAwaitAll
	Gate     int           // OpWork (with Gated), OpOpenGate, OpWaitStarted
	Gated    bool          // OpWork: the job waits for Gate first
	Missing  bool          // OpExec: run a binary that does not exist
}

// Op constructors, so scripts read like code.

func Log(tag string) Op { return Op{Kind: OpLog, Tag: tag} }
func Yield() Op         { return Op{Kind: OpYield} }
func Await(ev int) Op   { return Op{Kind: OpAwait, Event: ev} }
func AwaitTimeout(ev int, d time.Duration) Op {
	return Op{Kind: OpAwaitTimeout, Event: ev, Dur: d}
}
func Resolve(ev, value int) Op           { return Op{Kind: OpResolve, Event: ev, Value: value} }
func Reject(ev int) Op                   { return Op{Kind: OpReject, Event: ev} }
func Reset(ev int) Op                    { return Op{Kind: OpReset, Event: ev} }
func Sleep(d time.Duration) Op           { return Op{Kind: OpSleep, Dur: d} }
func Spin(d time.Duration) Op            { return Op{Kind: OpSpin, Dur: d} }
func Spawn(task int, p Priority) Op      { return Op{Kind: OpSpawn, Task: task, Priority: p} }
func Microtask(tag string, fail bool) Op { return Op{Kind: OpMicrotask, Tag: tag, Fail: fail} }
func Cancel(task int) Op                 { return Op{Kind: OpCancel, Task: task} }
func Shutdown() Op                       { return Op{Kind: OpShutdown} }
func Defer(tag string) Op                { return Op{Kind: OpDefer, Tag: tag} }
func SwitchHandler(keep int) Op          { return Op{Kind: OpSwitchHandler, Keep: keep} }
func WakerState(task int) Op             { return Op{Kind: OpWakerState, Task: task} }
func LeaveSpawn(task int, p Priority) Op { return Op{Kind: OpLeaveSpawn, Task: task, Priority: p} }
func DeferSpawn(task int, p Priority) Op { return Op{Kind: OpDeferSpawn, Task: task, Priority: p} }
func Destroy(task int) Op                { return Op{Kind: OpDestroy, Task: task} }
func AwaitAny(events ...int) Op          { return Op{Kind: OpAwaitAny, Events: events} }
func AwaitAll(events ...int) Op          { return Op{Kind: OpAwaitAll, Events: events} }

// Continuing returns op with Continue set: the task goes on after an error.
func Continuing(op Op) Op { op.Continue = true; return op }

// Repeat returns n copies of the ops, concatenated.
func Repeat(n int, ops ...Op) []Op {
	out := make([]Op, 0, n*len(ops))
	for i := 0; i < n; i++ {
		out = append(out, ops...)
	}
	return out
}

// ErrorPolicy says how a driver reports microtask errors.
type ErrorPolicy uint8

const (
	HandleErrors ErrorPolicy = iota // install a handler calling Recorder.HandlerError
	FailRun                         // no handler: the error fails the run
)

// Task is one coroutine's script. Name is also the coroutine's name in the
// runtime (deadlock errors must name it).
type Task struct {
	Name string
	Ops  []Op
}

// Program is one test script.
type Program struct {
	Name              string
	Tasks             []Task // Tasks[0] is main
	Events            int    // number of events
	MainStartHandlers []int  // keep counts of global main-start switch handlers
	// PreRunHandlers are keep counts of switch handlers added, before the
	// run starts, with the runtime's "current coroutine, or main if the
	// scheduler has not started" form: they bind to the main task (they see
	// its start as Enter).
	PreRunHandlers  []int
	MicrotaskErrors ErrorPolicy
	// IO, for a case on the reactor's awaitables, is its reactor set-up
	// and the features it needs (io.go); nil for the others.
	IO *IOConfig
}

// Validate reports a malformed program (a bad index, a task spawned twice).
func (p *Program) Validate() error {
	if len(p.Tasks) == 0 {
		return fmt.Errorf("semtest: program %q has no tasks: Tasks[0] is the main task", p.Name)
	}
	spawned := make([]bool, len(p.Tasks))
	for ti, t := range p.Tasks {
		for oi, op := range t.Ops {
			where := fmt.Sprintf("semtest: program %q task %d (%s) op %d (%s)", p.Name, ti, t.Name, oi, op.Kind)
			switch op.Kind {
			case OpAwait, OpAwaitTimeout, OpResolve, OpReject, OpReset:
				if op.Event < 0 || op.Event >= p.Events {
					return fmt.Errorf("%s: event %d out of range [0,%d): raise Program.Events", where, op.Event, p.Events)
				}
			case OpAwaitAny, OpAwaitAll:
				for _, ev := range op.Events {
					if ev < 0 || ev >= p.Events {
						return fmt.Errorf("%s: event %d out of range [0,%d): raise Program.Events", where, ev, p.Events)
					}
				}
			case OpSpawn, OpCancel, OpWakerState, OpLeaveSpawn, OpDeferSpawn, OpDestroy:
				if op.Task < 0 || op.Task >= len(p.Tasks) {
					return fmt.Errorf("%s: task %d out of range [0,%d)", where, op.Task, len(p.Tasks))
				}
				spawns := op.Kind == OpSpawn || op.Kind == OpLeaveSpawn || op.Kind == OpDeferSpawn
				if spawns && op.Task == 0 {
					return fmt.Errorf("%s: main (task 0) is started by Run and cannot be spawned", where)
				}
				if spawns {
					if spawned[op.Task] {
						return fmt.Errorf("%s: task %d spawned twice: give each spawn its own task", where, op.Task)
					}
					spawned[op.Task] = true
				}
			case OpSwitchHandler:
				if op.Keep < 0 {
					return fmt.Errorf("%s: negative Keep", where)
				}
			}
			if f, ok := opFeature(op.Kind); ok && (p.IO == nil || !slices.Contains(p.IO.Needs, f)) {
				return fmt.Errorf("%s: needs feature %q in Program.IO.Needs", where, f)
			}
		}
	}
	return nil
}

// ErrKind classifies an outcome, so logs compare across runtimes.
type ErrKind uint8

const (
	OK              ErrKind = iota // no error
	Rejected                       // the event was rejected (with ErrRejected)
	Timeout                        // the wait timed out
	Cancelled                      // the task was cancelled (Cancel, shutdown, deadlock)
	Deadlock                       // the run found a deadlock
	MicrotaskFailed                // a microtask failed (a *MicrotaskError)
	Other                          // anything else: a bug
	NotExist                       // a file or binary does not exist (errors.Is os.ErrNotExist)
	NotFound                       // a name is unknown (a *net.DNSError with IsNotFound)
	QueueFull                      // the thread pool refused work (reactor.ErrPoolQueueFull)
)

var kindNames = [...]string{"ok", "rejected", "timeout", "cancelled", "deadlock", "microtask failed", "other",
	"not exist", "not found", "queue full"}

func (k ErrKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrKind(%d)", k)
}

// ErrRejected is the error drivers reject events with.
var ErrRejected = errors.New("semtest: event rejected")

// MicrotaskError is the error a failing microtask returns.
type MicrotaskError struct{ Tag string }

func (e *MicrotaskError) Error() string { return "semtest: microtask " + e.Tag + " failed" }

// Stats are the runtime's switch counters over one run.
type Stats struct {
	Switches          uint64 // every transfer of control between execution contexts
	SchedulerSwitches uint64 // those transfers into or out of the scheduler's own context
}

// Driver runs programs on one runtime.
type Driver interface {
	// Name names the runtime (a row name such as "stackful-asm").
	Name() string
	// Run runs p on a fresh runtime, recording into rec, and returns the
	// runtime's switch counters and the run's error.
	Run(p *Program, rec *Recorder) (Stats, error)
	// Kind classifies an error returned by the runtime (from a blocking op
	// or from Run).
	Kind(err error) ErrKind
	// DirectSwitch reports whether a suspending coroutine switches straight
	// to the next one (one switch per handoff) rather than through the
	// scheduler (two).
	DirectSwitch() bool
	// DeadlockNames returns the names a deadlock error from Run lists for
	// the waiting tasks, in its order (nil if err is not a deadlock error).
	DeadlockNames(err error) []string
}

// Recorder builds a run's log. Drivers call it; it alone words the entries.
// It is not safe for concurrent use (runtimes under test are single-threaded).
type Recorder struct {
	p     *Program
	lines []string
}

// NewRecorder returns an empty log for p.
func NewRecorder(p *Program) *Recorder { return &Recorder{p: p} }

// Lines returns the log so far.
func (r *Recorder) Lines() []string { return r.lines }

// String returns the log, one entry a line.
func (r *Recorder) String() string { return strings.Join(r.lines, "\n") }

func (r *Recorder) add(task int, msg string) {
	r.lines = append(r.lines, r.p.Tasks[task].Name+": "+msg)
}

// Log records OpLog.
func (r *Recorder) Log(task int, tag string) { r.add(task, tag) }

// Awaited records the outcome of OpAwait/OpAwaitTimeout: the value when kind
// is OK, else the kind.
func (r *Recorder) Awaited(task, event, value int, kind ErrKind) {
	if kind == OK {
		r.add(task, fmt.Sprintf("await e%d = %d", event, value))
	} else {
		r.add(task, fmt.Sprintf("await e%d ! %s", event, kind))
	}
}

// Failed records a failed OpYield or OpSleep (success is not logged).
func (r *Recorder) Failed(task int, op OpKind, kind ErrKind) {
	r.add(task, fmt.Sprintf("%s ! %s", strings.ToLower(op.String()), kind))
}

// ResolveIgnored records an OpResolve/OpReject on an event that had already
// fired (the call is ignored).
func (r *Recorder) ResolveIgnored(task, event int) {
	r.add(task, fmt.Sprintf("resolve e%d ignored: already fired", event))
}

// Deferred records an OpDefer cleanup running.
func (r *Recorder) Deferred(task int, tag string) { r.add(task, "defer "+tag) }

// Exit records a task returning; kind is the error that made it return.
func (r *Recorder) Exit(task int, kind ErrKind) {
	if kind == OK {
		r.add(task, "exit")
	} else {
		r.add(task, "exit ! "+kind.String())
	}
}

// MicrotaskRan records a microtask running; failed if it returns its error.
func (r *Recorder) MicrotaskRan(tag string, failed bool) {
	if failed {
		r.lines = append(r.lines, "micro "+tag+" failed")
	} else {
		r.lines = append(r.lines, "micro "+tag)
	}
}

// HandlerError records the microtask error handler receiving err.
func (r *Recorder) HandlerError(err error) {
	var me *MicrotaskError
	if errors.As(err, &me) {
		r.lines = append(r.lines, "handler: microtask "+me.Tag)
	} else {
		r.lines = append(r.lines, "handler: unexpected error: "+err.Error())
	}
}

// Switch records a switch handler call. handler is "handler" for one added
// by OpSwitchHandler and "start handler N" for Program.MainStartHandlers[N].
// kind is the runtimes' shared type, worded "enter", "leave" or "finish".
func (r *Recorder) Switch(task int, handler string, kind switchhook.Kind) {
	r.add(task, handler+" "+kind.String())
}

// General records the outcome of OpAwaitAny/OpAwaitAll: the value when
// kind is OK, else the kind, and the triggered-events set (event indexes, in
// firing order).
func (r *Recorder) General(task int, op Op, value int, kind ErrKind, triggered []int) {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.Kind.String()))
	for _, ev := range op.Events {
		fmt.Fprintf(&b, " e%d", ev)
	}
	if kind == OK {
		fmt.Fprintf(&b, " = %d", value)
	} else {
		fmt.Fprintf(&b, " ! %s", kind)
	}
	b.WriteString(", triggered")
	for _, ev := range triggered {
		fmt.Fprintf(&b, " e%d", ev)
	}
	r.add(task, b.String())
}

// LeaveSpawned records an OpLeaveSpawn handler running at task's Leave,
// just before it spawns task spawned.
func (r *Recorder) LeaveSpawned(task, spawned int) {
	r.add(task, "leave handler spawns "+r.p.Tasks[spawned].Name)
}

// PreRunHandlerName is the handler name to pass to Switch for
// Program.PreRunHandlers[i].
func PreRunHandlerName(i int) string { return fmt.Sprintf("pre-run handler %d", i) }

// StartHandlerName is the handler name to pass to Switch for
// Program.MainStartHandlers[i].
func StartHandlerName(i int) string { return fmt.Sprintf("start handler %d", i) }

// Waker records OpWakerState: task observed the waker of task of.
// s is the runtimes' shared waker status (docs/design.md §1, the waker), worded by its String
// ("NO_STATUS", "WAITING", ...), which the cases spell out.
func (r *Recorder) Waker(task, of int, s wakerstate.Status) {
	r.add(task, fmt.Sprintf("waker %s = %s", r.p.Tasks[of].Name, s))
}
