package stackful

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkTimerWake: n coroutines each sleep 1 µs again and again; one op
// is one wake (timer start, firing in a reactor tick, switch back). With
// n = 10000 the deadlines are due by the time the round reaches them, so
// cpu-ns/wake is the CPU a sleep-and-wake costs with n sleepers (the twin
// of impl/stackless's BenchmarkTimerWake).
//
// The timed region holds wakes only: the n coroutines' stacks are taken
// from the pool once before it (a first Run), and each coroutine is spawned
// and makes its first sleep before the timer starts, as in benchYieldN. It
// used to hold the n spawns and their stacks' first touch too: 280
// cpu-ns/wake at -benchtime 400000x against 188 at 2000000x (session 10).
// A wake counts once the timer runs, so the few first sleeps that began
// before it are counted at their wake (their start is outside: < n/b.N).
func BenchmarkTimerWake(b *testing.B) {
	for _, n := range []int{1, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s, err := New(Options{Backend: Asm})
			if err != nil {
				b.Skip(err)
			}
			defer s.Close()
			sleep := func() {
				if err := Sleep(time.Microsecond); err != nil {
					panic(err)
				}
			}
			// Warm: every coroutine's stack is taken once before the timer.
			if err := s.Run(func() {
				for i := 0; i < n; i++ {
					Go(sleep)
				}
			}); err != nil {
				b.Fatal(err)
			}
			per := (b.N + n - 1) / n
			timing, wakes, finished := false, 0, 0
			var cpu0, cpu1 int64
			body := func() {
				sleep() // the first: it may start before the timer
				if timing {
					wakes++
				}
				for i := 0; i < per; i++ {
					sleep()
					wakes++
				}
				if finished++; finished == n {
					cpu1 = threadCPU()
					b.StopTimer()
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			err = s.Run(func() {
				for i := 0; i < n; i++ {
					Go(body)
				}
				// Behind all n: each has started and made its first
				// sleep when main runs again.
				_ = Yield()
				b.ResetTimer()
				timing, cpu0 = true, threadCPU()
			})
			if err != nil || finished != n || wakes < n*per {
				b.Fatalf("Run = %v, %d of %d coroutines finished, %d wakes timed (want at least %d)", err, finished, n, wakes, n*per)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(wakes), "ns/wake")
			b.ReportMetric(float64(cpu1-cpu0)/float64(wakes), "cpu-ns/wake") // see BenchmarkSpawnCPU
		})
	}
}

// BenchmarkYieldN: n coroutines yield round-robin; one op is one Yield (a
// switch to the next coroutine in the run queue). n = 2 is all in cache;
// at n = 4096 and more each switch touches a record and a stack top that
// are no longer in cache (the memory-latency figure of the Yield scenario).
func BenchmarkYieldN(b *testing.B) {
	for _, n := range yieldNs() {
		for _, pf := range []string{"on", "off"} {
			b.Run("n="+strconv.Itoa(n)+"/prefetch="+pf, func(b *testing.B) {
				if pf == "off" {
					defer func(v int) { prefetchMin = v }(prefetchMin)
					prefetchMin = 1 << 62
				} else if n < prefetchMin {
					b.Skip("below prefetchMin: the same as off")
				}
				benchYieldN(b, n)
			})
		}
	}
}

func benchYieldN(b *testing.B, n int) {
	s, err := New(Options{Backend: Asm})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	per := (b.N + n - 1) / n
	finished := 0
	var cpu0, cpu1 int64
	body := func() {
		_ = Yield() // untimed: every coroutine starts and yields once first
		for i := 0; i < per; i++ {
			_ = Yield()
		}
		if finished++; finished == n {
			cpu1 = threadCPU()
			b.StopTimer()
		}
	}
	// Warm: every coroutine's stack is taken once before the timer.
	if err := s.Run(func() {
		for i := 0; i < n; i++ {
			Go(func() { _ = Yield() })
		}
	}); err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = s.Run(func() {
		for i := 0; i < n; i++ {
			Go(body)
		}
		// Behind all n: they have started (contexts made, stacks
		// touched) and yielded once when main runs again; the timed
		// yields start here and end when the last coroutine finishes.
		_ = Yield()
		b.ResetTimer()
		cpu0 = threadCPU()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*per), "ns/yield")
	b.ReportMetric(float64(cpu1-cpu0)/float64(n*per), "cpu-ns/yield") // see BenchmarkSpawnCPU
}

// yieldNs is BenchmarkYieldN's grid of n; the environment variable
// YIELDN_NS (comma-separated) replaces it for a scan, e.g. YIELDN_NS=512,2048
// to find where the prefetch starts to pay.
func yieldNs() []int {
	v := os.Getenv("YIELDN_NS")
	if v == "" {
		return []int{2, 64, 256, 1024, 4096, 65536, 262144}
	}
	var ns []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			panic("YIELDN_NS: " + err.Error())
		}
		ns = append(ns, n)
	}
	return ns
}

// BenchmarkTimerWakeRing: BenchmarkTimerWake's loop with sleeps of 300 µs
// to 1 ms (a fixed sequence per coroutine) instead of 1 µs, so the timers
// go through the reactor's bucket ring and sorted run as the Timer
// scenario's do, not through the heap. n = 10000 such sleepers offer
// about 15 M wakes/s, far past what one core runs, so every run is in the
// backlog mode (the run queue long, the records and stacks cold): one
// figure per build, where the scenario's cell at n = 10000 sits at the
// edge and reads one of two modes by the host's state. It is the meter
// for the per-wake path of a backlogged timer wake (impl/stackful's
// prefetch pipeline, the record lines a sleep touches).
func BenchmarkTimerWakeRing(b *testing.B) {
	const n = 10000
	s, err := New(Options{Backend: Asm})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	// d(i, j): 300 µs plus a multiplicative hash of (i, j) mod 700 µs.
	d := func(i, j int) time.Duration {
		h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(j)*0xC2B2AE3D27D4EB4F
		return 300*time.Microsecond + time.Duration(h>>40%700000)
	}
	if err := s.Run(func() {
		for i := 0; i < n; i++ {
			Go(func() { _ = Sleep(d(i, 0)) })
		}
	}); err != nil {
		b.Fatal(err)
	}
	per := (b.N + n - 1) / n
	timing, wakes, finished := false, 0, 0
	var cpu0, cpu1 int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	err = s.Run(func() {
		for i := 0; i < n; i++ {
			Go(func() {
				if err := Sleep(d(i, 0)); err != nil { // the first: it may start before the timer
					panic(err)
				}
				if timing {
					wakes++
				}
				for j := 1; j <= per; j++ {
					if err := Sleep(d(i, j)); err != nil {
						panic(err)
					}
					wakes++
				}
				if finished++; finished == n {
					cpu1 = threadCPU()
					b.StopTimer()
				}
			})
		}
		_ = Yield()
		b.ResetTimer()
		timing, cpu0 = true, threadCPU()
	})
	if err != nil || finished != n || wakes < n*per {
		b.Fatalf("Run = %v, %d of %d coroutines finished, %d wakes timed (want at least %d)", err, finished, n, wakes, n*per)
	}
	b.ReportMetric(float64(cpu1-cpu0)/float64(wakes), "cpu-ns/wake")
}
