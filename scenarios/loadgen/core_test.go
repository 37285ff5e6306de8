package loadgen

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcStatIdleReadsIdleAndIOWait(t *testing.T) {
	stat := []byte("cpu  10 0 20 300 4 0 5 0 0 0\ncpu0 1 2 3 40 5 6 7 8 0 0\ncpu1 9 9 9 100 7 9 9 0 0 0\ncpu10 1 1 1 999 1 1 1 0 0 0\nintr 1 2\n")
	for cpu, want := range map[int]int64{0: 45, 1: 107, 10: 1000} {
		got, err := procStatIdle(stat, cpu)
		if err != nil || got != want {
			t.Errorf("procStatIdle(cpu%d) = %d, %v; want %d", cpu, got, err, want)
		}
	}
	if _, err := procStatIdle(stat, 2); err == nil || !strings.Contains(err.Error(), "no line for cpu2") {
		t.Errorf("cpu2: %v, want an error naming the missing line", err)
	}
	if _, err := procStatIdle([]byte("cpu3 1 2 3\n"), 3); err == nil || !strings.Contains(err.Error(), "3 fields") {
		t.Errorf("short line: %v, want an error naming the field count", err)
	}
}

// TestCostPerRequestIsBusyTimeOverRequests checks the estimator on
// hand-computed samples: 100 ms of wall time of which 60 ms idle over
// 10000 requests is 4000 ns per request (a core at that cost sustains
// 250k req/s).
func TestCostPerRequestIsBusyTimeOverRequests(t *testing.T) {
	a := coreSample{at: 1_000_000_000, idle: 5_000_000_000, proc: 7}
	b := coreSample{at: 1_100_000_000, idle: 5_060_000_000, proc: 7 + 30_000_000}
	for _, c := range []struct {
		src  CoreSource
		want float64
	}{{CoreCPUIdle, 4000}, {CoreProcStat, 4000}, {CoreProcess, 3000}} {
		got, err := costPerRequest(c.src, a, b, 10000)
		if err != nil || got != c.want {
			t.Errorf("source %d: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	// An idle core whose idle counter ran a little ahead of the clock
	// costs nothing, not a negative time.
	if got, _ := costPerRequest(CoreCPUIdle, a, coreSample{at: a.at + 1000, idle: a.idle + 2000}, 1); got != 0 {
		t.Errorf("idle core: %v, want 0", got)
	}
	if _, err := costPerRequest(CoreCPUIdle, a, b, 0); err == nil {
		t.Error("no requests: no error")
	}
	if _, err := costPerRequest(CoreCPUIdle, b, a, 1); err == nil {
		t.Error("an empty window: no error")
	}
}

// TestCoreMeterReadsItsSources points the meter at files of its own: the
// cpuidle residencies (µs, summed over the states) first, /proc/stat's
// idle + iowait (10 ms ticks) when the core has no cpuidle states, and the
// process's CPU time without a core.
func TestCoreMeterReadsItsSources(t *testing.T) {
	dir := t.TempDir()
	oldRoot, oldStat := cpuSysRoot, procStatPath
	t.Cleanup(func() { cpuSysRoot, procStatPath = oldRoot, oldStat })
	cpuSysRoot, procStatPath = filepath.Join(dir, "cpu"), filepath.Join(dir, "stat")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "cpu/cpu1/cpuidle/state0/time"), "1000\n")
	write(filepath.Join(dir, "cpu/cpu1/cpuidle/state1/time"), "2500\n")
	write(procStatPath, "cpu  1 1 1 1 1 1 1 1 0 0\ncpu0 1 2 3 40 5 6 7 8 0 0\ncpu1 1 2 3 70 0 0 0 0 0 0\n")

	m := OpenCoreMeter(1)
	defer m.Close()
	if m.source != CoreCPUIdle {
		t.Fatalf("cpu1 with cpuidle states: source %d, want cpuidle", m.source)
	}
	s, err := m.sample()
	if err != nil || s.idle != 3_500_000 {
		t.Fatalf("cpu1: idle %d ns, %v; want 3500000 (1000 + 2500 µs)", s.idle, err)
	}

	m0 := OpenCoreMeter(0)
	defer m0.Close()
	if m0.source != CoreProcStat {
		t.Fatalf("cpu0 without cpuidle states: source %d, want /proc/stat", m0.source)
	}
	if s, err := m0.sample(); err != nil || s.idle != 450_000_000 {
		t.Fatalf("cpu0: idle %d ns, %v; want 450000000 (40 + 5 ticks of 10 ms)", s.idle, err)
	}

	if m5 := OpenCoreMeter(5); m5.source != CoreProcess {
		t.Errorf("cpu5, in neither source: source %d, want the process's CPU time", m5.source)
	}
	if mp := OpenCoreMeter(-1); mp.source != CoreProcess {
		t.Errorf("no core: source %d, want the process's CPU time", mp.source)
	}
}

// TestCoreMeterCountsABusyLoop pins this thread to a core and spins there
// for 30 ms of its own CPU time between two samples: the core's busy time
// must hold at least that much, and no more than the wall time between
// the samples. A meter reading the wrong core, or idle residency in the
// wrong unit, fails it.
func TestCoreMeterCountsABusyLoop(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := 0; c < len(orig)*64; c++ {
		if orig.IsSet(c) {
			cpu = c
			break
		}
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &orig)
	m := OpenCoreMeter(cpu)
	defer m.Close()
	if m.source == CoreProcess {
		t.Skipf("cpu%d has neither cpuidle states nor a /proc/stat line", cpu)
	}
	const burn = 30 * time.Millisecond
	m.Begin()
	t0 := threadCPU()
	for threadCPU()-t0 < burn {
	}
	wall := monotonic() - m.start.at
	cost, err := m.End(1)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/stat's idle moves in 10 ms steps.
	slack := 0.0
	if m.source == CoreProcStat {
		slack = float64(20 * time.Millisecond)
	}
	if cost < float64(burn)-slack || cost > float64(wall)+slack+float64(time.Millisecond) {
		t.Errorf("cpu%d (source %d): busy %v over a window of %v holding %v of this thread's CPU time", cpu, m.source, time.Duration(cost), time.Duration(wall), burn)
	}
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
