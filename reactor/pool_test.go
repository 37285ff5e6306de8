package reactor

import (
	"errors"
	"hash/crc32"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWorkCompletes runs CPU-bound jobs on the pool and checks each result
// arrives through the loop, counted, with the pool bounded by PoolThreads.
//
// The pool's threads are held before they first look at the queue until
// every job is submitted: the pool starts a thread only while the queue
// holds more than its free threads take, so a first thread quick enough to
// finish each job before the next Start (the submitting goroutine
// preempted; under -race beside other tests, 6 runs in 300) would run all
// 20 alone, and "2 threads" would test the timing, not the bound.
func TestWorkCompletes(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 2})
	releaseThreads := heldThreads(t, pointStart) // after newLoop: released before its Close
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := crc32.ChecksumIEEE(buf)
	const n = 20
	sums := make([]uint32, n)
	fired := 0
	works := make([]*Work, n)
	for i := range works {
		works[i] = l.NewWork(func() { fired++ })
		if err := works[i].Start(JobFunc(func() { sums[i] = crc32.ChecksumIEEE(buf) })); err != nil {
			t.Fatal(err)
		}
	}
	if l.Active() != n {
		t.Fatalf("Active %d, want %d", l.Active(), n)
	}
	releaseThreads()
	tickUntil(t, l, func() bool { return fired == n })
	for i, s := range sums {
		if s != want {
			t.Fatalf("job %d: checksum %x, want %x", i, s, want)
		}
		if works[i].Active() || works[i].Busy() || works[i].Err() != nil {
			t.Fatalf("work %d after firing: active %v busy %v err %v", i, works[i].Active(), works[i].Busy(), works[i].Err())
		}
	}
	st := l.Stats()
	if st.WorkSubmitted != n || st.WorkCompleted != n || st.WorkCanceled != 0 || st.PoolThreads != 2 {
		t.Fatalf("stats %+v: want %d submitted and completed, 2 threads", st, n)
	}
	if l.Active() != 0 {
		t.Fatalf("Active %d after all fired", l.Active())
	}
	// A fired Work can be started again.
	if err := works[0].Start(JobFunc(func() {})); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == n+1 })
}

// blockers starts n jobs that block until release is closed, and waits until
// all n are running on threads.
func blockers(t *testing.T, l *Loop, n int, release chan struct{}, fired *int) []*Work {
	t.Helper()
	var running atomic.Int32
	ws := make([]*Work, n)
	for i := range ws {
		ws[i] = l.NewWork(func() { *fired++ })
		if err := ws[i].Start(JobFunc(func() { running.Add(1); <-release })); err != nil {
			t.Fatal(err)
		}
	}
	for running.Load() != int32(n) {
		osYield()
	}
	return ws
}

func TestWorkQueueFullAndCancel(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 1, PoolQueue: 2})
	release := make(chan struct{})
	fired := 0
	run := blockers(t, l, 1, release, &fired)[0] // occupies the only thread
	ran := [2]bool{}
	q0 := l.NewWork(func() { fired++ })
	q1 := l.NewWork(func() { fired++ })
	if err := q0.Start(JobFunc(func() { ran[0] = true })); err != nil {
		t.Fatal(err)
	}
	if err := q1.Start(JobFunc(func() { ran[1] = true })); err != nil {
		t.Fatal(err)
	}
	over := l.NewWork(func() { t.Error("refused work fired") })
	err := over.Start(JobFunc(func() {}))
	if !errors.Is(err, ErrPoolQueueFull) || !strings.Contains(err.Error(), "Options.PoolQueue = 2") {
		t.Fatalf("third queued Start: %v, want ErrPoolQueueFull naming Options.PoolQueue = 2", err)
	}
	if over.Active() || l.Active() != 3 {
		t.Fatalf("refused work active %v, loop active %d (want false, 3)", over.Active(), l.Active())
	}
	// Cancel queued q0: it never runs; the freed slot takes another item.
	q0.Stop()
	if q0.Active() || q0.Busy() || l.Stats().WorkCanceled != 1 {
		t.Fatalf("after Stop of queued work: active %v busy %v canceled %d", q0.Active(), q0.Busy(), l.Stats().WorkCanceled)
	}
	if err := over.Start(JobFunc(func() {})); err != nil {
		t.Fatalf("Start after a cancel freed a slot: %v", err)
	}
	over.Stop()
	// Stop the running job: it cannot be interrupted; its result is discarded.
	run.Stop()
	if !run.Busy() {
		t.Fatal("stopped running work is not Busy")
	}
	if err := run.Start(JobFunc(func() {})); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("Start on a busy Work: %v", err)
	}
	close(release)
	tickUntil(t, l, func() bool { return fired == 1 }) // q1
	tickUntil(t, l, func() bool { return !run.Busy() })
	if ran[0] || !ran[1] || fired != 1 {
		t.Fatalf("ran %v fired %d: want only q1 run and fired", ran, fired)
	}
	st := l.Stats()
	if st.WorkDiscarded != 1 || st.WorkCompleted != 1 || st.WorkCanceled != 2 {
		t.Fatalf("stats %+v: want 1 discarded, 1 completed, 2 canceled", st)
	}
}

// TestLoopCloseWithWorkInFlight: queued work is cancelled, running work is
// awaited (Close returns only after it finished), nothing fires afterwards,
// and the pool's threads are gone.
func TestLoopCloseWithWorkInFlight(t *testing.T) {
	l, err := NewWithOptions(Options{PoolThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	fired := 0
	blockers(t, l, 2, release, &fired)
	var finished atomic.Int32
	queued := l.NewWork(func() { fired++ })
	if err := queued.Start(JobFunc(func() { t.Error("queued work ran after Close") })); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Let Close start waiting, then let the running jobs finish.
		for {
			l.pool.mu.Lock()
			c := l.pool.closed
			l.pool.mu.Unlock()
			if c {
				break
			}
			osYield()
		}
		finished.Add(1)
		close(release)
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if finished.Load() != 1 {
		t.Fatal("Close returned before the running jobs were released")
	}
	if queued.Err() != ErrCanceled || queued.Active() || l.Active() != 0 {
		t.Fatalf("queued work after Close: err %v active %v; loop active %d", queued.Err(), queued.Active(), l.Active())
	}
	if _, err := l.Tick(true); err != ErrLoopClosed || fired != 0 {
		t.Fatalf("Tick after Close: %v, fired %d", err, fired)
	}
	if err := queued.Start(JobFunc(func() {})); err != ErrLoopClosed {
		t.Fatalf("Work.Start after Loop.Close: %v", err)
	}
	st := l.Stats()
	if st.WorkCanceled != 1 || st.WorkDiscarded != 2 {
		t.Fatalf("stats %+v: want 1 canceled, 2 discarded", st)
	}
	queued.Stop()
	queued.Close()
}

func TestWorkMisuse(t *testing.T) {
	l := newLoop(t, Options{})
	w := l.NewWork(func() {})
	mustPanic(t, "double Start", "started Work", func() {
		w.Start(JobFunc(func() {}))
		w.Start(JobFunc(func() {}))
	})
	w.Close()
	mustPanic(t, "Start after Close", "after Close", func() { w.Start(JobFunc(func() {})) })
}
