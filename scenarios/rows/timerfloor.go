package rows

import (
	"fmt"
	"sync"
	"time"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
)

// The timer-floor facts of our runtimes' rows come from the runtimes
// themselves: a Run that blocks once (a 1 µs sleep), then the scheduler's
// WaitInfo. A Run may change its thread's wait (the asm and stackless runtimes
// lower the timer slack to 1 ns at their first blocking wait; coro cannot), so
// a loop made on the side would name the wrong slack.

// stackfulTimerFloor is the timer floor of a stackful row with backend b.
func stackfulTimerFloor(b stackful.Backend) func() string {
	return sync.OnceValue(func() string {
		s, err := stackful.New(stackful.Options{Backend: b})
		if err != nil {
			return reactorTimerFloor() + " (the runtime itself is unavailable: " + err.Error() + ")"
		}
		defer s.Close()
		if err := s.Run(func() { _ = stackful.Sleep(time.Microsecond) }); err != nil {
			return reactorTimerFloor() + " (the probe Run failed: " + err.Error() + ")"
		}
		return waitInfoText(s.WaitInfo())
	})
}

// stacklessTimerFloor is the stackless row's timer floor.
var stacklessTimerFloor = sync.OnceValue(func() string {
	s := stackless.New()
	defer s.Close()
	if err := s.Spawn(&sleepOnce{}); err != nil {
		return reactorTimerFloor() + " (the probe could not spawn: " + err.Error() + ")"
	}
	if err := s.Run(); err != nil {
		return reactorTimerFloor() + " (the probe Run failed: " + err.Error() + ")"
	}
	return waitInfoText(s.WaitInfo())
})

// sleepOnce is a task that sleeps 1 µs once.
type sleepOnce struct {
	stackless.Coro
	slept bool
}

func (t *sleepOnce) Resume(c *stackless.Context) stackless.Step {
	if !t.slept {
		t.slept = true
		return c.Sleep(time.Microsecond)
	}
	return c.Done()
}

// waitInfoText is a WaitInfo in the timer-floor line's words (as
// reactor.Loop.WaitMethod writes a loop's).
func waitInfoText(wi reactor.WaitInfo) string {
	s := "clock=" + wi.Clock + " wait=" + wi.Wait
	if wi.Reason != "" {
		s += " (" + wi.Reason + ")"
	}
	if wi.Wait == "epoll_pwait2" {
		s += fmt.Sprintf(" timerslack=%dns", wi.Slack.Nanoseconds())
		if wi.SlackSet {
			s += " (lowered by Run)"
		}
	}
	return s
}
