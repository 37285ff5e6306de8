package bodies

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
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
		src  coreSource
		want float64
	}{{coreCPUIdle, 4000}, {coreProcStat, 4000}, {coreProcess, 3000}} {
		got, err := costPerRequest(c.src, a, b, 10000)
		if err != nil || got != c.want {
			t.Errorf("source %d: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	// An idle core whose idle counter ran a little ahead of the clock
	// costs nothing, not a negative time.
	if got, _ := costPerRequest(coreCPUIdle, a, coreSample{at: a.at + 1000, idle: a.idle + 2000}, 1); got != 0 {
		t.Errorf("idle core: %v, want 0", got)
	}
	if _, err := costPerRequest(coreCPUIdle, a, b, 0); err == nil {
		t.Error("no requests: no error")
	}
	if _, err := costPerRequest(coreCPUIdle, b, a, 1); err == nil {
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

	m := openCoreMeter(1)
	defer m.close()
	if m.source != coreCPUIdle {
		t.Fatalf("cpu1 with cpuidle states: source %d, want cpuidle", m.source)
	}
	s, err := m.sample()
	if err != nil || s.idle != 3_500_000 {
		t.Fatalf("cpu1: idle %d ns, %v; want 3500000 (1000 + 2500 µs)", s.idle, err)
	}

	m0 := openCoreMeter(0)
	defer m0.close()
	if m0.source != coreProcStat {
		t.Fatalf("cpu0 without cpuidle states: source %d, want /proc/stat", m0.source)
	}
	if s, err := m0.sample(); err != nil || s.idle != 450_000_000 {
		t.Fatalf("cpu0: idle %d ns, %v; want 450000000 (40 + 5 ticks of 10 ms)", s.idle, err)
	}

	if m5 := openCoreMeter(5); m5.source != coreProcess {
		t.Errorf("cpu5, in neither source: source %d, want the process's CPU time", m5.source)
	}
	if mp := openCoreMeter(-1); mp.source != coreProcess {
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
	m := openCoreMeter(cpu)
	defer m.close()
	if m.source == coreProcess {
		t.Skipf("cpu%d has neither cpuidle states nor a /proc/stat line", cpu)
	}
	const burn = 30 * time.Millisecond
	m.begin()
	t0 := threadCPU()
	for threadCPU()-t0 < burn {
	}
	wall := monoNow() - m.start.at
	cost, err := m.end(1)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/stat's idle moves in 10 ms steps.
	slack := 0.0
	if m.source == coreProcStat {
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

// TestEchoReportsItsServerCost runs one echo cell per kind of body: each
// must report a positive cpu-ns/req, the metric the report's capacity
// estimate (LoadSweep.Capacity) reads.
func TestEchoReportsItsServerCost(t *testing.T) {
	if Echo.Load.Capacity != echoCostUnit {
		t.Fatalf("Echo.Load.Capacity = %q, want %q", Echo.Load.Capacity, echoCostUnit)
	}
	idx := -1
	for i, m := range Echo.Metrics {
		if m.Unit == echoCostUnit {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("Echo's metrics lack %s", echoCostUnit)
	}
	for _, row := range []scenarios.Row{scenarios.Stackless, scenarios.GoroutineSingle} {
		t.Run(string(row), func(t *testing.T) {
			withRowGOMAXPROCS(t, row)
			sm, err := measureEcho(row, map[string]string{"c": "4", "rate": "20000"}, testLoadgen)
			if err != nil {
				t.Fatal(err)
			}
			if v := sm.Values[idx]; !(v > 0) {
				t.Errorf("%s = %v, want a positive time", echoCostUnit, v)
			}
		})
	}
}
