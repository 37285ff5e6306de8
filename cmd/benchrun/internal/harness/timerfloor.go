package harness

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	_ "unsafe" // go:linkname nanotime

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/timerslack"
	"github.com/corobench/corobench/scenarios/bodies"
)

// The machine's own timer floor: how late a plain thread wakes from the
// Timer scenario's sleeps at n=1, with nothing of ours in the way (no Go
// scheduler, no reactor). It is what any latency figure of the run stands
// on; a row's timer lateness near it is the machine's, not the row's.
// Measured as cyclictest does, with the rows' own settings: a thread on the
// cells' CPU with its timer slack lowered to what our runtimes' Run sets
// (timerslack.Slack; the default 50 µs would be added to every wake) sleeps
// with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until each deadline
// and reads the clock when it wakes.
//
// The sleeps are Timer's at n=1, from its one definition
// (bodies.TimerWindow): the durations of coroutine 0's windows, each sleep
// to an absolute deadline (its start plus its duration), lateness = wake −
// deadline. The floor depends on the distribution: a sleep of milliseconds
// lets the CPU (and the hypervisor) idle deeper than one of 50 µs and
// wakes later, so a floor of fixed short sleeps would read lower than the
// same machine under Timer's sleeps. Its p50 and p99 come from the bodies'
// own HdrHistogram (bodies.LatencyPercentiles), so the Timer cells and the
// floor are summarised alike. See docs/design.md §6 (Measurement).

// nanotime is the Go runtime's CLOCK_MONOTONIC reading through the vDSO, the
// clock the Timer bodies read (time.Since) and the one TIMER_ABSTIME
// deadlines are on; unix.ClockGettime would be a real system call, whose
// cost would land in every sample. Twin of reactor's nanotime (sys.go).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// timerFloor is the distribution of the lateness of Timer's n=1 sleeps on a
// bare thread.
type timerFloor struct {
	windows  int
	slack    int // timer slack in effect while sampling, read back, in ns
	cpu      int // CPU the sampling thread was pinned to, -1 for none
	samples  []int64
	mean     time.Duration // mean of the sleeps' durations
	p50, p99 int64         // ns
	// cpuPerSleep is the sampling thread's CPU time (user and system,
	// CLOCK_THREAD_CPUTIME_ID) per sleep: what the kernel charges a bare
	// thread for going to sleep and being woken by its timer, the floor
	// under a Timer cell's cpu-ns/wake at light load, where the loop
	// sleeps between wakes as this thread does (0: not read).
	cpuPerSleep time.Duration
}

// measureTimerFloor sleeps the first windows windows of Timer's n=1
// schedule on a locked thread with the rows' timer slack and returns how
// late each wake was. The thread gets its slack back afterwards.
//
// With cpu >= 0 the whole process runs on cpu while it measures, every
// thread of it, as a pinned cell's process does (pin.go), and its threads
// are given after when it is done. Not only the sampling thread: where
// the rest of the process runs changes the floor, presumably because the
// runtime's own threads (sysmon) wake on their CPU now and then, and a CPU
// that nothing else wakes idles deeper and wakes later (not verified). On
// the 2-vCPU VM these figures come from, the floor read 20.6–21.4 µs at
// p50 with the process's other threads on cpu0 and 15.7–16.4 µs with all
// of them on cpu1 (four rounds each, alternated, on a quiet machine): the
// Timer cells' processes run the second way.
func measureTimerFloor(windows, cpu int, after *unix.CPUSet) (_ *timerFloor, err error) {
	if windows < 1 {
		return nil, fmt.Errorf("timer floor: want at least one window, got %d", windows)
	}
	if cpu >= 0 {
		var one unix.CPUSet
		one.Set(cpu)
		if err := setThreads(&one); err != nil {
			return nil, fmt.Errorf("timer floor: moving benchrun onto cpu %d: %w", cpu, err)
		}
		defer func() {
			if aerr := settleThreads(after); aerr != nil && err == nil {
				err = fmt.Errorf("timer floor: moving benchrun off cpu %d again: %w", cpu, aerr)
			}
		}()
	}
	type result struct {
		tf  *timerFloor
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tf, err := sampleTimerFloor(windows, cpu)
		done <- result{tf, err}
	}()
	r := <-done
	return r.tf, r.err
}

