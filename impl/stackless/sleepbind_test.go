package stackless

import (
	"testing"
	"time"
)

// TestSleepRebindsOnAnotherLoop: a task's timer node is bound to a loop at
// its first timed wait and kept while it stays on that loop (addTimer skips
// Init then); the same task struct, finished and spawned again on a second
// scheduler with a loop of its own, sleeps on that loop (its node armed
// there, not in the first, closed loop) and wakes no earlier than its
// duration.
func TestSleepRebindsOnAnotherLoop(t *testing.T) {
	var out []string
	task := &sleeper{d: 200 * time.Microsecond, name: "x", out: &out}
	for round := range 2 {
		s := New()
		task.state = 0
		if err := s.Spawn(task); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.Run(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := time.Since(start); got < task.d {
			t.Fatalf("round %d: Run returned after %v, before the sleep's %v", round, got, task.d)
		}
		if got := task.waker.timer.Loop(); got != s.r.loop {
			t.Fatalf("round %d: the node is bound to loop %p, want the scheduler's %p", round, got, s.r.loop)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != 2 {
		t.Fatalf("woke %d times, want 2", len(out))
	}
}
