package stackful

import (
	"context"
	"errors"
	"runtime"
	"runtime/pprof"
	"sort"
	"syscall"
	"testing"
	"time"
)

// BenchmarkShutdownCycle: the shutdown scenario's cycle on asm: a fresh
// scheduler, n coroutines blocked (each with a deferred cleanup) on an
// event nobody fires; timed from the Shutdown until the last cleanup ran.
// One op is one cycle; ns/coroutine and cpu-ns/coroutine (thread CPU, see
// BenchmarkSpawnCPU) are the means over the cycles, p90-ns/coroutine the
// 90th percentile of the cycles' wall time, which shows a cycle made slow
// now and then; cancel-cpu-ns/coroutine is the part spent in Shutdown's
// own loop (delivering the cancellations), the rest is the coroutines
// resuming, cleaning up and finishing; vcsw/cycle and ivcsw/cycle count the thread's voluntary
// and involuntary context switches inside the timed regions (a wall time
// far above the CPU time with ivcsw > 0 is other threads on the CPU, not
// the scheduler). The timed region carries the pprof label region=timed:
// a CPU profile of many cycles read with -tagfocus region=timed shows it
// without the set-up around it.
func BenchmarkShutdownCycle(b *testing.B) {
	const n = 1000
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	walls := make([]time.Duration, 0, b.N)
	var cpu, cancelCPU int64
	var vcsw, ivcsw int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := New(Options{Backend: Asm})
		if err != nil {
			b.Skip(err)
		}
		cleaned := 0
		err = s.Run(func() {
			never, done := NewEvent(), NewEvent()
			started := 0
			for j := 0; j < n; j++ {
				Go(func() {
					defer func() {
						if cleaned++; cleaned == n {
							done.Resolve(nil)
						}
					}()
					started++
					if _, err := Await(never); !errors.Is(err, ErrCancelled) {
						panic(err)
					}
				})
			}
			for started < n {
				_ = Yield()
			}
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(rusageThread, &ru0)
			t0, c0 := time.Now(), threadCPU()
			pprof.SetGoroutineLabels(timedLabels)
			Shutdown()
			cancelCPU += threadCPU() - c0
			if err := Yield(); !errors.Is(err, ErrCancelled) {
				panic(err)
			}
			_, _ = Await(done)
			walls = append(walls, time.Since(t0))
			_ = syscall.Getrusage(rusageThread, &ru1)
			vcsw += ru1.Nvcsw - ru0.Nvcsw
			ivcsw += ru1.Nivcsw - ru0.Nivcsw
			pprof.SetGoroutineLabels(context.Background())
			cpu += threadCPU() - c0
		})
		if err != nil && !errors.Is(err, ErrCancelled) {
			b.Fatal(err)
		}
		if cleaned != n {
			b.Fatalf("%d of %d cleanups ran", cleaned, n)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var sum time.Duration
	for _, w := range walls {
		sum += w
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(walls)*n), "ns/coroutine")
	b.ReportMetric(float64(walls[len(walls)*9/10].Nanoseconds())/n, "p90-ns/coroutine")
	b.ReportMetric(float64(cpu)/float64(len(walls)*n), "cpu-ns/coroutine")
	b.ReportMetric(float64(cancelCPU)/float64(len(walls)*n), "cancel-cpu-ns/coroutine")
	b.ReportMetric(float64(vcsw)/float64(len(walls)), "vcsw/cycle")
	b.ReportMetric(float64(ivcsw)/float64(len(walls)), "ivcsw/cycle")
}

// rusageThread is getrusage's RUSAGE_THREAD (Linux): the calling thread only.
const rusageThread = 1

// timedLabels marks the timed region in a CPU profile (-tagfocus
// region=timed).
var timedLabels = pprof.WithLabels(context.Background(), pprof.Labels("region", "timed"))
