package stackless

import (
	"runtime"
	"testing"
	"unsafe"
)

// Tasks of three sizes: the smallest possible, one with a 1 KiB state (the
// memory scenario's "touched 1 KiB of state"), one past the malloc-header
// threshold.
type tinyTask struct{ Coro }

func (t *tinyTask) Resume(c *Context) Step { return c.Done() }

type kibTask struct {
	Coro
	buf [1024]byte
}

func (t *kibTask) Resume(c *Context) Step { return c.Done() }

type midTask struct {
	Coro
	buf [300]byte
}

func (t *midTask) Resume(c *Context) Step { return c.Done() }

func TestStateSizeIsTheStruct(t *testing.T) {
	if got, want := StateSize(&tinyTask{}), unsafe.Sizeof(tinyTask{}); got != want || got != HeaderSize {
		t.Fatalf("StateSize(tinyTask) = %d, want Sizeof = %d = HeaderSize %d", got, want, HeaderSize)
	}
	if got, want := StateSize(&kibTask{}), HeaderSize+1024; got != want {
		t.Fatalf("StateSize(kibTask) = %d, want HeaderSize+1024 = %d", got, want)
	}
	t.Logf("HeaderSize = %d B; AllocSize: tiny %d, mid %d, 1KiB %d", HeaderSize,
		AllocSize(&tinyTask{}), AllocSize(&midTask{}), AllocSize(&kibTask{}))
}

// spawnN allocates and spawns n tasks from mk and returns the heap objects
// and bytes allocated meanwhile. The run queue is grown beforehand, so the
// only allocations are the task structs themselves.
func spawnN[T any, P interface {
	*T
	Task
}](t *testing.T, s *Scheduler, tasks []P, n int) (objects, bytes uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		tasks[i] = P(new(T))
		if err := s.Spawn(tasks[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// TestSpawnAllocatesExactlyTheState: spawning N tasks allocates N objects of
// AllocSize bytes each and nothing else.
func TestSpawnAllocatesExactlyTheState(t *testing.T) {
	const n = 4096
	check := func(name string, objs, bytes uint64, per uintptr) {
		t.Helper()
		if objs != n || bytes != n*uint64(per) {
			t.Errorf("%s: spawning %d tasks allocated %d objects, %d bytes; want %d objects of %d bytes = %d",
				name, n, objs, bytes, n, per, n*uint64(per))
		}
	}
	s := New()
	warm := make([]*tinyTask, n) // grow the run queue to n first
	for i := range warm {
		warm[i] = new(tinyTask)
		_ = s.Spawn(warm[i])
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	tiny := make([]*tinyTask, n)
	objs, bytes := spawnN(t, s, tiny, n)
	check("tinyTask", objs, bytes, AllocSize(tiny[0]))
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	mid := make([]*midTask, n)
	objs, bytes = spawnN(t, s, mid, n)
	check("midTask", objs, bytes, AllocSize(mid[0]))
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	kib := make([]*kibTask, n)
	objs, bytes = spawnN(t, s, kib, n)
	check("kibTask", objs, bytes, AllocSize(kib[0]))
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	// Re-spawning finished structs (pooling) allocates nothing at all.
	allocs := testing.AllocsPerRun(10, func() {
		for _, k := range kib {
			_ = s.Spawn(k)
		}
		_ = s.Run()
	})
	if allocs != 0 {
		t.Errorf("re-spawning and running %d pooled tasks: %.1f allocations, want 0", n, allocs)
	}
}

// TestSuspendedTasksHoldNoExtraHeap: N tasks suspended on events, timers and
// the run queue cost their structs and nothing per task beyond the shared
// queue/heap slots.
func TestSuspendedTasksHoldNoExtraHeap(t *testing.T) {
	const n = 1000
	s := New()
	defer s.Close()
	ev := new(Event)
	ws := make([]*waitTask, n)
	for i := range ws {
		ws[i] = &waitTask{ev: ev, sleep: i%2 == 0}
		_ = s.Spawn(ws[i])
	}
	// Prime: create the reactor and grow the timer heap and queue.
	if err := s.r.open(s); err != nil {
		t.Fatal(err)
	}
	s.timers.a = make([]*Coro, 0, n)
	s.r.timer.Start(1 << 40) // the reactor's own timer heap gets its one slot
	s.r.timer.Stop()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Resume every task once: each suspends (half on the event, half in a
	// timer), allocating nothing.
	for co := s.next(); co != nil; co = s.next() {
		s.resume(co)
	}
	runtime.ReadMemStats(&after)
	if d := after.Mallocs - before.Mallocs; d != 0 {
		t.Fatalf("suspending %d tasks allocated %d objects, want 0", n, d)
	}
	if s.waiting != n || ev.Waiters() != n/2 || len(s.timers.a) != n/2 {
		t.Fatalf("waiting %d, event waiters %d, timers %d; want %d, %d, %d", s.waiting, ev.Waiters(), len(s.timers.a), n, n/2, n/2)
	}
	_ = ev.Resolve(nil)
	s.Shutdown()
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
}

type waitTask struct {
	Coro
	ev    *Event
	sleep bool
	state int
}

func (t *waitTask) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		if t.sleep {
			return c.Sleep(1 << 40)
		}
		return c.Await(t.ev)
	}
	return c.Done()
}
