package stackful

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSpawnCPU: BenchmarkSpawn's asm loop (one coroutine spawned, run
// to its end and destroyed per op, 100 spawned before main yields) with the
// thread's CPU time per spawn beside the wall clock: on a shared machine the
// wall clock also counts the time other processes held the core, the
// thread's CPU time (user and system: clearing fresh memory and its page
// faults included) does not. Run it with GOGC=off to measure what the
// scenarios measure with the GC held off: every spawn then lands on fresh
// memory.
func BenchmarkSpawnCPU(b *testing.B) {
	s, err := New(Options{Backend: Asm})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	ran := 0
	body := func() { ran++ }
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t0, t1 unix.Timespec
	b.ReportAllocs()
	b.ResetTimer()
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
	err = s.Run(func() {
		for i := 0; i < b.N; i += 100 {
			for j := i; j < i+100 && j < b.N; j++ {
				Go(body)
			}
			Yield()
		}
	})
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
	b.StopTimer()
	if err != nil || ran != b.N {
		b.Fatalf("Run = %v, %d of %d ran", err, ran, b.N)
	}
	b.ReportMetric(float64(t1.Nano()-t0.Nano())/float64(b.N), "cpu-ns/spawn")
}

// threadCPU returns the calling thread's CPU time in ns (user and system);
// the caller locks its goroutine to the thread.
func threadCPU() int64 {
	var t unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t)
	return t.Nano()
}

// BenchmarkSpawnLifecycle: the spawn scenario's alive=1 pool=warm loop on
// asm: main spawns one coroutine, which fires an event main awaits; one op
// is one create + run + destroy (its stack back for the next one). cpu-ns
// as in BenchmarkSpawnCPU.
func BenchmarkSpawnLifecycle(b *testing.B) {
	s, done := lockedAsmScheduler(b)
	defer done()
	var cpu0, cpu1 int64
	b.ReportAllocs()
	err := s.Run(func() {
		done := NewEvent()
		body := func() { done.Resolve(nil) }
		lifecycle := func() {
			Go(body)
			Await(done)
			done.Reset()
		}
		lifecycle() // warm: a record on the free list, a stack kept
		b.ResetTimer()
		cpu0 = threadCPU()
		for i := 0; i < b.N; i++ {
			lifecycle()
		}
		cpu1 = threadCPU()
		b.StopTimer()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/spawn")
}

// BenchmarkSpawnAlive: the spawn scenario's alive=10000 pool=warm round on
// asm: main spawns 10000 coroutines, each yields once (so all are alive
// together, each on its own stack) and then finishes; one op is one spawn,
// its yield and its finish. A first untimed round warms the pool, the free
// records and the run queue. cpu-ns as in BenchmarkSpawnCPU.
func BenchmarkSpawnAlive(b *testing.B) {
	const alive = 10000
	s, done := lockedAsmScheduler(b)
	defer done()
	round := func() error {
		return s.Run(func() {
			body := func() { _ = Yield() }
			for i := 0; i < alive; i++ {
				Go(body)
			}
		})
	}
	if err := round(); err != nil {
		b.Fatal(err)
	}
	rounds := (b.N + alive - 1) / alive
	b.ResetTimer()
	cpu0 := threadCPU()
	for r := 0; r < rounds; r++ {
		if err := round(); err != nil {
			b.Fatal(err)
		}
	}
	cpu1 := threadCPU()
	b.StopTimer()
	b.ReportMetric(float64(cpu1-cpu0)/float64(rounds*alive), "cpu-ns/spawn")
}

// lockedAsmScheduler returns a stackful-asm scheduler for a benchmark with
// the benchmark's goroutine locked to its thread (whose CPU clock, threadCPU,
// is then the benchmark's), and done, which closes the one and unlocks the
// other. It skips the benchmark where the asm backend is not supported.
func lockedAsmScheduler(b *testing.B) (s *Scheduler, done func()) {
	s, err := New(Options{Backend: Asm})
	if err != nil {
		b.Skip(err)
	}
	runtime.LockOSThread()
	return s, func() {
		runtime.UnlockOSThread()
		s.Close()
	}
}
