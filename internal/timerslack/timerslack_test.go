package timerslack

import (
	"runtime"
	"testing"
)

func TestLowerRestore(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Current()
	if err != nil {
		t.Skip("PR_GET_TIMERSLACK: ", err)
	}
	prev, err := Lower()
	if err != nil {
		t.Fatalf("Lower: %v", err)
	}
	if prev != before {
		t.Fatalf("Lower returned %d, the slack was %d", prev, before)
	}
	if now, _ := Current(); now != Slack {
		t.Fatalf("slack after Lower = %d ns, want %d", now, Slack)
	}
	Restore(prev)
	if now, _ := Current(); now != before {
		t.Fatalf("slack after Restore = %d ns, want %d", now, before)
	}
}
