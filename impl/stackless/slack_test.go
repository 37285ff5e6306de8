package stackless

import (
	"runtime"
	"testing"
	"time"

	"github.com/corobench/corobench/internal/timerslack"
)

// slackProbe sleeps once (Run blocks in the reactor) and reads the thread's
// timer slack when it wakes.
type slackProbe struct {
	Coro
	woke   bool
	during uintptr
}

func (t *slackProbe) Resume(c *Context) Step {
	if !t.woke {
		t.woke = true
		return c.Sleep(time.Millisecond)
	}
	t.during, _ = timerslack.Current()
	return c.Done()
}

// TestRunLowersTimerSlack: a Run's blocking waits run with 1 ns timer slack,
// the thread's slack is restored when Run returns, and WaitInfo reports it.
func TestRunLowersTimerSlack(t *testing.T) {
	s := New()
	defer s.Close()
	if s.WaitInfo().Wait != "epoll_pwait2" {
		t.Skip("the loop uses the timerfd wait: slack does not apply")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := timerslack.Current()
	if err != nil {
		t.Skip("PR_GET_TIMERSLACK: ", err)
	}
	if before == timerslack.Slack {
		t.Skip("the thread's slack is already 1 ns")
	}
	if s.WaitInfo().SlackSet {
		t.Fatal("WaitInfo reports the slack lowered before any Run")
	}
	p := &slackProbe{}
	if err := s.Spawn(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if after, _ := timerslack.Current(); after != before {
		t.Fatalf("slack after Run = %d ns, want it restored to %d", after, before)
	}
	if wi := s.WaitInfo(); p.during != timerslack.Slack || !wi.SlackSet || wi.Slack != timerslack.Slack {
		t.Fatalf("slack during Run %d ns, WaitInfo %+v; want 1 ns, SlackSet", p.during, wi)
	}
}
