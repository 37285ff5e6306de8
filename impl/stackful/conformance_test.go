package stackful

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// panicText runs fn and returns what it panicked with, as text ("" if it
// did not panic).
func panicText(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

// TestAwaitNilNamed: Await(nil) is a named misuse, not a nil dereference.
func TestAwaitNilNamed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var msg string
		err := s.Run(func() { msg = panicText(func() { Await(nil) }) })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg, "Await on a nil *Event") {
			t.Errorf("Await(nil) panicked with %q, want a message naming the nil event", msg)
		}
	})
}

// TestViaSchedulerEveryHandoff: with Options.ViaScheduler every switch has
// the scheduler's context at one end, a finishing coroutine's too (P ends
// after waking main, which has started: no takeover is possible).
func TestViaSchedulerEveryHandoff(t *testing.T) {
	s, err := New(Options{Backend: Asm, ViaScheduler: true})
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	err = s.Run(func() {
		ping, pong := NewEvent(), NewEvent()
		Go(func() {
			for i := 0; i < 3; i++ {
				Await(ping)
				ping.Reset()
				pong.Resolve(i)
			}
		})
		for i := 0; i < 3; i++ {
			ping.Resolve(i)
			Await(pong)
			pong.Reset()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Switches == 0 || st.Switches != st.SchedulerSwitches {
		t.Errorf("ViaScheduler: %d switches, %d through the scheduler: want every switch through it", st.Switches, st.SchedulerSwitches)
	}
}

// TestForeignGoroutineNamed: a blocking call (and a spawn) made from a plain
// goroutine while a coroutine runs panics naming the call and the rule,
// instead of running the scheduler on that goroutine.
func TestForeignGoroutineNamed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		msgs := map[string]string{}
		err := s.Run(func() {
			ev := NewEvent()
			for name, call := range map[string]func(){
				"Yield": func() { Yield() },
				"Await": func() { Await(ev) },
				"Go":    func() { Go(func() {}) },
			} {
				done := make(chan string)
				go func() { done <- panicText(call) }()
				msgs[name] = <-done // the coroutine blocks its goroutine: it is still the current one
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for name, msg := range msgs {
			if !strings.Contains(msg, name+" called from a goroutine that is not running the Scheduler") {
				t.Errorf("%s from a foreign goroutine panicked with %q, want a message naming the call and the rule", name, msg)
			}
		}
	})
}

// TestGoexitCoro: runtime.Goexit in a coro coroutine fails Run with an
// error naming it; Run returns, and the other coroutines' cleanup runs.
// (Without the fix Goexit ends the goroutine that called Run: here the test
// goroutine, which fails the test.)
func TestGoexitCoro(t *testing.T) {
	s := newSched(t, Coro)
	cleaned, deferred := false, false
	err := s.Run(func() {
		Go(func() {
			defer func() { cleaned = true }()
			Sleep(time.Hour) // cancelled by the shutdown the Goexit starts
		})
		Yield()
		defer func() { deferred = true }()
		runtime.Goexit()
	})
	if !errors.Is(err, ErrGoexit) || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Errorf("Run = %v, want an error wrapping ErrGoexit", err)
	}
	if !cleaned || !deferred {
		t.Errorf("cleanup ran: other coroutine %v, the coroutine's own defer %v; want both", cleaned, deferred)
	}
	if err := s.Run(func() { Yield() }); err != nil {
		t.Errorf("the next Run: %v", err)
	}
}
