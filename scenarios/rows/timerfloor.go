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
// themselves: a Run that blocks once (1 ms sleeps until it has), then the scheduler's
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
		if err := s.Run(func() {
			for range probeSleeps {
				if blockedOnce(s.WaitInfo()) {
					return
				}
				_ = stackful.Sleep(probeSleep)
			}
		}); err != nil {
			return reactorTimerFloor() + " (the probe Run failed: " + err.Error() + ")"
		}
		return waitInfoText(s.WaitInfo())
	})
}

// stacklessTimerFloor is the stackless row's timer floor.
var stacklessTimerFloor = sync.OnceValue(func() string {
	s := stackless.New()
	defer s.Close()
	if err := s.Spawn(&sleepOnce{s: s}); err != nil {
		return reactorTimerFloor() + " (the probe could not spawn: " + err.Error() + ")"
	}
	if err := s.Run(); err != nil {
		return reactorTimerFloor() + " (the probe Run failed: " + err.Error() + ")"
	}
	return waitInfoText(s.WaitInfo())
})

// The probe Runs sleep probeSleep at a time, up to probeSleeps times,
// until the Run has made a blocking wait (blockedOnce), since Run lowers
// the slack at its first one. A single short sleep is not enough: on a
// loaded machine (or under the race detector) its deadline can pass before
// the scheduler gets to wait, so the Run never blocks and the line would
// name the default slack although every real Run lowers it.
const (
	probeSleep  = time.Millisecond
	probeSleeps = 20
)

// blockedOnce reports whether the probe can stop: the Run has lowered the
// slack, or the wait is not epoll_pwait2, which has no slack to lower.
func blockedOnce(wi reactor.WaitInfo) bool {
	return wi.SlackSet || wi.Wait != "epoll_pwait2"
}

// sleepOnce is the stackless probe task: it sleeps probeSleep until its
// Run has blocked once (blockedOnce), at most probeSleeps times.
type sleepOnce struct {
	stackless.Coro
	s     *stackless.Scheduler
	slept int
}

func (t *sleepOnce) Resume(c *stackless.Context) stackless.Step {
	if t.slept < probeSleeps && !blockedOnce(t.s.WaitInfo()) {
		t.slept++
		return c.Sleep(probeSleep)
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
	if wi.Coalesce > 0 {
		s += fmt.Sprintf(" coalesce=%dns", wi.Coalesce.Nanoseconds())
	}
	if wi.HoldP {
		s += " hold-P" // reactor.Options.HoldP: blocking waits keep the P
	}
	return s
}
