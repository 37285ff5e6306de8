package reactor

import (
	"slices"
	"testing"
	"time"
)

// TestFarTimersAtTheRealWidth: with the shipped bucket width, timers due
// past the next bucket boundary wait in the ring (not the heap), timers
// past the ring's span go to the heap, Stop and re-arm take a node out of
// the ring, the blocking wait's deadline is the earliest timer even when
// only the ring holds timers, everything fires in (deadline, start order),
// and Close leaves ring nodes idle.
func TestFarTimersAtTheRealWidth(t *testing.T) {
	l, c := newFakeLoop(t)
	width := int64(1) << farShift
	span := width * farBuckets
	var log []int
	ws := make([]*batchWaiter, 8)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	base := c.t
	ws[0].node.StartAt(base + 3*width + 5)  // ring
	ws[1].node.StartAt(base + 3*width + 5)  // ring, same deadline, started later
	ws[2].node.StartAt(base + 2*width)      // ring
	ws[3].node.StartAt(base + span + width) // past the span: heap
	ws[4].node.StartAt(base + 5*width)      // ring, stopped below
	ws[5].node.StartAt(base + 6*width)      // ring, re-armed below
	if l.far.n != 5 || len(l.timers.a) != 1 {
		t.Fatalf("ring holds %d and heap %d, want 5 and 1", l.far.n, len(l.timers.a))
	}
	checkFar(t, l)
	ws[4].node.Stop()
	ws[5].node.StartAt(base + 3*width + 5) // same deadline as 0 and 1, started last
	checkFar(t, l)
	if l.Active() != 5 || ws[4].node.Active() || !ws[5].node.Active() {
		t.Fatalf("Active() = %d (want 5), stopped node active %v, re-armed node active %v", l.Active(), ws[4].node.Active(), ws[5].node.Active())
	}
	// The blocking wait's deadline: the ring's earliest, though the heap
	// holds only a later timer.
	l.farEnsureMin()
	if got := l.wakeDeadline(); got != base+2*width {
		t.Fatalf("wait deadline %d, want the earliest timer's %d", got, base+2*width)
	}
	checkHeap(t, &l.timers)
	checkFar(t, l)
	c.t = base + 3*width + 4
	tick(t, l, true)
	if !slices.Equal(log, []int{2}) {
		t.Fatalf("fired %v, want [2]", log)
	}
	c.t++
	tick(t, l, true)
	if !slices.Equal(log, []int{2, 0, 1, 5}) {
		t.Fatalf("fired %v, want [2 0 1 5] (equal deadlines in start order)", log)
	}
	ws[6].node.StartAt(c.t + 4*width) // into the ring again
	if l.far.n != 1 {
		t.Fatalf("ring holds %d, want 1", l.far.n)
	}
	l.Close()
	if ws[6].node.Active() || ws[3].node.Active() {
		t.Fatalf("after Close: ring node active %v, heap node active %v", ws[6].node.Active(), ws[3].node.Active())
	}
	ws[6].node.Stop() // a no-op after Close
}

// TestFarTimersSoonGoToTheHeap: the ring's start lags behind the time
// between two phases (it moves when a phase moves buckets); a timer due
// within a bucket's width of the cached time goes to the heap even when its
// deadline is past that stale start, and one due later still goes to the
// ring.
func TestFarTimersSoonGoToTheHeap(t *testing.T) {
	l, c := newFakeLoop(t)
	width := int64(1) << farShift
	var log []int
	ws := make([]*batchWaiter, 3)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	ws[0].node.StartAt(c.t + 10*width) // keeps the ring, and its start, in place
	start := l.far.start
	c.t = start + width/2 // the clock passes start without a phase
	l.UpdateTime()
	ws[1].node.StartFresh(100) // due past start, within a width of now
	if ws[1].node.index < 0 {
		t.Fatalf("a timer due 100 ns out went to the ring (index %d, start %d, now %d)", ws[1].node.index, start, l.Now())
	}
	ws[2].node.StartFresh(time.Duration(3 * width))
	if ws[2].node.index >= 0 || ws[2].node.index < pendingLimit {
		t.Fatalf("a timer due 3 widths out did not go to the ring (index %d)", ws[2].node.index)
	}
	checkHeap(t, &l.timers)
	checkFar(t, l)
	c.t += 100
	tick(t, l, true)
	if !slices.Equal(log, []int{1}) {
		t.Fatalf("fired %v, want [1]", log)
	}
}
