package reactor

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Under Options.HoldP a blocking wait keeps the goroutine's P, so on one P
// nothing else runs until Go preempts the loop's goroutine: sysmon's signal
// must interrupt the wait (EINTR) and the retry must pass a preemption
// point before it waits again (poll's retry calls Loop.wait, which is not
// inlined, so its prologue is one). If either failed, the goroutine below
// (which also runs a GC: a stop-the-world must preempt the waiting loop
// the same way) would never run, its Signal would never come, and the
// test would hang until the test binary's timeout. It runs every blocking
// wait: no deadline, and a deadline an hour away, under each wait method.
func TestHoldPWaitLetsTheSamePRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	waitMethods(t, func(t *testing.T, o Options) {
		for _, deadline := range []bool{false, true} {
			o.HoldP = true
			l := newLoop(t, o)
			if !l.WaitInfo().HoldP || !strings.HasSuffix(l.WaitMethod(), " hold-P") {
				t.Fatalf("HoldP loop: WaitInfo().HoldP = %v, WaitMethod() = %q, want true and a \" hold-P\" suffix",
					l.WaitInfo().HoldP, l.WaitMethod())
			}
			if deadline {
				far := l.NewTimer(func() { t.Error("the hour-long timer fired") })
				far.Start(time.Hour)
				defer far.Stop()
			}
			fired, ran := false, make(chan struct{})
			tr := l.NewTrigger(func() { fired = true })
			tr.Start()
			go func() {
				runtime.GC()
				close(ran)
				tr.Signal()
			}()
			tickUntil(t, l, func() bool { return fired })
			<-ran
		}
	})
}

// Without HoldP the loop says nothing of it: the default keeps Go's
// entersyscall/exitsyscall around blocking waits.
func TestHoldPOffByDefault(t *testing.T) {
	l := newLoop(t, Options{})
	if l.WaitInfo().HoldP || strings.Contains(l.WaitMethod(), "hold-P") {
		t.Fatalf("default loop: WaitInfo().HoldP = %v, WaitMethod() = %q, want false and no hold-P", l.WaitInfo().HoldP, l.WaitMethod())
	}
}
