package reactor

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStartFromNextReadingTakesItsBaseAfterTheCall: the cached time is
// stale (the clock moved on without a reading), so Start would count from
// it and fire early by the staleness; StartFromNextReading counts from the
// next reading, never from a time before the call.
func TestStartFromNextReadingTakesItsBaseAfterTheCall(t *testing.T) {
	l, c := newFakeLoop(t)
	var log []int
	w := &batchWaiter{id: 1, log: &log}
	w.node.Init(l, w)
	c.t += 500 // the clock moves; l.Now() is still 1000
	called := c.t
	w.node.StartFromNextReading(100)
	if !w.node.Active() || l.Active() != 1 {
		t.Fatalf("pending node: Active() = %v, loop Active() = %d, want true, 1", w.node.Active(), l.Active())
	}
	if got := w.node.Deadline(); got != l.Now()+100 {
		t.Fatalf("Deadline() before the reading = %d, want Now()+100 = %d", got, l.Now()+100)
	}
	c.t += 7 // the reading comes a little after the call
	l.UpdateTime()
	if got, want := w.node.Deadline(), c.t+100; got != want {
		t.Fatalf("Deadline() after the reading = %d, want the reading + 100 = %d", got, want)
	}
	checkHeap(t, &l.timers)
	c.t = called + 100 + 6 // past call+d, before reading+d
	tick(t, l, true)
	if len(log) != 0 {
		t.Fatalf("fired at %d, before the reading that armed it + 100 (%d)", c.t, w.node.Deadline())
	}
	c.t++
	tick(t, l, true)
	if !slices.Equal(log, []int{1}) || w.node.Active() || l.Active() != 0 {
		t.Fatalf("at the deadline: fired %v, Active() %v, loop Active() %d; want [1], false, 0", log, w.node.Active(), l.Active())
	}
}

// TestStartFromNextReadingOrderStopAndRestart: nodes armed before one
// reading count as started at it in call order (equal delays fire in that
// order, after nodes Started earlier with the same deadline); a pending
// node that is stopped never fires, one re-armed with Start or StartAt
// fires at its new deadline only, and Init refuses a pending node.
func TestStartFromNextReadingOrderStopAndRestart(t *testing.T) {
	l, c := newFakeLoop(t)
	var log []int
	ws := make([]*batchWaiter, 6)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	c.t += 50
	ws[5].node.StartAt(c.t + 100) // same deadline as the pending ones will get, started first
	for _, i := range []int{3, 0, 4, 1, 2} {
		ws[i].node.StartFromNextReading(100)
	}
	ws[4].node.Stop()                  // never fires
	ws[1].node.Start(time.Duration(5)) // re-armed: Now()+5, fires alone and first
	mustPanic(t, "Init on a pending node", "armed", func() { ws[2].node.Init(l, ws[2]) })
	if l.Active() != 5 {
		t.Fatalf("Active() = %d, want 5", l.Active())
	}
	l.UpdateTime()
	checkHeap(t, &l.timers)
	c.t += 1000
	tick(t, l, true)
	if want := []int{1, 5, 3, 0, 2}; !slices.Equal(log, want) {
		t.Fatalf("fired %v, want %v", log, want)
	}
	if l.Active() != 0 || len(l.pending) != 0 {
		t.Fatalf("after: Active() %d, %d pending; want 0, 0", l.Active(), len(l.pending))
	}
}

// TestStartFromNextReadingInsideAHandler: a timer handler's pending node
// is not in the heap when Tick decides whether to wait; the tick ran a
// callback, so it must not block (its wait would ignore the node: here the
// only other timer is 50 ms out), and its second reading arms the node, at
// that reading + d.
func TestStartFromNextReadingInsideAHandler(t *testing.T) {
	l, c := newFakeLoop(t)
	var log []int
	far := &batchWaiter{id: 9, log: &log}
	far.node.Init(l, far)
	far.node.StartAt(c.t + int64(50*time.Millisecond))
	pend := &batchWaiter{id: 2, log: &log}
	pend.node.Init(l, pend)
	first := &batchWaiter{id: 1, log: &log, act: func() { pend.node.StartFromNextReading(10) }}
	first.node.Init(l, first)
	first.node.StartAt(c.t)
	sys := l.Stats().Syscalls
	tick(t, l, false)
	if got := l.Stats().Syscalls - sys; got != 0 {
		t.Fatalf("the tick made %d syscalls (a blocking wait) with a pending node", got)
	}
	if !slices.Equal(log, []int{1}) || len(l.pending) != 0 || pend.node.index < 0 || pend.node.Deadline() != c.t+10 {
		t.Fatalf("after the tick: fired %v, %d pending, node index %d, deadline %d; want [1], 0, in the heap, %d",
			log, len(l.pending), pend.node.index, pend.node.Deadline(), c.t+10)
	}
}

// TestCloseWithPendingNodes: Close leaves pending nodes idle; Stop on them
// is then a no-op, and starting them panics like any start after Close.
func TestCloseWithPendingNodes(t *testing.T) {
	l, _ := newFakeLoop(t)
	var log []int
	w := &batchWaiter{id: 1, log: &log}
	w.node.Init(l, w)
	w.node.StartFromNextReading(10)
	l.Close()
	if w.node.Active() {
		t.Fatal("pending node still active after Close")
	}
	w.node.Stop()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "after Loop.Close") {
			t.Fatalf("StartFromNextReading after Close: recovered %v", r)
		}
	}()
	w.node.StartFromNextReading(10)
}
