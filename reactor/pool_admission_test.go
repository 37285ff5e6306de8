package reactor

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The pool's admission must not depend on how fast its threads are: a
// thread that is still starting, or still waking, when the next Start
// comes is a thread about to take work, not a queue. These tests hold
// threads at those points (poolHook) and check that every Start gets the
// answer it gets when the threads are instant. (Under qemu-user a thread
// start takes milliseconds; the old accounting then counted the job handed
// to the starting thread as queued and refused the next.)

// heldThreads installs a poolHook that holds pool threads at the points
// asked until release is called (idempotent; also run at the test's end).
// Call it after newLoop, so that this release comes before the loop's
// Close (cleanups run last-in first-out), which waits for the threads; the
// pool takes the hook when the loop's first Work starts.
func heldThreads(t *testing.T, at ...poolPoint) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	var held atomic.Int32
	hold := map[poolPoint]bool{}
	for _, p := range at {
		hold[p] = true
	}
	old := poolHook
	poolHook = func(p poolPoint) {
		if hold[p] {
			held.Add(1)
			<-gate
		}
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); poolHook = old })
	return release
}

// gatedJobs makes jobs that count how many run at once (peak) and block
// until open is closed.
type gatedJobs struct {
	open          chan struct{}
	running, peak atomic.Int32
}

func newGatedJobs() *gatedJobs { return &gatedJobs{open: make(chan struct{})} }

func (g *gatedJobs) job() Job {
	return JobFunc(func() {
		n := g.running.Add(1)
		for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
		}
		<-g.open
		g.running.Add(-1)
	})
}

// waitRunning spins until n gated jobs run at once.
func (g *gatedJobs) waitRunning(n int32) {
	for g.running.Load() != n {
		osYield()
	}
}

// start starts a Work with job and returns Start's error.
func start(l *Loop, fired *int, j Job) (*Work, error) {
	w := l.NewWork(func() { *fired++ })
	return w, w.Start(j)
}

// TestPoolAdmissionStartingThread: one thread, a queue of one. The first
// job's thread is held before it starts; the second Start is still
// admitted (the first job has its thread), the third refused, and the
// same holds once the thread runs the first job.
func TestPoolAdmissionStartingThread(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 1, PoolQueue: 1})
	releaseThreads := heldThreads(t, pointStart) // after newLoop: released before its Close
	g := newGatedJobs()
	fired := 0
	if _, err := start(l, &fired, g.job()); err != nil {
		t.Fatalf("first Start: %v", err)
	}
	if _, err := start(l, &fired, JobFunc(func() {})); err != nil {
		t.Fatalf("second Start, while the first job's thread is starting: %v, want it queued behind the first", err)
	}
	third := l.NewWork(func() { t.Error("refused work fired") })
	if err := third.Start(JobFunc(func() {})); !errors.Is(err, ErrPoolQueueFull) {
		t.Fatalf("third Start, thread starting: %v, want ErrPoolQueueFull", err)
	}
	releaseThreads()
	g.waitRunning(1)
	if err := third.Start(JobFunc(func() {})); !errors.Is(err, ErrPoolQueueFull) {
		t.Fatalf("third Start, first job running: %v, want ErrPoolQueueFull", err)
	}
	close(g.open)
	tickUntil(t, l, func() bool { return fired == 2 })
	if st := l.Stats(); st.PoolThreads != 1 || st.WorkCompleted != 2 {
		t.Fatalf("stats %+v, want 1 thread and 2 jobs completed", st)
	}
}

// TestPoolAdmissionBurst: a burst of Starts on an idle pool of three
// threads with a queue of one, every thread held before it starts: three
// jobs go to the three threads started for them and one to the queue; the
// fifth is refused. Released, the three threads run three jobs at once.
func TestPoolAdmissionBurst(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 3, PoolQueue: 1})
	releaseThreads := heldThreads(t, pointStart) // after newLoop: released before its Close
	g := newGatedJobs()
	fired := 0
	for i := range 4 {
		if _, err := start(l, &fired, g.job()); err != nil {
			t.Fatalf("Start %d of a burst on 3 threads + a queue of 1: %v", i+1, err)
		}
	}
	if _, err := start(l, &fired, JobFunc(func() {})); !errors.Is(err, ErrPoolQueueFull) {
		t.Fatalf("fifth Start: %v, want ErrPoolQueueFull", err)
	}
	if st := l.Stats(); st.PoolThreads != 3 {
		t.Fatalf("%d threads started for 4 jobs on a pool of 3, want 3", st.PoolThreads)
	}
	releaseThreads()
	g.waitRunning(3)
	close(g.open)
	tickUntil(t, l, func() bool { return fired == 4 })
	if p := g.peak.Load(); p != 3 {
		t.Fatalf("peak %d jobs at once, want 3", p)
	}
}

// TestPoolAdmissionWokenThread: two threads, a queue of one, one thread
// started and idle. Its wake for the first job is held: the second job
// gets the second thread (it does not wait behind the first for the one
// being woken), the third is queued, the fourth refused.
func TestPoolAdmissionWokenThread(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 2, PoolQueue: 1})
	releaseThreads := heldThreads(t, pointWoken) // after newLoop: released before its Close
	fired := 0
	if _, err := start(l, &fired, JobFunc(func() {})); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	for idle := 0; idle != 1; osYield() { // the thread is waiting for work
		l.pool.mu.Lock()
		idle = l.pool.idle
		l.pool.mu.Unlock()
	}
	g := newGatedJobs()
	for i := range 3 {
		if _, err := start(l, &fired, g.job()); err != nil {
			t.Fatalf("Start %d with one idle thread being woken and one to start, queue of 1: %v", i+1, err)
		}
	}
	if _, err := start(l, &fired, JobFunc(func() {})); !errors.Is(err, ErrPoolQueueFull) {
		t.Fatalf("fourth Start: %v, want ErrPoolQueueFull", err)
	}
	if st := l.Stats(); st.PoolThreads != 2 {
		t.Fatalf("%d threads started, want 2 (the second job must not wait for the thread being woken)", st.PoolThreads)
	}
	releaseThreads()
	g.waitRunning(2)
	close(g.open)
	tickUntil(t, l, func() bool { return fired == 4 })
}

// TestPoolIdleWakeNotLost: a Start that comes while the only thread is
// between deciding to sleep (mu unlocked) and sleeping must still wake it.
// The thread is held at that point (pointIdle) while the Work starts, so
// the futex wake finds nobody asleep; the thread must then see that the
// word moved since it read it under mu, and not sleep. Reading the word
// after the unlock instead loses the wakeup: the Work never runs.
func TestPoolIdleWakeNotLost(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 1})
	atIdle, gate := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(gate) }) }
	old := poolHook
	poolHook = func(p poolPoint) {
		if p == pointIdle {
			holdOnce.Do(func() { close(atIdle); <-gate })
		}
	}
	t.Cleanup(func() { release(); poolHook = old }) // before the loop's Close
	fired := 0
	if _, err := start(l, &fired, JobFunc(func() {})); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	<-atIdle // the thread has unlocked mu to sleep, and is held there
	if _, err := start(l, &fired, JobFunc(func() {})); err != nil {
		t.Fatal(err)
	}
	release()
	// Not a timing test: a lost wakeup never completes; 10 s only keeps
	// the failure from waiting for go test's own timeout.
	deadline := time.Now().Add(10 * time.Second)
	for fired != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second Work never ran: the pool thread slept through its wakeup")
		}
		if _, err := l.Tick(true); err != nil {
			t.Fatal(err)
		}
		osYield()
	}
}
