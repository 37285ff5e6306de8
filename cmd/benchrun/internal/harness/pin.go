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

	"github.com/corobench/corobench/internal/cpulist"
	"github.com/corobench/corobench/scenarios"
)

// Pinning single-P cells. A cell whose row runs on one P (GOMAXPROCS=1) is
// started on one chosen CPU, and benchrun's own threads are kept off it for
// the whole run, so the cell neither migrates between cores nor shares its
// core with the parent. The child inherits the CPU at fork: every child is
// forked from one locked thread (proc.go), which takes the cell's affinity
// just before the fork and gives it back just after.
//
// goroutine-multi's cells stay unpinned: they are meant to use every core,
// wherever Go's scheduler and the kernel put their threads. The thread-pool
// cells of the stackful and stackless rows (GOMAXPROCS = 1 + pool threads,
// Row.CellGOMAXPROCS) are placed in two parts: the process starts on the
// pin CPU, so the scheduler's thread (and every thread Go starts for it)
// runs there, and its pool threads move to the rest, where benchrun's own
// threads are (scenarios.PoolCPUsEnv, reactor.Options.PoolCPUs). Left
// unpinned, a loop and its pool thread shared a CPU in some runs and not
// in others, and a file read at c=1 cost ~4 µs or ~55 µs by that alone
// (CV 31–62% over a full run); placed so, every hand-off crosses CPUs, as
// the thread hand-off floor (threadfloor.go) is measured. Pinned all to
// one CPU, the pool's Ps would time-slice it. Scenarios that place their
// own processes (echo pins its server and its load generator to two
// different cores, from the cores it is allowed) are started unpinned:
// pinned to one core, echo would find one core allowed and run its
// generator on the server's core.

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

// poolPlaced reports whether the cells of row r in scenario s are pool
// cells placed in two parts: the scheduler on the pin CPU, the pool threads
// on the rest (poolCPUs).
func (p *pinPlan) poolPlaced(s *scenarios.Scenario, r scenarios.Row) bool {
	return p.off == "" && r.PoolCell(s) && !selfPinned[s.Name]
}

// poolCPUs is the CPU list a placed pool cell's pool threads run on (the
// value of scenarios.PoolCPUsEnv): the CPUs benchrun keeps its own threads
// on.
func (p *pinPlan) poolCPUs() string { return cpulist.Format(cpulist.Of(&p.rest)) }

// childAffinity is the affinity a cell's child starts with.
func (p *pinPlan) childAffinity(s *scenarios.Scenario, r scenarios.Row) *unix.CPUSet {
	if p.off != "" {
		return nil // nothing pinned: the forking thread's own affinity
	}
	if p.pinned(s, r) || p.poolPlaced(s, r) {
		var one unix.CPUSet
		one.Set(p.cpu)
		return &one
	}
	return &p.orig
}

// config is the cpu-pin config value: per row, where its single-P cells
// ran, and where the scheduler and the pool threads of its pool cells ran
// ("cpu1 (offload,fileio: scheduler cpu1, pool threads cpu0)").
func (p *pinPlan) config() string {
	if p.off != "" {
		return p.off
	}
	vals := map[string]string{}
	for _, r := range scenarios.Rows {
		if r.GOMAXPROCS() == 1 {
			cpu := "cpu" + strconv.Itoa(p.cpu)
			vals[string(r)] = cpu + poolExceptions(r, "scheduler "+cpu+", pool threads cpu"+p.poolCPUs())
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
	// A thread the runtime starts while this runs is cloned from one
	// that may not have its new set yet, and keeps the old one (a thread
	// left on one CPU after restore made the next run's plan read "one
	// CPU allowed" once in a loaded `go test ./...`), so the pass is
	// repeated until it finds no thread it has not set.
	done := map[int]bool{}
	var errs []error
	for pass := 0; pass < 5; pass++ {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing benchrun's threads: %w", err)
		}
		fresh := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid] = true
			fresh++
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				errs = append(errs, fmt.Errorf("setting thread %d's CPU affinity: %w", tid, err))
			}
		}
		if fresh == 0 {
			break
		}
	}
	return errors.Join(errs...)
}
