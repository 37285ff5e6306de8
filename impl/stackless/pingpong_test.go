package stackless

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time in ns. The benchmarks lock
// their goroutine to its thread and report it next to wall time: on a loaded
// machine wall time includes the spells the thread was descheduled, thread
// CPU time does not.
func threadCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return ts.Nano()
}

func TestPingPongChecksum(t *testing.T) {
	for _, rounds := range []int{1, 2, 3, 100, 10000} {
		sum, err := RunPingPong(rounds)
		if err != nil {
			t.Fatalf("rounds=%d: %v", rounds, err)
		}
		if want := PingPongChecksum(rounds); sum != want {
			t.Fatalf("rounds=%d: checksum %d, want %d", rounds, sum, want)
		}
	}
	if _, err := NewPingPong(0); err == nil {
		t.Fatal("NewPingPong(0) succeeded, want an error")
	}
}

func TestPingPongResumeCount(t *testing.T) {
	p, _ := NewPingPong(50)
	s := New()
	if err := p.Spawn(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	// Each task is resumed once to start and once per handoff it receives.
	// Pong's first receive takes the fast path (ping resolved pong's event
	// before pong first waited): pong is called again at once, not queued.
	if st.Resumes != 2*50+2 || st.FastPaths != 1 {
		t.Fatalf("stats %+v, want Resumes=%d FastPaths=1", st, 2*50+2)
	}
}

// TestPingPongNoAllocs: the steady-state handoff allocates nothing. MemStats
// counts the whole process, so a run gets a few attempts (background runtime
// allocations only ever add).
func TestPingPongNoAllocs(t *testing.T) {
	const rounds = 10000
	var n uint64
	for attempt := 0; attempt < 3; attempt++ {
		p, _ := NewPingPong(rounds)
		s := New()
		_ = p.Spawn(s)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n = after.Mallocs - before.Mallocs; n == 0 {
			return
		}
	}
	t.Fatalf("%d allocations over %d handoffs, want 0", n, 2*rounds)
}

// BenchmarkPingPong: b.N one-way switches between two state machines through
// reusable one-shot events. Reports ns/switch and allocs/switch.
func BenchmarkPingPong(b *testing.B) {
	rounds := max(b.N/2, 1)
	p, _ := NewPingPong(rounds)
	s := New()
	_ = p.Spawn(s)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	cpu0, start := threadCPU(b), time.Now()
	err := s.Run()
	elapsed, cpu := time.Since(start), threadCPU(b)-cpu0
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if err != nil {
		b.Fatal(err)
	}
	if p.Checksum() != PingPongChecksum(rounds) {
		b.Fatalf("checksum %d, want %d", p.Checksum(), PingPongChecksum(rounds))
	}
	sw := float64(p.Switches())
	b.ReportMetric(float64(elapsed.Nanoseconds())/sw, "ns/switch")
	b.ReportMetric(float64(cpu)/sw, "cpu-ns/switch")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/sw, "allocs/switch")
}

// yielder yields n times.
type yielder struct {
	Coro
	n int
}

func (t *yielder) Resume(c *Context) Step {
	if t.n == 0 {
		return c.Done()
	}
	t.n--
	return c.Yield()
}

// BenchmarkYield: two tasks yielding to each other: the bare cost of the
// run loop per switch (no events), for comparison with BenchmarkPingPong.
func BenchmarkYield(b *testing.B) {
	s := New()
	n := max(b.N/2, 1)
	_ = s.Spawn(&yielder{n: n})
	_ = s.Spawn(&yielder{n: n})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, start := threadCPU(b), time.Now()
	if err := s.Run(); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), threadCPU(b)-cpu0
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(2*n), "ns/switch")
	b.ReportMetric(float64(cpu)/float64(2*n), "cpu-ns/switch")
}

// TestIndependentSchedulers: schedulers share no state, so several can run
// at once on different goroutines (race detector clean).
func TestIndependentSchedulers(t *testing.T) {
	const k, rounds = 4, 2000
	errs := make(chan error, k)
	for i := 0; i < k; i++ {
		go func() {
			sum, err := RunPingPong(rounds)
			if err == nil && sum != PingPongChecksum(rounds) {
				err = errors.New("bad checksum")
			}
			errs <- err
		}()
	}
	for i := 0; i < k; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
