package sched

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWokenRunsNextYielderRunsLast checks the policy: a fired waiter runs
// before coroutines already queued (LIFO wake-up), and a yielder resumes
// only after every other ready coroutine ran.
func TestWokenRunsNextYielderRunsLast(t *testing.T) {
	r := New()
	var order []string
	r.Run(func() {
		s := r.NewSignal()
		r.Go(func() { order = append(order, "waiter"); s.Wait(); order = append(order, "woken") })
		r.Yield() // the waiter runs and blocks
		r.Go(func() { order = append(order, "a") })
		r.Go(func() { order = append(order, "b") })
		s.Fire() // the waiter goes in front of b and a
		r.Yield()
		order = append(order, "main")
	})
	want := []string{"waiter", "woken", "b", "a", "main"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

func TestSleepWakesInDeadlineOrder(t *testing.T) {
	r := New()
	var order []int
	start := time.Now()
	r.Run(func() {
		for _, ms := range []int{3, 1, 2} {
			r.Go(func() { r.Sleep(time.Duration(ms) * time.Millisecond); order = append(order, ms) })
		}
	})
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("woke in order %v", order)
	}
	if d := time.Since(start); d < 3*time.Millisecond {
		t.Errorf("the 3 ms sleeper returned after %v", d)
	}
}

func TestGateAndFuture(t *testing.T) {
	r := New()
	var got []uint64
	r.Run(func() {
		g, f := r.NewGate(), r.NewFuture()
		for i := range 3 {
			r.Go(func() { g.Wait(); got = append(got, uint64(i)) })
		}
		r.Go(func() { got = append(got, f.Await()) })
		r.Yield()
		g.Open()
		f.Resolve(42)
		r.Yield()
		if v := f.Await(); v != 42 { // the fast path
			t.Errorf("second Await = %d", v)
		}
	})
	// Spawns run LIFO too, so the coroutines started waiting in the order
	// future, 2, 1, 0. The gate wakes its waiters in waiting order (2, 1, 0)
	// and the future's waiter, woken after them, runs first.
	if !slices.Equal(got, []uint64{42, 2, 1, 0}) {
		t.Errorf("got %v, want [42 2 1 0]", got)
	}
}

func TestDeadlockPanicsNamingIt(t *testing.T) {
	r := New()
	defer func() {
		if p, _ := recover().(string); !strings.Contains(p, "deadlock") {
			t.Errorf("panic %q, want one naming a deadlock", p)
		}
	}()
	r.cur = &co{wake: make(chan struct{}, 1)} // as if a coroutine ran
	r.live = 1
	r.NewSignal().Wait()
}

func TestOutsideACoroutinePanics(t *testing.T) {
	defer func() {
		if p, _ := recover().(string); !strings.Contains(p, "outside a running coroutine") {
			t.Errorf("panic %q", p)
		}
	}()
	New().Yield()
}
