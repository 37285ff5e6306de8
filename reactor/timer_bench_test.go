package reactor

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchWaiter stands for a runtime's per-coroutine record: the timer node
// embedded beside the rest of the waiter's state, one allocation per waiter.
type benchWaiter struct {
	node  TimerNode
	woken int
	_     [64]byte // the rest of a coroutine record
}

func (w *benchWaiter) OnTimer() { w.woken++ }

// closureWaiter is the same record before TimerNode: a pointer to a
// separate Timer whose callback is a closure over the record (three objects).
type closureWaiter struct {
	t     *Timer
	woken int
	_     [64]byte
}

// BenchmarkTimerNodeStartStop is BenchmarkTimerStartStop on TimerNodes: arm
// and disarm one node while n others are pending.
func BenchmarkTimerNodeStartStop(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			l := newLoop(b, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			const span = int64(time.Hour)
			for range n {
				w := new(benchWaiter)
				w.node.Init(l, w)
				w.node.Start(time.Duration(rng.Int64N(span)))
			}
			var delays [1024]time.Duration
			for i := range delays {
				delays[i] = time.Duration(rng.Int64N(span))
			}
			w := new(benchWaiter)
			w.node.Init(l, w)
			i := 0
			for b.Loop() {
				w.node.Start(delays[i&1023])
				w.node.Stop()
				i++
			}
			if l.Active() != n || w.woken != 0 {
				b.Fatalf("Active() = %d, want %d; benchmark node fired %d times", l.Active(), n, w.woken)
			}
		})
	}
}

// BenchmarkTimerFireAllDue arms n waiters at distinct random deadlines, then
// moves the (injected) clock past all of them and runs the one Tick that
// fires them all: the cost per firing of popping the heap and waking the
// waiter, which is what a Timer scenario with n sleepers pays per wake.
// Arming is outside the timed region (BenchmarkTimer*StartStop measure it).
// api=timer is the Timer API with a closure per waiter, api=node the
// embedded TimerNode.
func BenchmarkTimerFireAllDue(b *testing.B) {
	for _, api := range []string{"timer", "node"} {
		for _, n := range []int{1_000, 100_000, 1_000_000} {
			b.Run(fmt.Sprintf("api=%s/timers=%d", api, n), func(b *testing.B) {
				l, c := newFakeLoop(b)
				rng := rand.New(rand.NewPCG(1, 2))
				deadlines := make([]int64, n)
				for i := range deadlines {
					deadlines[i] = rng.Int64N(int64(n))
				}
				var arm func(base int64)
				var woken func() int
				switch api {
				case "timer":
					ws := make([]*closureWaiter, n)
					for i := range ws {
						w := new(closureWaiter)
						w.t = l.NewTimer(func() { w.woken++ })
						ws[i] = w
					}
					arm = func(base int64) {
						for i, w := range ws {
							w.t.StartAt(base + deadlines[i])
						}
					}
					woken = func() (s int) {
						for _, w := range ws {
							s += w.woken
						}
						return s
					}
				case "node":
					ws := make([]*benchWaiter, n)
					for i := range ws {
						w := new(benchWaiter)
						w.node.Init(l, w)
						ws[i] = w
					}
					arm = func(base int64) {
						for i, w := range ws {
							w.node.StartAt(base + deadlines[i])
						}
					}
					woken = func() (s int) {
						for _, w := range ws {
							s += w.woken
						}
						return s
					}
				}
				runs := 0
				for b.Loop() {
					b.StopTimer()
					arm(c.t + 1)
					c.t += int64(n) + 1
					b.StartTimer()
					got, err := l.Tick(true)
					if err != nil {
						b.Fatal(err)
					}
					if got != n {
						b.Fatalf("tick fired %d of %d due timers", got, n)
					}
					runs++
				}
				if w := woken(); w != runs*n {
					b.Fatalf("waiters woken %d times, want %d", w, runs*n)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*n), "ns/fire")
			})
		}
	}
}

// latenessWaiter records when its node fired, on the monotonic clock.
type latenessWaiter struct {
	node    TimerNode
	firedAt int64
}

