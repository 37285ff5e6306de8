package stackful

import (
	"time"

	"github.com/corobench/corobench/reactor"
)

// Trigger wakes a coroutine from another goroutine or thread (a reactor
// trigger: eventfd). Fire may be called from anywhere, any number of times;
// fires between two waits coalesce into one wakeup, and a fire while nobody
// waits is remembered for the next Wait. Wait must be called from a
// coroutine of the scheduler that created the trigger, by one coroutine at a
// time.
type Trigger struct {
	t  *reactor.Trigger
	ev Event // resolved by the trigger's callback, in the loop
}

// NewTrigger returns a trigger on the running scheduler's reactor.
func NewTrigger() *Trigger {
	s := scheduler("NewTrigger")
	tr := &Trigger{}
	tr.t = s.loop.NewTrigger(func() { tr.ev.Resolve(nil) })
	return tr
}

// Fire wakes the waiter (or the next one). Safe from any goroutine.
func (tr *Trigger) Fire() { tr.t.Signal() }

// Wait suspends the coroutine until the trigger fires, failing with
// ErrTimeout after timeout (none if negative) or with a cancellation. While
// a coroutine waits the trigger is an active reactor event, so the
// scheduler blocks in the reactor instead of reporting a deadlock.
func (tr *Trigger) Wait(timeout time.Duration) error {
	tr.ev.Reset()
	tr.t.Start()
	_, err := AwaitWith(&tr.ev, nil, timeout)
	tr.t.Stop()
	return err
}

// Close releases the trigger; it must not be used afterwards.
func (tr *Trigger) Close() { tr.t.Close() }
