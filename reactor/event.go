package reactor

import "runtime"

// eventState is the life cycle shared by every event type:
//
//	idle --Start--> active --fire or Stop--> idle --Close--> closed
//
// Only active events count in Loop.Active. Every event is one-shot: it fires
// at most once per Start and is idle again when its callback runs, so a
// callback may Start it again.
type eventState uint8

const (
	stateIdle eventState = iota
	stateActive
	stateClosed
)

// event is embedded in every event type. The callback is stored at creation
// so that Start, Stop and firing never allocate.
type event struct {
	loop   *Loop
	cb     func()
	state  eventState
	queued bool // in loop.ready; fireQueued clears it
}

func newEvent(l *Loop, cb func(), kind string) event {
	if cb == nil {
		panic("reactor: New" + kind + " needs a non-nil callback")
	}
	return event{loop: l, cb: cb}
}

// activate moves idle to active and reports whether it did; it panics on a
// closed event, which is a use-after-release bug in the caller.
func (e *event) activate(kind string) bool {
	switch e.state {
	case stateActive:
		return false
	case stateClosed:
		panic("reactor: " + kind + ".Start after Close: create a new event instead")
	}
	if e.loop.closed {
		panic("reactor: " + kind + ".Start after Loop.Close")
	}
	e.state = stateActive
	e.loop.active++
	return true
}

// deactivate moves active to idle; idle and closed stay as they are.
func (e *event) deactivate() {
	if e.state == stateActive {
		e.state = stateIdle
		e.loop.active--
	}
}

// release moves any state to closed.
func (e *event) release() {
	e.deactivate()
	e.state = stateClosed
}

// fire deactivates the event and runs its callback.
func (e *event) fire() {
	e.deactivate()
	e.loop.stats.Fired++
	e.cb()
}

// Active reports whether the event is started and has not fired since.
func (e *event) Active() bool { return e.state == stateActive }

func osYield() { runtime.Gosched() }
