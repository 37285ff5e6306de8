package harness

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/cpulist"
	"github.com/corobench/corobench/internal/timerslack"
	"github.com/corobench/corobench/scenarios/bodies"
)

// TestTimerFloor: the floor sleeps Timer's n=1 schedule (every sleep of
// its first windows, to absolute deadlines, none early), with the rows'
// timer slack, on the CPU asked, without touching the caller's slack, and
// its line says so in a form the report parses.
func TestTimerFloor(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := timerslack.Current()
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpus := cpulist.Of(&set)
	cpu := cpus[len(cpus)-1]
	const windows = 3
	// What the schedule holds: the sleeps of coroutine 0's first windows.
	var want int
	var total time.Duration
	for w, j := 0, 0; w < windows; w++ {
		durs, next := bodies.TimerWindow(0, j)
		want += len(durs)
		for _, d := range durs {
			total += d
		}
		j = next
	}
	// The whole process runs on cpu while measuring, and its threads get
	// after back: here the set without cpu, where benchrun keeps them
	// during a run (all of it on a one-CPU machine).
	after := set
	if len(cpus) > 1 {
		after.Clear(cpu)
	}
	t.Cleanup(func() { setThreads(&set) })
	start := time.Now()
	tf, err := measureTimerFloor(windows, cpu, &after)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for tid, got := range threadsNotOn(t, after) {
		t.Errorf("thread %d on %v after the floor, want %v", tid, cpulist.Of(&got), cpulist.Of(&after))
	}
	if len(tf.samples) != want || tf.slack != timerslack.Slack {
		t.Fatalf("%d samples with slack %dns, want %d (Timer n=1's first %d windows) with %dns", len(tf.samples), tf.slack, want, windows, timerslack.Slack)
	}
	// Each window's deadlines add up its durations from its start, so
	// the whole took at least their sum: a relative sleep cut short, or
	// a schedule not followed, would not.
	if elapsed < total {
		t.Errorf("the floor took %v, under the %v its sleeps add up to", elapsed, total)
	}
	if tf.mean != total/time.Duration(want) {
		t.Errorf("mean sleep %v, want %v", tf.mean, total/time.Duration(want))
	}
	for _, s := range tf.samples {
		if s < 0 { // clock_nanosleep never returns early
			t.Fatalf("a sleep woke %dns early", -s)
		}
	}
	if p50, p99 := bodies.LatencyPercentiles(tf.samples); tf.p50 != p50 || tf.p99 != p99 || p50 > p99 {
		t.Errorf("p50 %d p99 %d, want the bodies' percentiles %d %d", tf.p50, tf.p99, p50, p99)
	}
	// The thread ran between its sleeps (clock reads, the syscalls), so
	// it has some CPU time per sleep; it slept, so far less than a sleep.
	if tf.cpuPerSleep <= 0 || tf.cpuPerSleep >= tf.mean/2 {
		t.Errorf("CPU per sleep %v: want above 0 and well under the mean sleep %v", tf.cpuPerSleep, tf.mean)
	}
	cfg := tf.config()
	wantCfg := fmt.Sprintf("p50=%dns p99=%dns cpu=%dns/sleep (%d sleeps of Timer n=1's schedule, 3 windows, mean %v, clock_nanosleep to each deadline, slack 1ns, cpu%d, the whole process; cpu: the sleeping thread's CPU time per sleep)",
		tf.p50, tf.p99, tf.cpuPerSleep.Nanoseconds(), want, tf.mean.Round(time.Microsecond), cpu)
	if cfg != wantCfg {
		t.Errorf("config %q, want %q", cfg, wantCfg)
	}
	// The measuring thread's slack stays on that thread.
	if after, _ := timerslack.Current(); after != before {
		t.Errorf("the caller's timer slack changed from %d to %d", before, after)
	}
	if _, err := measureTimerFloor(0, -1, nil); err == nil {
		t.Error("0 windows measured without error")
	}
}

// The report reads the floor from the line's start.
func TestTimerFloorConfigParses(t *testing.T) {
	tf := &timerFloor{windows: 100, slack: 1, cpu: -1, samples: make([]int64, 437), mean: 2524 * time.Microsecond, p50: 24111, p99: 40123, cpuPerSleep: 21500}
	want := "p50=24111ns p99=40123ns cpu=21500ns/sleep (437 sleeps of Timer n=1's schedule, 100 windows, mean 2.524ms, clock_nanosleep to each deadline, slack 1ns, unpinned; cpu: the sleeping thread's CPU time per sleep)"
	if got := tf.config(); got != want {
		t.Errorf("config %q, want %q", got, want)
	}
}
