package harness

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
)

// Pinning single-P cells. A cell whose row runs on one P (GOMAXPROCS=1) is
// started on one chosen CPU, and benchrun's own threads are kept off it for
// the whole run, so the cell neither migrates between cores nor shares its
// core with the parent. The child inherits the CPU at fork: every child is
// forked from one locked thread (proc.go), which takes the cell's affinity
// just before the fork and gives it back just after.
//
// Multi-P cells stay unpinned: goroutine-multi's are meant to use every
// core, and so are the thread-pool cells of the stackful and stackless rows
// (GOMAXPROCS = 1 + pool threads, Row.CellGOMAXPROCS), whose pool threads
// need CPUs beside the scheduler's; pinned to one CPU, their Ps would
// time-slice it. Scenarios that place their own processes (echo pins its server and
// its load generator to two different cores, from the cores it is allowed)
// are started unpinned too: pinned to one core, echo would find one core
// allowed and run its generator on the server's core.

// selfPinned lists the scenarios that choose their own cores.
var selfPinned = map[string]bool{"echo": true}

// pinPlan is the run's placement.
type pinPlan struct {
	cpu  int         // the CPU single-P cells run on
	orig unix.CPUSet // benchrun's allowed set at the start of the run
	rest unix.CPUSet // orig without cpu: where benchrun's threads run
	off  string      // why nothing is pinned ("" when pinning)
}

// newPinPlan chooses the CPU for single-P cells: the last CPU of benchrun's
// allowed set (deterministic, and away from CPU 0, which takes most device
// interrupts on a small VM). With pinning not asked for, or a single CPU
// allowed, the plan pins nothing and says why.
func newPinPlan(want bool) (*pinPlan, error) {
	p := &pinPlan{cpu: -1}
	if err := unix.SchedGetaffinity(0, &p.orig); err != nil {
		return nil, fmt.Errorf("reading benchrun's CPU affinity: %w", err)
	}
	switch {
	case !want:
		p.off = "off (--pin=false)"
	case p.orig.Count() < 2:
		p.off = "off (one CPU allowed: nowhere else to put benchrun)"
	default:
		for cpu := 0; cpu < len(p.orig)*64; cpu++ {
			if p.orig.IsSet(cpu) {
				p.cpu = cpu
			}
		}
		p.rest = p.orig
		p.rest.Clear(p.cpu)
	}
	return p, nil
}

// pinned reports whether cells of row r in scenario s run on the pin CPU:
// those with one P (Row.CellGOMAXPROCS) that do not place themselves.
func (p *pinPlan) pinned(s *scenarios.Scenario, r scenarios.Row) bool {
	return p.off == "" && r.CellGOMAXPROCS(s) == 1 && !selfPinned[s.Name]
}

// childAffinity is the affinity a cell's child starts with.
func (p *pinPlan) childAffinity(s *scenarios.Scenario, r scenarios.Row) *unix.CPUSet {
	if p.off != "" {
		return nil // nothing pinned: the forking thread's own affinity
	}
	if p.pinned(s, r) {
		var one unix.CPUSet
		one.Set(p.cpu)
		return &one
	}
	return &p.orig
}

// config is the cpu-pin config value: per row, where its single-P cells
// ran, and which of its scenarios' cells have more Ps and ran unpinned
// (pool cells: "cpu1 (offload,fileio: unpinned)").
func (p *pinPlan) config() string {
	if p.off != "" {
		return p.off
	}
	vals := map[string]string{}
	for _, r := range scenarios.Rows {
		if r.GOMAXPROCS() == 1 {
			vals[string(r)] = "cpu" + strconv.Itoa(p.cpu) + poolExceptions(r, "unpinned")
		} else {
			vals[string(r)] = "unpinned"
		}
	}
	s := ""
	for i, r := range scenarios.RowNames() {
		if i > 0 {
			s += "; "
		}
		s += r + "=" + vals[r]
	}
	return s + "; benchrun elsewhere; self-placed: " + strings.Join(slices.Sorted(maps.Keys(selfPinned)), ",")
}

// keepParentOff moves every thread of benchrun onto the rest set. It is
// called before every cell, since the runtime may have started threads
// since (they inherit the affinity of the thread that created them, which
// may be the forking thread while it holds a cell's affinity).
func (p *pinPlan) keepParentOff() error {
	if p.off != "" {
		return nil
	}
	return setThreads(&p.rest)
}

// restore gives every thread of benchrun its affinity from before the run.
func (p *pinPlan) restore() error {
	if p.off != "" {
		return nil
	}
	return setThreads(&p.orig)
}

// setThreads sets the affinity of every thread of this process. Twin of
// scenarios/loadgen's PinProcess, which pins to one CPU and keeps each
// thread's former set; this one sets any set and keeps nothing (the plan
// holds the original).
func setThreads(set *unix.CPUSet) error {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing benchrun's threads: %w", err)
	}
	var errs []error
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			errs = append(errs, fmt.Errorf("setting thread %d's CPU affinity: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}