func (w *latenessWaiter) OnTimer() { w.firedAt = nanotime() }

// reportLateness reports the median, 99th percentile and mean of lates (ns).
func reportLateness(b *testing.B, lates []int64) {
	if len(lates) == 0 {
		return
	}
	slices.Sort(lates)
	var sum int64
	for _, v := range lates {
		sum += v
	}
	b.ReportMetric(float64(lates[len(lates)/2]), "p50-late-ns")
	b.ReportMetric(float64(lates[len(lates)*99/100]), "p99-late-ns")
	b.ReportMetric(float64(sum)/float64(len(lates)), "mean-late-ns")
}

// BenchmarkTimerLateness blocks on a lone timer of the given delay and
// reports how late it fired (ns past the deadline, read in the handler) as
// p50, p99 and mean over all iterations. The three waits:
//
//	epoll_pwait2/slack=default  the thread's default timer slack (50 µs)
//	epoll_pwait2/slack=1ns      Options.OwnThread: the loop sets it to 1 ns
//	timerfd                     Options.UseTimerfd: not subject to slack
//
// The goroutine is locked to its thread in all three, as a runtime's loop
// thread would be, so the slack set is the slack the wait sees.
func BenchmarkTimerLateness(b *testing.B) {
	for _, wait := range []string{"epoll_pwait2/slack=default", "epoll_pwait2/slack=1ns", "timerfd"} {
		for _, d := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond} {
			b.Run(fmt.Sprintf("wait=%s/delay=%v", wait, d), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				// 0 = the thread's default slack (inherited, 50 µs normally).
				if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0); err != nil {
					b.Skip("PR_SET_TIMERSLACK: ", err)
				}
				l, err := NewWithOptions(Options{UseTimerfd: wait == "timerfd", OwnThread: wait == "epoll_pwait2/slack=1ns"})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close() // before UnlockOSThread: restores the slack on this thread
				wi := l.WaitInfo()
				if wait != "timerfd" && wi.Wait != "epoll_pwait2" {
					b.Skip(l.WaitMethod())
				}
				if wi.SlackSet != (wait == "epoll_pwait2/slack=1ns") {
					b.Fatalf("%s: %s", wait, l.WaitMethod())
				}
				var w latenessWaiter
				w.node.Init(l, &w)
				lates := make([]int64, 0, 1<<14)
				for b.Loop() {
					l.UpdateTime()
					w.node.Start(d)
					for w.firedAt = 0; w.firedAt == 0; {
						if _, err := l.Tick(false); err != nil {
							b.Fatal(err)
						}
					}
					lates = append(lates, w.firedAt-w.node.Deadline())
				}
				reportLateness(b, lates)
			})
		}
	}
}

// BenchmarkGoSleepLateness is the comparison for BenchmarkTimerLateness:
// how late Go's own time.Sleep wakes for the same delays. The runtime's
// netpoller waits in whole milliseconds (runtime/netpoll_epoll.go rounds a
// positive delay below 1 ms up to 1 ms), which is what our loop avoids.
func BenchmarkGoSleepLateness(b *testing.B) {
	for _, d := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond} {
		b.Run(fmt.Sprintf("delay=%v", d), func(b *testing.B) {
			lates := make([]int64, 0, 1<<12)
			for b.Loop() {
				start := nanotime()
				time.Sleep(d)
				lates = append(lates, nanotime()-start-int64(d))
			}
			reportLateness(b, lates)
		})
	}
}

// coalesceWaiter is one sleeper of BenchmarkTimerCoalesce: on firing it
// records its lateness and sleeps again for its next random duration.
type coalesceWaiter struct {
	node  TimerNode
	rng   *rand.Rand
	left  *int
	lates *[]int64
}

func (w *coalesceWaiter) OnTimer() {
	now := nanotime()
	*w.lates = append(*w.lates, now-w.node.Deadline())
	if *w.left > 0 {
		*w.left--
		w.sleep()
	}
}

