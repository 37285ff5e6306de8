package stackful

import (
	"runtime"
	"testing"
	"time"

	"github.com/corobench/corobench/internal/timerslack"
)

// TestRunLowersTimerSlack: on asm a Run's blocking waits run with 1 ns timer
// slack (read inside the run, after a blocking Sleep), the thread's slack is
// restored when Run returns, and WaitInfo reports it; coro leaves the slack
// alone and WaitInfo says so.
func TestRunLowersTimerSlack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		if s.loop.WaitInfo().Wait != "epoll_pwait2" {
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
		var during uintptr
		err = s.Run(func() {
			_ = Sleep(time.Millisecond) // nothing else runs: Run blocks in the reactor
			during, _ = timerslack.Current()
		})
		if err != nil {
			t.Fatal(err)
		}
		after, _ := timerslack.Current()
		if after != before {
			t.Fatalf("slack after Run = %d ns, want it restored to %d", after, before)
		}
		wi := s.WaitInfo()
		switch b {
		case Asm:
			if during != timerslack.Slack || !wi.SlackSet || wi.Slack != timerslack.Slack {
				t.Fatalf("asm: slack during Run %d ns, WaitInfo %+v; want 1 ns, SlackSet", during, wi)
			}
		default:
			if during != before || wi.SlackSet {
				t.Fatalf("%v: slack during Run %d ns (want %d, untouched), WaitInfo %+v", b, during, before, wi)
			}
		}
	})
}
