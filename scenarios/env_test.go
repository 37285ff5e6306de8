package scenarios

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSegmentsCountPreemptions: each StartTimer–StopTimer pair is a
// segment; one whose thread's involuntary switches rose is preempted (its
// time in PreemptedTime), one that ended on another thread (or whose
// thread could not be read) is moved, not preempted; ResetTimer starts
// the count afresh. Scripted readings (thread id, switches), not the
// kernel's.
func TestSegmentsCountPreemptions(t *testing.T) {
	type reading struct {
		tid   int
		ivcsw int64
	}
	script := []reading{
		{7, 99},          // the start ResetTimer drops
		{7, 10}, {7, 10}, // clean
		{7, 10}, {7, 12}, // preempted twice: one segment
		{7, 12}, {8, 20}, // moved to thread 8: cannot be told
		{0, 0}, {0, 0}, // getrusage failed: cannot be told
		{8, 20}, {8, 21}, // preempted
		{8, 21}, {8, 21}, // after the last ResetTimer
	}
	i := 0
	old := threadSwitches
	threadSwitches = func() (int, int64) {
		r := script[i]
		i++
		return r.tid, r.ivcsw
	}
	t.Cleanup(func() { threadSwitches = old })

	var e Env
	e.StartTimer() // a segment ResetTimer drops
	e.ResetTimer()
	e.StopTimer()
	if got := e.Segments(); got.Segments != 1 || got.Preempted != 0 || got.Moved != 0 {
		t.Fatalf("after ResetTimer and one clean segment: %+v, want 1 segment, none preempted or moved", got)
	}
	var preempted time.Duration
	for seg := 2; seg <= 5; seg++ {
		e.StartTimer()
		time.Sleep(time.Millisecond)
		before := e.Elapsed()
		e.StopTimer()
		if seg == 2 || seg == 5 {
			preempted += e.Elapsed() - before
		}
	}
	got := e.Segments()
	want := SegmentCounts{Segments: 5, Preempted: 2, Moved: 2, Time: e.Elapsed(), PreemptedTime: preempted}
	if got != want {
		t.Errorf("segments %+v, want %+v", got, want)
	}
	e.ResetTimer()
	e.StopTimer()
	if got := e.Segments(); got != (SegmentCounts{Segments: 1, Time: e.Elapsed()}) {
		t.Errorf("after ResetTimer: %+v, want the one segment since", got)
	}
	if i != len(script) {
		t.Errorf("%d readings taken, want %d (one at each start and stop)", i, len(script))
	}
}

// TestSegmentsSeeARealPreemption: a segment that spins on a CPU another
// thread also spins on, until the kernel has preempted it at least once,
// is counted preempted: the Env reads the timing thread's own count of
// involuntary switches (getrusage RUSAGE_THREAD, not voluntary ones).
func TestSegmentsSeeARealPreemption(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Skip("sched_getaffinity:", err)
	}
	defer unix.SchedSetaffinity(0, &all)
	cpu := -1
	for c := 0; c < 1024 && cpu < 0; c++ {
		if all.IsSet(c) {
			cpu = c
		}
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Skip("sched_setaffinity:", err)
	}
	var stop, started atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if unix.SchedSetaffinity(0, &one) != nil {
			started.Store(true)
			return
		}
		started.Store(true)
		for !stop.Load() {
		}
	}()
	for !started.Load() {
		runtime.Gosched()
	}
	// The kernel's count, read here apart from the Env's own reader.
	ivcsw := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Nivcsw
	}
	var e Env
	e.StartTimer()
	first := ivcsw()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if ivcsw() > first {
			break // the spinner has had the CPU at least once
		}
	}
	e.StopTimer()
	stop.Store(true)
	<-done
	if got := e.Segments(); got.Segments != 1 || got.Preempted+got.Moved != 1 {
		t.Errorf("a segment sharing its CPU with a spinning thread: %+v, want 1 segment, preempted", got)
	} else if got.Moved != 0 {
		t.Errorf("a segment on a locked thread read as moved: %+v", got)
	}
}
