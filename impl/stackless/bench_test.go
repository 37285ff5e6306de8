package stackless

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// report adds ns/op-style metrics computed from wall and thread CPU time
// and the allocation count of the timed region.
type meter struct {
	b       *testing.B
	start   time.Time
	cpu0    int64
	mallocs uint64
}

func startMeter(b *testing.B) *meter {
	runtime.GC()
	runtime.LockOSThread()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	return &meter{b: b, start: time.Now(), cpu0: threadCPU(b), mallocs: ms.Mallocs}
}

func (m *meter) stop(ops int, unit string) {
	elapsed, cpu := time.Since(m.start), threadCPU(m.b)-m.cpu0
	m.b.StopTimer()
	runtime.UnlockOSThread()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.b.ReportMetric(float64(elapsed.Nanoseconds())/float64(ops), "ns/"+unit)
	m.b.ReportMetric(float64(cpu)/float64(ops), "cpu-ns/"+unit)
	m.b.ReportMetric(float64(ms.Mallocs-m.mallocs)/float64(ops), "allocs/"+unit)
}

// BenchmarkSpawn: create, run to completion and finish a task. cold
// allocates a fresh state struct per task; warm re-spawns finished structs
// (the pooled case).
func BenchmarkSpawn(b *testing.B) {
	const batch = 1024
	b.Run("pool=cold", func(b *testing.B) {
		s := New()
		m := startMeter(b)
		for done := 0; done < b.N; done += batch {
			for i := 0; i < batch; i++ {
				_ = s.Spawn(new(tinyTask))
			}
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
		}
		m.stop(b.N, "spawn")
	})
	b.Run("pool=warm", func(b *testing.B) {
		s := New()
		tasks := make([]tinyTask, batch)
		for i := range tasks {
			_ = s.Spawn(&tasks[i])
		}
		_ = s.Run()
		m := startMeter(b)
		for done := 0; done < b.N; done += batch {
			for i := range tasks {
				_ = s.Spawn(&tasks[i])
			}
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
		}
		m.stop(b.N, "spawn")
	})
}

// awaitLoop awaits its event n times. With ready set the event has already
// fired (fast path: no suspend, no queue); otherwise a partner resolves it
// each round, so each await suspends and is woken through the queue.
type awaitLoop struct {
	Coro
	n, i  int
	ev    *Event
	ready bool
	state int
}

func (t *awaitLoop) Resume(c *Context) Step {
	for t.i < t.n {
		if t.state == 1 {
			t.state = 0
			t.i++
			if !t.ready {
				t.ev.Reset()
			}
			continue
		}
		t.state = 1
		return c.Await(t.ev)
	}
	return c.Done()
}

// resolver resolves ev each time it runs, n times, yielding in between.
type resolver struct {
	Coro
	n  int
	ev *Event
}

func (t *resolver) Resume(c *Context) Step {
	if t.n == 0 {
		return c.Done()
	}
	t.n--
	t.ev.Resolve(nil)
	return c.Yield()
}

func BenchmarkAwaitReady(b *testing.B) {
	b.Run("state=ready", func(b *testing.B) {
		s := New()
		ev := new(Event)
		ev.Resolve(nil)
		_ = s.Spawn(&awaitLoop{n: b.N, ev: ev, ready: true})
		m := startMeter(b)
		if err := s.Run(); err != nil {
			b.Fatal(err)
		}
		m.stop(b.N, "await")
		if s.Stats().FastPaths != uint64(b.N) {
			b.Fatalf("%d fast paths, want %d", s.Stats().FastPaths, b.N)
		}
	})
	b.Run("state=pending", func(b *testing.B) {
		s := New()
		ev := new(Event)
		_ = s.Spawn(&awaitLoop{n: b.N, ev: ev})
		_ = s.Spawn(&resolver{n: b.N, ev: ev})
		m := startMeter(b)
		if err := s.Run(); err != nil {
			b.Fatal(err)
		}
		m.stop(b.N, "await")
	})
}

// BenchmarkMicrotask: the same tiny work (a counter increment) as a reused
// microtask against a task spawned for it (pooled struct).
func BenchmarkMicrotask(b *testing.B) {
	const batch = 1024
	b.Run("kind=microtask", func(b *testing.B) {
		s := New()
		count := 0
		mt := NewMicrotask(func() error { count++; return nil }, nil)
		driver := &yielder{}
		m := startMeter(b)
		for done := 0; done < b.N; done += batch {
			for i := 0; i < batch; i++ {
				_ = s.EnqueueMicrotask(mt)
			}
			driver.n = 0
			_ = s.Spawn(driver)
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
		}
		m.stop(b.N, "task")
		if count < b.N {
			b.Fatalf("ran %d microtasks, want >= %d", count, b.N)
		}
	})
	b.Run("kind=coroutine", func(b *testing.B) {
		s := New()
		count := 0
		tasks := make([]counterTask, batch)
		for i := range tasks {
			tasks[i].count = &count
		}
		m := startMeter(b)
		for done := 0; done < b.N; done += batch {
			for i := range tasks {
				_ = s.Spawn(&tasks[i])
			}
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
		}
		m.stop(b.N, "task")
		if count < b.N {
			b.Fatalf("ran %d tasks, want >= %d", count, b.N)
		}
	})
}

type counterTask struct {
	Coro
	count *int
}

func (t *counterTask) Resume(c *Context) Step { *t.count++; return c.Done() }

// tryAwaitLoop is awaitLoop on a fired event with the inline fast path.
type tryAwaitLoop struct {
	Coro
	n, i int
	ev   *Event
	sum  int
}

func (t *tryAwaitLoop) Resume(c *Context) Step {
	for ; t.i < t.n; t.i++ {
		if !c.TryAwait(t.ev) {
			return c.Fail(errors.New("TryAwait on a fired event returned false"))
		}
		t.sum += c.Result().(int)
	}
	return c.Done()
}

func BenchmarkAwaitReadyInline(b *testing.B) {
	s := New()
	ev := new(Event)
	ev.Resolve(1)
	tk := &tryAwaitLoop{n: b.N, ev: ev}
	_ = s.Spawn(tk)
	m := startMeter(b)
	if err := s.Run(); err != nil {
		b.Fatal(err)
	}
	m.stop(b.N, "await")
	if tk.sum != b.N {
		b.Fatalf("sum %d, want %d", tk.sum, b.N)
	}
}
