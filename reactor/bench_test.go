package reactor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkTickEmpty is a non-blocking tick with nothing to do: the floor
// cost a scheduler pays per reactor tick (one epoll wait syscall).
func BenchmarkTickEmpty(b *testing.B) {
	l := newLoop(b, Options{})
	fired := 0
	for b.Loop() {
		n, err := l.Tick(true)
		if err != nil {
			b.Fatal(err)
		}
		fired += n
	}
	if fired != 0 {
		b.Fatalf("empty tick fired %d callbacks", fired)
	}
	b.ReportMetric(float64(l.Stats().Syscalls)/float64(l.Stats().Ticks), "syscalls/tick")
}

// BenchmarkTimerStartStop arms and disarms one timer while n others are
// pending: the waker's timeout pattern (start at suspend, stop at resume).
// A random deadline usually settles near the bottom of the heap, so this is
// the common, cheap case; BenchmarkTimerCancelRandom is the expensive one.
func BenchmarkTimerStartStop(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			l := newLoop(b, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			const span = int64(time.Hour)
			for range n {
				l.NewTimer(func() {}).Start(time.Duration(rng.Int64N(span)))
			}
			var delays [1024]time.Duration
			for i := range delays {
				delays[i] = time.Duration(rng.Int64N(span))
			}
			tm := l.NewTimer(func() { b.Fatal("benchmark timer fired") })
			i := 0
			for b.Loop() {
				tm.Start(delays[i&1023])
				tm.Stop()
				i++
			}
			if l.Active() != n {
				b.Fatalf("Active() = %d, want %d", l.Active(), n)
			}
		})
	}
}

// BenchmarkTimerCancelRandom stops a random one of n pending timers (a
// removal from anywhere in the heap, usually far from the end) and starts it
// again with a new random deadline: the cost of cancel-by-index plus insert
// when the heap no longer fits in cache.
func BenchmarkTimerCancelRandom(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			l := newLoop(b, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			const span = int64(time.Hour)
			timers := make([]*Timer, n)
			for i := range timers {
				timers[i] = l.NewTimer(func() {})
				timers[i].Start(time.Duration(rng.Int64N(span)))
			}
			type op struct {
				i int
				d time.Duration
			}
			var ops [4096]op
			for i := range ops {
				ops[i] = op{rng.IntN(n), time.Duration(rng.Int64N(span))}
			}
			i := 0
			for b.Loop() {
				o := ops[i&4095]
				timers[o.i].Stop()
				timers[o.i].Start(o.d)
				i++
			}
			if l.Active() != n {
				b.Fatalf("Active() = %d, want %d", l.Active(), n)
			}
		})
	}
}

// BenchmarkTimerFire arms a zero-delay timer and runs the tick that fires
// it, with n other timers pending: insert + pop + callback + the tick.
func BenchmarkTimerFire(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			l := newLoop(b, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			for range n {
				l.NewTimer(func() {}).Start(time.Hour + time.Duration(rng.Int64N(int64(time.Hour))))
			}
			fired := 0
			tm := l.NewTimer(func() { fired++ })
			for b.Loop() {
				tm.Start(0)
				if _, err := l.Tick(true); err != nil {
					b.Fatal(err)
				}
			}
			if fired != b.N {
				b.Fatalf("fired %d of %d", fired, b.N)
			}
		})
	}
}

// BenchmarkWakeRoundTrip is a cross-thread ping-pong between two loops, each
// owned by its own goroutine (locked to a thread): A signals B's trigger and
// blocks in Tick until B signals back. One op = two eventfd wakeups of a
// blocked epoll wait.
func BenchmarkWakeRoundTrip(b *testing.B) {
	la := newLoop(b, Options{})
	lb := newLoop(b, Options{})
	var ta, tb *Trigger
	aWoken, bWoken := false, false
	ta = la.NewTrigger(func() { aWoken = true })
	tb = lb.NewTrigger(func() { bWoken = true })
	done := make(chan error, 1)
	stop := false
	stopT := lb.NewTrigger(func() { stop = true })
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		stopT.Start()
		for {
			tb.Start()
			for !bWoken && !stop {
				if _, err := lb.Tick(false); err != nil {
					done <- err
					return
				}
			}
			if stop {
				done <- nil
				return
			}
			bWoken = false
			ta.Signal()
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		ta.Start()
		tb.Signal()
		for !aWoken {
			if _, err := la.Tick(false); err != nil {
				b.Fatal(err)
			}
		}
		aWoken = false
	}
	stopT.Signal()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPipeReadCycle is the keep-alive pattern on one loop: a write
// readies the pipe, a non-blocking tick fires the read poll, the reader
// reads and then hits EAGAIN, and re-arms the poll (no syscall).
func BenchmarkPipeReadCycle(b *testing.B) {
	l := newLoop(b, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fired := false
	p := r.NewPoll(Readable, func() { fired = true })
	msg, buf := []byte("x"), make([]byte, 64)
	start := l.Stats().Syscalls
	for b.Loop() {
		if _, err := w.TryWrite(msg); err != nil {
			b.Fatal(err)
		}
		p.Start()
		fired = false
		if _, err := l.Tick(true); err != nil {
			b.Fatal(err)
		}
		if !fired {
			b.Fatal("poll did not fire")
		}
		if _, err := r.TryRead(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := r.TryRead(buf); !errors.Is(err, ErrWouldBlock) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.Stats().Syscalls-start)/float64(b.N), "syscalls/op")
}

// BenchmarkChanRoundTripLockedThreads is the comparison for
// BenchmarkWakeRoundTrip: the same ping-pong between two goroutines locked
// to their own threads, through Go channels (futex wakeups). When both are
// about equal, the cost is the kernel waking a sleeping thread, not epoll or
// the eventfd.
func BenchmarkChanRoundTripLockedThreads(b *testing.B) {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range ping {
			pong <- struct{}{}
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
}
