package stackless

import "fmt"

// SwitchEvent says why a switch handler is called.
type SwitchEvent uint8

const (
	// Enter: the task is about to be resumed (it gets control).
	Enter SwitchEvent = iota
	// Leave: the task gave control up and waits or has yielded. A fast-path
	// wait (the awaited event had already fired) is not a leave: the task is
	// resumed at once.
	Leave
	// Finish: the task finished (Done, Fail, or finalised at shutdown). It is
	// the last call a handler gets.
	Finish
)

func (e SwitchEvent) String() string {
	switch e {
	case Enter:
		return "enter"
	case Leave:
		return "leave"
	case Finish:
		return "finish"
	}
	return fmt.Sprintf("SwitchEvent(%d)", uint8(e))
}

// SwitchHandler is a hook bound to one task (seed: switch handler). Its
// return value is its lifetime: true keeps it, false removes it.
type SwitchHandler func(t Task, ev SwitchEvent) bool

// AddSwitchHandler installs h on t (before or after Spawn). Handlers run in
// installation order; a task's handlers are dropped when it finishes. The
// first handler of a task allocates its handler list: tasks that use none
// pay only the nil pointer in their header.
func (s *Scheduler) AddSwitchHandler(t Task, h SwitchHandler) {
	co := t.coro()
	if co.handlers == nil {
		co.handlers = new([]SwitchHandler)
	}
	*co.handlers = append(*co.handlers, h)
}

// AddStartHandler registers a main-task start handler (seed: main-coroutine
// start handlers): RunMain copies every registered handler into its main
// task, which calls them with Enter when it starts. Register before RunMain.
func (s *Scheduler) AddStartHandler(h SwitchHandler) {
	s.startHandlers = append(s.startHandlers, h)
}

// callHandlers calls co's handlers for ev, removing those that return false.
func callHandlers(co *Coro, ev SwitchEvent) {
	hs := *co.handlers
	keep := hs[:0]
	for _, h := range hs {
		if h(co.task, ev) {
			keep = append(keep, h)
		}
	}
	// A handler may have added handlers while running; they were appended to
	// *co.handlers beyond len(hs) and must survive.
	if added := (*co.handlers)[len(hs):]; len(added) > 0 {
		keep = append(keep, added...)
	}
	if len(keep) < len(hs) {
		clear(hs[len(keep):]) // drop removed handlers for the GC
	}
	*co.handlers = keep
}
