package bodies

import (
	"testing"

	"github.com/corobench/corobench/scenarios"
)

// spawnSpy is a row's Blocking runtime that records, for every coroutine
// started, whether the body's timed region was running at the time.
type spawnSpy struct {
	scenarios.Blocking
	env            *scenarios.Env
	timed, untimed int
}

func (s *spawnSpy) Go(f func()) {
	if s.env.Timing() {
		s.timed++
	} else {
		s.untimed++
	}
	s.Blocking.Go(f)
}

// NewShutdownScope forwards the row's graceful shutdown, which the spy's
// embedded interface alone would hide from the shutdown body.
func (s *spawnSpy) NewShutdownScope() scenarios.ShutdownScope {
	return s.Blocking.(scenarios.Shutdowns).NewShutdownScope()
}

// runSpied runs body on row through a spawnSpy, with the timer off when
// the body starts (the driver starts it, and a body that resets it after
// its set-up discards what came before; here anything timed before the
// body's own start shows), and returns the spy and the outcome.
func runSpied(t *testing.T, row scenarios.Row, sc *scenarios.Scenario, env *scenarios.Env) (*spawnSpy, scenarios.Outcome) {
	t.Helper()
	withRowGOMAXPROCS(t, row)
	var spy *spawnSpy
	var out scenarios.Outcome
	var bodyErr error
	err := row.RunBlocking(scenarios.CellInfo{Scenario: sc.Name, Params: env.Params}, func(rt scenarios.Blocking) {
		spy = &spawnSpy{Blocking: rt, env: env}
		out, bodyErr = sc.Blocking(spy, env)
		env.StopTimer()
	})
	if _, ok := scenarios.IsNotSupported(err); ok {
		t.Skip(err)
	}
	if err != nil || bodyErr != nil {
		t.Fatal(err, bodyErr)
	}
	if want := sc.Want(env); out.Checksum != want {
		t.Fatalf("checksum %#x, want %#x", out.Checksum, want)
	}
	return spy, out
}

// TestTimerSpawnsAreNotTimed: every one of the n coroutines is started
// before the body starts the timed region, so the region holds sleeps
// and wakes only.
func TestTimerSpawnsAreNotTimed(t *testing.T) {
	for _, name := range []string{"goroutine-single", "goroutine-multi", "stackful-asm", "stackful-coro"} {
		t.Run(name, func(t *testing.T) {
			env := &scenarios.Env{N: 2, Params: map[string]string{"n": "50"}}
			spy, out := runSpied(t, scenarios.Row(name), Timer, env)
			if spy.timed != 0 || spy.untimed != 50 {
				t.Errorf("%d coroutines started inside the timed region and %d outside; want 0 and 50", spy.timed, spy.untimed)
			}
			if want := timerSamples(50, timerRunWindows(2)); out.Ops != int64(want) {
				t.Errorf("ops %d, want the %d planned wakes", out.Ops, want)
			}
			if env.Elapsed() < 2*timerWindow {
				t.Errorf("timed region %v, shorter than two windows of %v: the body did not time its wakes", env.Elapsed(), timerWindow)
			}
		})
	}
}

// TestTimerStateMachineTimesTheWakesOnly: the state machine leaves the
// timer off until its starter runs (after the spawns) and stops it after
// the run; a run of 3 tasks × 2 windows (and the lead-in) wakes as often
// as the plan says, with the right checksum.
func TestTimerStateMachineTimesTheWakesOnly(t *testing.T) {
	env := &scenarios.Env{N: 2, Params: map[string]string{"n": "3"}}
	env.ResetTimer()
	out, err := timerStateMachine(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := timerSamples(3, timerRunWindows(2)); out.Ops != int64(want) || out.Checksum != timerWant(env) {
		t.Fatalf("ops %d checksum %#x; want %d and %#x", out.Ops, out.Checksum, want, timerWant(env))
	}
	if env.Timing() {
		t.Error("the timed region is still running after the body")
	}
	// Two windows of at least 10 ms each ran in the region.
	if env.Elapsed() < 2*timerWindow {
		t.Errorf("timed region %v, shorter than two windows of %v: the starter did not restart it", env.Elapsed(), timerWindow)
	}
}