// settleThreads gives every thread of the process the CPU set set, pass
// after pass, until a pass finds all of them there. One pass (setThreads)
// is not enough after the floor: a thread still on the floor's CPU can
// start a new one (the runtime starts Ms as it likes), which inherits that
// CPU, after the pass has listed the threads. A pass that moves nothing
// means no thread was left to start one there. Twin of setThreads (pin.go),
// which sets every thread once.
func settleThreads(set *unix.CPUSet) error {
	for range 100 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing benchrun's threads: %w", err)
		}
		moved := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var now unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &now); err != nil {
				continue // gone (ESRCH)
			}
			if now == *set {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
	return errors.New("threads kept appearing outside the set after 100 passes")
}

// sampleTimerFloor runs on a locked thread: it pins the thread, lowers its
// slack, sleeps the schedule, and puts the slack back (the affinity is the
// caller's to restore, with the rest of the process's).
func sampleTimerFloor(windows, cpu int) (*timerFloor, error) {
	if cpu >= 0 {
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			return nil, fmt.Errorf("timer floor: pinning to cpu %d: %w", cpu, err)
		}
	}
	prev, err := timerslack.Lower()
	if err != nil {
		return nil, fmt.Errorf("timer floor: prctl(PR_SET_TIMERSLACK, %d): %w", timerslack.Slack, err)
	}
	defer timerslack.Restore(prev)
	slack, err := timerslack.Current()
	if err != nil {
		return nil, fmt.Errorf("timer floor: prctl(PR_GET_TIMERSLACK): %w", err)
	}
	tf := &timerFloor{windows: windows, slack: int(slack), cpu: cpu}
	var slept time.Duration
	cpu0, err := threadCPU()
	if err != nil {
		return nil, err
	}
	j := 0
	for range windows {
		durs, next := bodies.TimerWindow(0, j)
		for _, d := range durs {
			// Each sleep counts from the last wake, not from the
			// window's start as in the Timer bodies: a sleep there is
			// shorter by the last wake's lateness (tens of µs against
			// milliseconds, so the durations are the same), but a
			// stall of the thread (another process on the CPU) would
			// make every later deadline of the window late too, and
			// two stalls in the floor's second would then be its p99.
			// Each sample here is one wake's lateness.
			deadline := nanotime() + int64(d)
			if err := sleepUntil(deadline); err != nil {
				return nil, err
			}
			late := nanotime() - deadline
			if late < 0 {
				return nil, fmt.Errorf("timer floor: clock_nanosleep to %d woke %d ns early", deadline, -late)
			}
			tf.samples = append(tf.samples, late)
			slept += d
		}
		j = next
	}
	cpu1, err := threadCPU()
	if err != nil {
		return nil, err
	}
	tf.mean = slept / time.Duration(len(tf.samples))
	tf.cpuPerSleep = (cpu1 - cpu0) / time.Duration(len(tf.samples))
	tf.p50, tf.p99 = bodies.LatencyPercentiles(tf.samples)
	return tf, nil
}

// threadCPU is the calling thread's CPU time, user and system.
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("timer floor: clock_gettime(CLOCK_THREAD_CPUTIME_ID): %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// sleepUntil sleeps until CLOCK_MONOTONIC reads deadline (ns). A deadline
// already past returns at once, as a Timer body behind its schedule yields
// instead of sleeping. An absolute sleep interrupted by a signal is simply
// restarted: its deadline does not move.
func sleepUntil(deadline int64) error {
	ts := unix.NsecToTimespec(deadline)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err == nil {
			return nil
		}
		if err != unix.EINTR {
			return fmt.Errorf("timer floor: clock_nanosleep: %w", err)
		}
	}
}

// config is the timer-floor-os config value. It starts "p50=…ns p99=…ns",
// which the report parses; the rest says what was measured.
func (tf *timerFloor) config() string {
	where := "unpinned"
	if tf.cpu >= 0 {
		where = fmt.Sprintf("cpu%d, the whole process", tf.cpu)
	}
	return fmt.Sprintf("p50=%dns p99=%dns cpu=%dns/sleep (%d sleeps of Timer n=1's schedule, %d windows, mean %v, clock_nanosleep to each deadline, slack %dns, %s; cpu: the sleeping thread's CPU time per sleep)",
		tf.p50, tf.p99, tf.cpuPerSleep.Nanoseconds(), len(tf.samples), tf.windows, tf.mean.Round(time.Microsecond), tf.slack, where)
}