// sleep arms the node for a duration uniform in 50 µs–5 ms (the Timer
// scenario's) from a fresh clock reading.
func (w *coalesceWaiter) sleep() {
	w.node.StartAt(nanotime() + int64(50*time.Microsecond) + w.rng.Int64N(int64(4950*time.Microsecond)))
}

// BenchmarkTimerCoalesce measures the coalescing window's trade-off
// (Options.Coalesce, docs/design.md §4): timers=n waiters sleep random
// 50 µs–5 ms durations over and over, as the Timer scenario's coroutines do,
// on a loop whose thread has 1 ns slack (Options.OwnThread), with the window
// off or at 10, 20 or 50 µs. One op is one firing. It reports the process
// CPU per firing (getrusage: every thread, user and system, as benchrun's
// cpu-ns/wake), the blocking waits per firing, and the lateness p50/p99.
func BenchmarkTimerCoalesce(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, w := range []time.Duration{-1, 10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond} {
			name := "off"
			if w > 0 {
				name = w.String()
			}
			b.Run(fmt.Sprintf("timers=%d/coalesce=%s", n, name), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				l, err := NewWithOptions(Options{OwnThread: true, Coalesce: w})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close() // before UnlockOSThread: restores the slack
				left := b.N
				lates := make([]int64, 0, b.N+n)
				ws := make([]coalesceWaiter, n)
				for i := range ws {
					ws[i] = coalesceWaiter{rng: rand.New(rand.NewPCG(uint64(i), 7)), left: &left, lates: &lates}
					ws[i].node.Init(l, &ws[i])
				}
				for i := range ws {
					left--
					ws[i].sleep()
				}
				b.ResetTimer()
				cpu0 := processCPU()
				blocks := 0
				for len(lates) < b.N {
					if _, err := l.Tick(false); err != nil {
						b.Fatal(err)
					}
					blocks++
				}
				cpu := processCPU() - cpu0
				b.StopTimer()
				for i := range ws {
					ws[i].node.Stop()
				}
				b.ReportMetric(float64(cpu)/float64(len(lates)), "cpu-ns/fire")
				b.ReportMetric(float64(blocks)/float64(len(lates)), "ticks/fire")
				reportLateness(b, lates)
			})
		}
	}
}

// processCPU is the process's user and system CPU time in ns.
func processCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTimerFloor compares, on one locked thread with 1 ns slack, the
// lateness of the loop's blocking wait (a lone TimerNode, Tick(false);
// wait=loop) with that of the OS's own sleep (clock_nanosleep, the call
// benchrun's timer-floor-os line measures; wait=nanosleep), for a fixed
// 50 µs sleep (the floor line's) and for sleeps uniform in 50 µs–5 ms (the
// Timer scenario's). Longer sleeps let the CPU idle deeper, so the floor
// depends on the distribution: compare a row's Timer n=1 lateness with the
// floor of the same distribution. The gap between wait=loop and
// wait=nanosleep is what the loop adds (the Go syscall wrapper, the clock
// reads, the timer phase).
func BenchmarkTimerFloor(b *testing.B) {
	for _, dist := range []string{"50µs", "50µs-5ms"} {
		for _, wait := range []string{"nanosleep", "loop"} {
			b.Run("sleep="+dist+"/wait="+wait, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				prev, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
				if err != nil {
					b.Skip("PR_GET_TIMERSLACK: ", err)
				}
				if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
					b.Skip("PR_SET_TIMERSLACK: ", err)
				}
				defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(prev), 0, 0, 0)
				l, err := NewWithOptions(Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				if wait == "loop" && l.WaitInfo().Wait != "epoll_pwait2" {
					b.Skip(l.WaitMethod())
				}
				rng := rand.New(rand.NewPCG(1, 2))
				next := func() int64 {
					if dist == "50µs" {
						return int64(50 * time.Microsecond)
					}
					return int64(50*time.Microsecond) + rng.Int64N(int64(4950*time.Microsecond))
				}
				var w latenessWaiter
				w.node.Init(l, &w)
				lates := make([]int64, 0, 1<<12)
				for b.Loop() {
					d := next()
					if wait == "nanosleep" {
						deadline := nanotime() + d
						ts := unix.NsecToTimespec(d)
						for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
						}
						lates = append(lates, nanotime()-deadline)
						continue
					}
					l.UpdateTime()
					w.node.Start(time.Duration(d))
					for w.firedAt = 0; w.firedAt == 0; {
						if _, err := l.Tick(false); err != nil {
							b.Fatal(err)
						}
					}
					lates = append(lates, w.firedAt-w.node.Deadline())
				}
				reportLateness(b, lates)
			})
		}
	}
}

