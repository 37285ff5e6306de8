package reactor

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPoolCPUsPlaceThreads checks that with Options.PoolCPUs every pool
// thread runs on exactly those CPUs, whatever the submitting thread's
// affinity, and that the loop's own thread keeps its own.
func TestPoolCPUsPlaceThreads(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := 0; c < len(allowed)*64; c++ {
		if allowed.IsSet(c) {
			cpu = c // the last allowed CPU: one set of one, unlike the test thread's when it has more
		}
	}
	l := newLoop(t, Options{PoolThreads: 2, PoolCPUs: []int{cpu}})
	const n = 8
	got := make([]unix.CPUSet, n)
	errs := make([]error, n)
	fired := 0
	for i := range n {
		w := l.NewWork(func() { fired++ })
		if err := w.Start(JobFunc(func() { errs[i] = unix.SchedGetaffinity(0, &got[i]) })); err != nil {
			t.Fatal(err)
		}
	}
	tickUntil(t, l, func() bool { return fired == n })
	var want unix.CPUSet
	want.Set(cpu)
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("job %d: %v", i, errs[i])
		}
		if got[i] != want {
			t.Errorf("job %d ran on a thread allowed %d CPUs, want only cpu%d", i, got[i].Count(), cpu)
		}
	}
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine != allowed {
		t.Errorf("the test's thread now allows %d CPUs, had %d: placing the pool moved it", mine.Count(), allowed.Count())
	}
}

// TestPoolCPUsRefused checks that a set no thread may run on is refused
// when the loop is made, with an error that names the option.
func TestPoolCPUsRefused(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	notAllowed := -1
	for c := len(allowed)*64 - 1; c >= 0; c-- {
		if !allowed.IsSet(c) {
			notAllowed = c
			break
		}
	}
	for _, cpus := range [][]int{{-1}, {len(allowed) * 64}, {notAllowed}} {
		l, err := NewWithOptions(Options{PoolCPUs: cpus})
		if err == nil {
			l.Close()
			t.Errorf("PoolCPUs %v: no error", cpus)
			continue
		}
		if !strings.Contains(err.Error(), "Options.PoolCPUs") {
			t.Errorf("PoolCPUs %v: %v; want it to name Options.PoolCPUs", cpus, err)
		}
	}
}
