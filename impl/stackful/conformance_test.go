package stackful

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/selfexec"
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
				if name == "Go" && b == Coro {
					continue // coro checks only the blocking calls (see scheduler)
				}
				done := make(chan string)
				go func() { done <- panicText(call) }()
				msgs[name] = <-done // the coroutine blocks its goroutine: it is still the current one
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatal("no call was tried")
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

// TestCrashesExplainedInProcess: with ExplainCrashes, the fatal errors the
// asm backend cannot turn into Run errors explain themselves in the
// process's own stderr: a collection started by code in a coroutine, and a
// fiber stack overflow naming Options.Stacks.StackSize.
func TestCrashesExplainedInProcess(t *testing.T) {
	needAsm(t)
	switch os.Getenv(childEnv) {
	case "":
	case "gc-explained", "overflow-explained":
		if err := ExplainCrashes(); err != nil {
			fmt.Println("MONITOR ERROR:", err)
			os.Exit(0)
		}
		s := newSched(t, Asm, func(o *Options) { o.Stacks.StackSize = 16 << 10 })
		s.Run(func() {
			if os.Getenv(childEnv) == "gc-explained" {
				runtime.GC()
			} else {
				recurse(1 << 20)
			}
		})
		fmt.Println("child survived")
		os.Exit(0)
	default:
		return
	}
	for _, c := range []struct{ mode, want string }{
		{"gc-explained", "runtime.GC"},
		{"overflow-explained", "stackful.Options.Stacks.StackSize"},
	} {
		// GODEBUG=gcshrinkstackoff=0: the default a user's program runs with
		// (the collection then tries to shrink the fiber stack: fatal).
		out, _ := selfexec.CombinedOutput([]string{"-test.run=^TestCrashesExplainedInProcess$", "-test.v"},
			childEnv+"="+c.mode, "GODEBUG=gcshrinkstackoff=0")
		if strings.Contains(out, "MONITOR ERROR:") {
			t.Skipf("the crash monitor cannot start here: %s", tail(out, 500))
		}
		if !strings.Contains(out, "fatal error: stack size not a power of 2") {
			t.Errorf("%s: want the runtime's fatal error; output:\n%s", c.mode, tail(out, 2000))
		}
		i := strings.Index(out, fiber.ExplainedPrefix)
		if i < 0 || !strings.Contains(out[i:], c.want) {
			t.Errorf("%s: stderr has no explanation naming %q; output:\n%s", c.mode, c.want, tail(out, 3000))
		}
	}
}