// churnWaiter re-arms its node from OnTimer with the next of a fixed table
// of delays, as a Timer-scenario coroutine sleeps again as soon as it wakes.
type churnWaiter struct {
	node   TimerNode
	delays []time.Duration
	k      *int
	woken  int
	_      [256]byte // the rest of a coroutine record: the waiters do not share cache lines
}

func (w *churnWaiter) OnTimer() {
	w.woken++
	*w.k++
	w.node.Start(w.delays[*w.k&(len(w.delays)-1)])
}

// BenchmarkTimerChurn is the Timer scenario's steady state on the heap
// alone: n waiters sleep random 50 µs–5 ms back to back; the injected clock
// advances 100 µs (the schedulers' tick interval) per phase, and each phase
// fires the due waiters, each re-arming at once. One op is one firing plus
// one start: what a sleep-and-wake costs the timer heap with n sleepers.
// Unlike BenchmarkTimerFireAllDue the heap stays at n entries and the new
// deadlines land all over it, not at its bottom.
func BenchmarkTimerChurn(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) { timerChurn(b, n, 100*time.Microsecond) })
	}
}

// BenchmarkTimerChurnPhase is BenchmarkTimerChurn at 10000 timers with
// shorter phases, so that fewer timers are due per phase (about 8, 20, 40, 100
// and 200 against 400 at 100 µs): where runTimers' batch stops paying
// (batchMin; REACTOR_BATCH_MIN and REACTOR_BATCH_HEAP_MIN override the
// thresholds for such a sweep).
func BenchmarkTimerChurnPhase(b *testing.B) {
	for _, phase := range []time.Duration{2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond} {
		b.Run(fmt.Sprintf("timers=10000/phase=%v", phase), func(b *testing.B) { timerChurn(b, 10_000, phase) })
	}
}

// timerChurn is BenchmarkTimerChurn with n waiters and the clock advancing
// phase per phase.
func timerChurn(b *testing.B, n int, phase time.Duration) {
	l, c := newFakeLoop(b)
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, 1<<16)
	for i := range delays {
		delays[i] = 50*time.Microsecond + time.Duration(rng.Int64N(int64(5*time.Millisecond-50*time.Microsecond)))
	}
	k := 0
	ws := make([]*churnWaiter, n)
	for i := range ws {
		w := &churnWaiter{delays: delays, k: &k}
		w.node.Init(l, w)
		k++
		w.node.Start(delays[k&(len(delays)-1)])
		ws[i] = w
	}
	// Warm up to the steady spread of deadlines.
	for range 100 {
		c.t += int64(100 * time.Microsecond)
		l.UpdateTime()
		l.runTimers()
	}
	fired := 0
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	b.ResetTimer()
	for fired < b.N {
		c.t += int64(phase)
		l.UpdateTime()
		fired += l.runTimers()
	}
	b.StopTimer()
	cpu := threadCPU() - cpu0
	if l.Active() != n {
		b.Fatalf("Active() = %d, want %d", l.Active(), n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fired), "ns/fire")
	b.ReportMetric(float64(cpu)/float64(fired), "cpu-ns/fire")
}

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID):
// unlike the wall clock, it does not count the time another process on a
// shared machine had the core. The caller locks its OS thread.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// The batch thresholds can be overridden for a sweep of
// BenchmarkTimerChurnPhase (see there).
func init() {
	if v := os.Getenv("REACTOR_BATCH_MIN"); v != "" {
		batchMin, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("REACTOR_BATCH_HEAP_MIN"); v != "" {
		batchHeapMin, _ = strconv.Atoi(v)
	}
}
