package harness

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/cmd/benchrun/internal/report"
	"github.com/corobench/corobench/internal/cpulist"
)

func cpuSet(cpus ...int) *unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return &s
}

// wakeCPUs puts A on the cells' CPU and B on another allowed CPU, both on
// the one CPU when only one is allowed.
func TestWakeCPUs(t *testing.T) {
	for _, c := range []struct {
		allowed []int
		cell    int
		a, b    int
		one     bool
	}{
		{[]int{0, 1}, 1, 1, 0, false},
		{[]int{0, 1}, 0, 0, 1, false},
		{[]int{0, 1, 2, 3}, 3, 3, 0, false},
		{[]int{2, 5}, -1, 5, 2, false},        // unpinned run: the last allowed, as newPinPlan's
		{[]int{0, 1}, 7, 1, 0, false},         // a cell CPU not allowed is not used
		{[]int{70, 130}, 130, 130, 70, false}, // past the first word of the set
		{[]int{3}, 3, 3, 3, true},
		{[]int{3}, -1, 3, 3, true},
		{nil, -1, -1, -1, false},
	} {
		a, b, one := wakeCPUs(cpuSet(c.allowed...), c.cell)
		if a != c.a || b != c.b || one != c.one {
			t.Errorf("wakeCPUs(%v, %d) = %d, %d, %v; want %d, %d, %v", c.allowed, c.cell, a, b, one, c.a, c.b, c.one)
		}
	}
}

// The measurement returns one positive round trip per round, not the
// warm-up's, on the CPUs it names, and a config value the report reads
// back with the measured p50 and p99. Its threads end with it: none of
// this process's threads is left pinned to one CPU.
func TestThreadWakeFloor(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	a, b, one := wakeCPUs(&allowed, -1)
	const rounds, warmup = 200, 20
	tf, err := measureThreadWakeFloor(rounds, warmup, &allowed, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.samples) != rounds {
		t.Fatalf("%d samples, want %d", len(tf.samples), rounds)
	}
	for i, s := range tf.samples {
		if s <= 0 {
			t.Fatalf("round trip %d took %d ns", i, s)
		}
	}
	if tf.cpuA != a || tf.cpuB != b || tf.oneCPU != one {
		t.Errorf("measured on cpu%d<->cpu%d (one CPU %v), want cpu%d<->cpu%d (%v)", tf.cpuA, tf.cpuB, tf.oneCPU, a, b, one)
	}
	cfg := threadWakeFloorConfig(tf, nil)
	t.Log(cfg)
	p50, p99, ok := report.ParseFloor(cfg)
	if !ok || p50 != float64(tf.p50) || p99 != float64(tf.p99) || p50 <= 0 || p99 < p50 {
		t.Errorf("report reads %v, %v, %v from %q; measured p50 %d, p99 %d", p50, p99, ok, cfg, tf.p50, tf.p99)
	}
	for _, want := range []string{strconv.Itoa(rounds) + " round trips", "futex", "cpu" + strconv.Itoa(a) + "<->cpu" + strconv.Itoa(b)} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config %q lacks %q", cfg, want)
		}
	}
	if one != strings.Contains(cfg, "one CPU allowed") {
		t.Errorf("config %q: one CPU allowed is %v", cfg, one)
	}
	if allowed.Count() > 1 {
		for tid, set := range threadsNotOn(t, allowed) {
			t.Errorf("thread %d left with CPUs %v after the floor", tid, cpulist.Of(&set))
		}
	}
}

// A floor that could not be measured is a config value that says why and
// that the report reads no figures from.
func TestThreadWakeFloorFailed(t *testing.T) {
	if _, err := measureThreadWakeFloor(0, 0, cpuSet(0), -1); err == nil {
		t.Error("no error for 0 round trips")
	}
	cfg := threadWakeFloorConfig(nil, errors.New("thread wake floor: pinning to cpu 1: EINVAL"))
	if !strings.HasPrefix(cfg, "not measured: ") || !strings.Contains(cfg, "EINVAL") {
		t.Errorf("config %q", cfg)
	}
	if _, _, ok := report.ParseFloor(cfg); ok {
		t.Errorf("report reads figures from %q", cfg)
	}
}
