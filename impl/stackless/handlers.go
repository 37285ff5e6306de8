package stackless

import "github.com/corobench/corobench/internal/switchhook"

// SwitchEvent says why a switch handler is called (the definition
// impl/stackful shares, as its SwitchKind).
type SwitchEvent = switchhook.Kind

const (
	// Enter: the task is about to be resumed (it gets control).
	Enter = switchhook.Enter
	// Leave: the task gives control up: it waits, or yields with other
	// tasks queued. It is called before the scheduler picks the next task,
	// so a High task the handler spawns runs next. A fast-path wait (the
	// awaited event had already fired) is not a leave: the task is resumed
	// at once; a Yield with nobody else queued calls Leave only once another
	// task really takes control.
	Leave = switchhook.Leave
	// Finish: the task finished (Done, Fail, or finalised at shutdown). It is
	// the last call a handler gets.
	Finish = switchhook.Finish
)

// SwitchHandler is a hook bound to one task (reference design: switch handler). Its
// return value is its lifetime: true keeps it, false removes it.
type SwitchHandler func(t Task, ev SwitchEvent) bool

// AddSwitchHandler installs h on t (before or after Spawn). Handlers run in
// installation order; one installed by a handler is first called at the next
// switch; a task's handlers are dropped when it finishes. The first handler
// of a task allocates its handler list: tasks that use none pay only the nil
// pointer in their header.
func (s *Scheduler) AddSwitchHandler(t Task, h SwitchHandler) {
	co := t.coro()
	if co.handlers == nil {
		co.handlers = new([]SwitchHandler)
	}
	*co.handlers = append(*co.handlers, h)
}

// AddCurrentSwitchHandler is the reference design's form of adding a
// switch handler: to the current task or, if the scheduler has not started,
// to the main task (docs/design.md §1, switch handlers). Called before Run,
// it binds h to the main task of the next RunMain, which calls it with
// Enter when it starts (once: unlike AddStartHandler it is not kept for
// later runs). Called during Run, it binds h to the task being resumed (or,
// from a microtask or reactor callback, the task that ran last), as
// Context.AddSwitchHandler does.
func (s *Scheduler) AddCurrentSwitchHandler(h SwitchHandler) {
	if h == nil {
		panic("stackless: AddCurrentSwitchHandler(nil)")
	}
	if !s.running || s.ctx.cur == nil {
		s.preRun = append(s.preRun, h)
		return
	}
	s.AddSwitchHandler(s.ctx.cur.task, h)
}

// AddStartHandler registers a main-task start handler (reference design: main-coroutine
// start handlers): RunMain copies every registered handler into its main
// task, which calls them with Enter when it starts. Register before RunMain.
func (s *Scheduler) AddStartHandler(h SwitchHandler) {
	s.startHandlers = append(s.startHandlers, h)
}

// callHandlers calls co's handlers for ev, removing those that return false.
// It stays out of line: the call sites are on the resume path, taken only
// by tasks with handlers, and inlining the generic call there costs the
// handler-less resume (register pressure in the run loop).
//
//go:noinline
func callHandlers(co *Coro, ev SwitchEvent) { switchhook.Fire(co.handlers, co.task, ev) }
