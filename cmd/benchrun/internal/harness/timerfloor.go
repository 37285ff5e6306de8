package harness

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// The machine's own timer floor: how late a plain thread wakes from a short
// sleep, with nothing of ours in the way (no Go scheduler, no reactor). It
// is what any latency figure of the run stands on; a row's timer lateness
// near it is the machine's, not the row's. Measured as cyclictest does:
// a thread with its timer slack set to 1 ns (the default 50 µs would be
// added to every wake) sleeps with clock_nanosleep on CLOCK_MONOTONIC and
// reads the clock when it wakes.

// timerFloor is the distribution of the lateness of a short sleep.
type timerFloor struct {
	sleep    time.Duration
	slack    int // timer slack in effect while sampling, read back, in ns
	cpu      int // CPU the sampling thread was pinned to, -1 for none
	samples  []time.Duration
	p50, p99 time.Duration
}

// measureTimerFloor sleeps n times for sleep on a locked thread with 1 ns
// timer slack (pinned to cpu when cpu >= 0) and returns how late each wake
// was. The thread is thrown away afterwards (the goroutine exits locked),
// so its slack and affinity do not leak into the runtime's thread pool.
func measureTimerFloor(n int, sleep time.Duration, cpu int) (*timerFloor, error) {
	if n < 1 || sleep <= 0 {
		return nil, fmt.Errorf("timer floor: want n >= 1 and a positive sleep, got n=%d sleep=%v", n, sleep)
	}
	type result struct {
		tf  *timerFloor
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with the goroutine.
		tf, err := sampleTimerFloor(n, sleep, cpu)
		done <- result{tf, err}
	}()
	r := <-done
	return r.tf, r.err
}

func sampleTimerFloor(n int, sleep time.Duration, cpu int) (*timerFloor, error) {
	if cpu >= 0 {
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			return nil, fmt.Errorf("timer floor: pinning to cpu %d: %w", cpu, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("timer floor: prctl(PR_SET_TIMERSLACK, 1): %w", err)
	}
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("timer floor: prctl(PR_GET_TIMERSLACK): %w", err)
	}
	tf := &timerFloor{sleep: sleep, slack: slack, cpu: cpu, samples: make([]time.Duration, 0, n)}
	ts := unix.NsecToTimespec(int64(sleep))
	for range n {
		var t0, t1 unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t0); err != nil {
			return nil, err
		}
		for {
			// A relative sleep restarted after a signal would sleep
			// longer than asked: start over instead.
			err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil)
			if err == nil {
				break
			}
			if err != unix.EINTR {
				return nil, fmt.Errorf("timer floor: clock_nanosleep: %w", err)
			}
			if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t0); err != nil {
				return nil, err
			}
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t1); err != nil {
			return nil, err
		}
		tf.samples = append(tf.samples, time.Duration(t1.Nano()-t0.Nano())-sleep)
	}
	sorted := slices.Clone(tf.samples)
	slices.Sort(sorted)
	tf.p50 = sorted[rankIndex(len(sorted), 0.50)]
	tf.p99 = sorted[rankIndex(len(sorted), 0.99)]
	return tf, nil
}

// rankIndex is the nearest-rank index of quantile q in a sorted sample of
// n: the smallest value with at least q of the sample at or below it.
func rankIndex(n int, q float64) int {
	i := int(math.Ceil(float64(n)*q)) - 1
	return max(0, min(n-1, i))
}

// config is the timer-floor-os config value.
func (tf *timerFloor) config() string {
	where := "unpinned"
	if tf.cpu >= 0 {
		where = fmt.Sprintf("cpu%d", tf.cpu)
	}
	return fmt.Sprintf("p50=%dns p99=%dns (%d sleeps of %v, clock_nanosleep, slack %dns, %s)",
		tf.p50.Nanoseconds(), tf.p99.Nanoseconds(), len(tf.samples), tf.sleep, tf.slack, where)
}
