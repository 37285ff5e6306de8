package harness

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// twoCPUs returns two CPUs this process may use, or skips the test.
func twoCPUs(t *testing.T) (a, b int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpus := cpuList(set)
	if len(cpus) < 2 {
		t.Skip("needs 2 CPUs allowed")
	}
	return cpus[0], cpus[len(cpus)-1]
}

// threadAffinities maps each thread of this process to its CPU list.
func threadAffinities(t *testing.T) map[int]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil {
			out[tid] = fmtCPUs(set)
		}
	}
	return out
}

// fmtCPUs is set as a comparable string.
func fmtCPUs(set unix.CPUSet) string {
	var b strings.Builder
	for _, c := range cpuList(set) {
		b.WriteString(strconv.Itoa(c) + ",")
	}
	return b.String()
}

// The probe measures a round trip between two CPUs, and leaves no thread
// of the process pinned to either (its threads exit with it).
func TestCrossCPURoundTrip(t *testing.T) {
	a, b := twoCPUs(t)
	before := threadAffinities(t)
	d, err := crossCPURoundTrip(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// A cache-line round trip takes tens to hundreds of ns; a whole
	// millisecond per trip would mean the two sides never ran at once.
	if d <= 0 || d >= time.Millisecond {
		t.Errorf("round trip cpu%d-cpu%d = %v, want in (0, 1ms)", a, b, d)
	}
	var single unix.CPUSet
	single.Set(b)
	for tid, cpus := range threadAffinities(t) {
		if _, old := before[tid]; !old && cpus == fmtCPUs(single) {
			t.Errorf("thread %d was left pinned to cpu%d after the probe", tid, b)
		}
	}
}

// With one P, as benchrun's parent has once it pins itself to one CPU, the
// probe still ends: it takes a second P while it runs (two goroutines
// spinning on one P would take ~10 ms per round trip, 50 s for the probe).
// The guard is a liveness bound, far above any probe's time.
func TestCrossCPURoundTripOnOneP(t *testing.T) {
	a, b := twoCPUs(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan error, 1)
	go func() {
		_, err := crossCPURoundTrip(a, b)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the probe did not end within 20 s on one P: its two spinning sides cannot run at once")
	}
}

// A CPU the process may not use is an error naming it, not a hang.
func TestCrossCPURoundTripBadCPU(t *testing.T) {
	a, _ := twoCPUs(t)
	const bad = 1000 // beyond any CPU this VM has
	for _, pair := range [][2]int{{a, bad}, {bad, a}} {
		_, err := crossCPURoundTrip(pair[0], pair[1])
		if err == nil || !strings.Contains(err.Error(), "cpu1000") {
			t.Errorf("crossCPURoundTrip(%d, %d) error %v, want one naming cpu1000", pair[0], pair[1], err)
		}
	}
}

// The run log records the round trip beside every multi-P cell, and
// beside no single-P cell; with pinning off it records none.
func TestRunLogRecordsCrossCPURoundTrip(t *testing.T) {
	a, b := twoCPUs(t)
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	for _, pin := range []bool{true, false} {
		modes := map[scenarios.Row]string{scenarios.GoroutineSingle: "ok", scenarios.GoroutineMulti: "ok"}
		sum, _ := runNoise(t, bodies.PingPong, rows, 1, modes, func(o *Options) { o.Pin = pin })
		log, err := os.ReadFile(sum.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		want := "cross-cpu round trip cpu" + strconv.Itoa(a) + "-cpu" + strconv.Itoa(b) + " "
		for _, line := range strings.Split(string(log), "\n") {
			if !strings.Contains(line, " rep 0: ok") {
				continue
			}
			has := strings.Contains(line, want)
			multi := strings.Contains(line, "impl="+string(scenarios.GoroutineMulti))
			if has != (multi && pin) {
				t.Errorf("pin=%v: log line %q: has the round trip %v, want %v", pin, line, has, multi && pin)
			}
		}
	}
}
