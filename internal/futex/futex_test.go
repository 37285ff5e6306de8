package futex

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitReturnsWhenTheWordDiffers: no sleep when the word no longer holds
// the value the caller read (the case that keeps a wakeup from being lost).
func TestWaitReturnsWhenTheWordDiffers(t *testing.T) {
	var w atomic.Uint32
	w.Store(2)
	if err := Wait(&w, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// TestWaitTimesOut: a wait nobody wakes ends with ErrTimeout.
func TestWaitTimesOut(t *testing.T) {
	var w atomic.Uint32
	if err := Wait(&w, 0, time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait on an unchanged word: %v, want ErrTimeout", err)
	}
}

// TestWakeEndsAWait: a thread sleeping on the word is woken by a store and
// Wake, and sees the store. The sleeper's timeout only turns a lost wakeup
// into a failure instead of a hang.
func TestWakeEndsAWait(t *testing.T) {
	var w atomic.Uint32
	got := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for w.Load() == 0 {
			if err := Wait(&w, 0, 10*time.Second); err != nil {
				got <- err
				return
			}
		}
		got <- nil
	}()
	w.Store(1)
	if err := Wake(&w, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the sleeper: %v", err)
	}
}
