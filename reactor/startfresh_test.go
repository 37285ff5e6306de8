package reactor

import (
	"slices"
	"strings"
	"testing"
)

// TestStartFreshCountsFromAReadingAtTheCall: the cached time is stale (the
// clock moved on without a reading), so Start would count from it and fire
// early by the staleness; StartFresh reads the clock in the call, counts
// from that reading and leaves it as Now().
func TestStartFreshCountsFromAReadingAtTheCall(t *testing.T) {
	l, c := newFakeLoop(t)
	var log []int
	w := &batchWaiter{id: 1, log: &log}
	w.node.Init(l, w)
	c.t += 500 // the clock moves; l.Now() is still the old reading
	w.node.StartFresh(100)
	if l.Now() != c.t {
		t.Fatalf("Now() after StartFresh = %d, want the reading %d", l.Now(), c.t)
	}
	if got, want := w.node.Deadline(), c.t+100; got != want {
		t.Fatalf("Deadline() = %d, want the reading + 100 = %d", got, want)
	}
	if !w.node.Active() || l.Active() != 1 {
		t.Fatalf("Active() = %v, loop Active() = %d, want true, 1", w.node.Active(), l.Active())
	}
	checkHeap(t, &l.timers)
	called := c.t
	c.t = called + 99
	tick(t, l, true)
	if len(log) != 0 {
		t.Fatalf("fired at the call + 99, before its deadline (call + 100)")
	}
	c.t++
	tick(t, l, true)
	if !slices.Equal(log, []int{1}) || w.node.Active() || l.Active() != 0 {
		t.Fatalf("at the deadline: fired %v, Active() %v, loop Active() %d; want [1], false, 0", log, w.node.Active(), l.Active())
	}
}

// TestStartFreshRearmsOrderAndPending: StartFresh on an armed node moves it
// (one entry, counted once), a negative delay counts as zero, nodes with
// equal deadlines fire in start order across Start, StartAt and
// StartFresh, and the reading arms the nodes StartFromNextReading left
// pending (they count as started at it, before the node StartFresh arms).
func TestStartFreshRearmsOrderAndPending(t *testing.T) {
	l, c := newFakeLoop(t)
	var log []int
	ws := make([]*batchWaiter, 5)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	ws[0].node.StartFresh(1000) // armed; re-armed below
	c.t += 10
	ws[1].node.StartAt(c.t + 50)        // same deadline as the StartFresh below, started first
	ws[2].node.StartFromNextReading(50) // pending: armed by the next reading, before ws[0]
	ws[0].node.StartFresh(50)           // re-arm: moves behind ws[1] and ws[2]
	ws[3].node.StartFresh(-5)           // counts as zero: due at the reading
	if l.Active() != 4 {
		t.Fatalf("loop Active() = %d, want 4 (a re-armed node counts once)", l.Active())
	}
	if len(l.timers.a) != 4 {
		t.Fatalf("heap holds %d entries, want 4", len(l.timers.a))
	}
	checkHeap(t, &l.timers)
	if got := ws[3].node.Deadline(); got != c.t {
		t.Fatalf("StartFresh(-5): Deadline() = %d, want the reading %d", got, c.t)
	}
	tick(t, l, true)
	if !slices.Equal(log, []int{3}) {
		t.Fatalf("at the reading: fired %v, want [3]", log)
	}
	c.t += 50
	tick(t, l, true)
	if !slices.Equal(log, []int{3, 1, 2, 0}) {
		t.Fatalf("fired %v, want [3 1 2 0] (equal deadlines in start order)", log)
	}
	if l.Active() != 0 || ws[4].node.Active() {
		t.Fatalf("loop Active() = %d after every node fired", l.Active())
	}
}

// TestStartFreshMisuse: before Init and after Close it panics and names the
// misuse, as Start does.
func TestStartFreshMisuse(t *testing.T) {
	expectPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, want) {
				t.Fatalf("%s: panic %v, want one naming %q", what, r, want)
			}
		}()
		f()
	}
	var n TimerNode
	expectPanic("before Init", "before Init", func() { n.StartFresh(1) })
	l, _ := newFakeLoop(t)
	w := &batchWaiter{log: new([]int)}
	w.node.Init(l, w)
	l.Close()
	expectPanic("after Close", "after Loop.Close", func() { w.node.StartFresh(1) })
}
