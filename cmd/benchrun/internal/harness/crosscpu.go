package harness

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The cross-CPU round trip. A cell that runs on more than one CPU
// (goroutine-multi, the pool cells) hands work between CPUs, and each hand-off
// moves cache lines from one core to the other. On this project's 2-vCPU
// VMs that move is bimodal over time: two threads pinned to the two vCPUs
// bouncing one line read either ~70–80 ns or ~340–390 ns per round trip,
// in stretches of seconds to minutes, with no runqueue wait and no steal to
// show for it (likely the host placing the two vCPUs on nearby or distant
// cores). goroutine-multi has processes at 2–3× their cell's median whose own
// counters show nothing; whether the slow stretch is what makes them is not
// yet established. So the run log records the round trip just before and
// just after every multi-P cell's child (never while it runs: both CPUs are
// the cell's then), beside the figure, for a reader to tell the host's
// stretch from the row's cost. It is a record, not a mark: no figure is
// dropped on it.

// Sizes of one probe: the best of crossBursts bursts of crossTrips round
// trips each, so one burst that an interrupt or another task broke does not
// count; about 0.4 ms in the fast mode and 2 ms in the slow one.
const (
	crossBursts = 5
	crossTrips  = 1000
)

// crossLine is the bounced cache line, padded so that nothing else shares it.
type crossLine struct {
	_ [64]byte
	v atomic.Int64
	_ [64]byte
}

// crossCPURoundTrip measures the round trip of a cache line between CPUs a
// and b: a thread pinned to a writes an odd value, a thread pinned to b
// answers with the next even one. It returns the best burst's time per round
// trip. Each side runs on a thread of its own that exits with the probe (the
// goroutine ends locked to it), so no thread of benchrun keeps a or b's
// affinity afterwards, and neither side spins outside the probe. An error
// names the CPU that could not be taken.
//
// Both sides spin at once, so the probe needs two Ps. Go sizes GOMAXPROCS
// to the process's CPU affinity and follows it as it changes, and the parent
// pins itself to one CPU: with one P the two spinning goroutines would take
// turns at preemption ticks, ~10 ms per round trip (a quick run hung for
// minutes). So the probe takes two Ps while it runs and then hands the
// setting back to Go's default.
func crossCPURoundTrip(a, b int) (time.Duration, error) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.SetDefaultGOMAXPROCS()
	}
	var line crossLine
	var wg sync.WaitGroup
	var errB error
	ready := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if errB = pinSelf(b); errB != nil {
			close(ready)
			return
		}
		close(ready)
		// Answer every odd value with the next even one, until the
		// prober writes -1.
		for {
			v := line.v.Load()
			if v < 0 {
				return
			}
			if v&1 == 1 {
				line.v.Store(v + 1)
			}
		}
	}()
	best := time.Duration(-1)
	var errA error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		<-ready
		if errB != nil {
			return
		}
		if errA = pinSelf(a); errA != nil {
			line.v.Store(-1)
			return
		}
		var next int64
		for range crossBursts {
			start := time.Now()
			for range crossTrips {
				line.v.Store(next + 1)
				for line.v.Load() != next+2 {
				}
				next += 2
			}
			if d := time.Since(start) / crossTrips; best < 0 || d < best {
				best = d
			}
		}
		line.v.Store(-1)
	}()
	<-done
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return 0, err
	}
	return best, nil
}

// pinSelf puts the calling thread on cpu alone.
func pinSelf(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning a probe thread to cpu%d: %w", cpu, err)
	}
	return nil
}

// crossPair is the two CPUs a multi-P cell's round trip is measured between:
// the pin CPU and the first other CPU benchrun may use. ok is false when
// there is no such pair (one CPU allowed, or pinning off: then benchrun
// does not own the placement and records nothing).
func (p *pinPlan) crossPair() (a, b int, ok bool) {
	if p.off != "" || p.cpu < 0 {
		return 0, 0, false
	}
	for cpu := 0; cpu < len(p.rest)*64; cpu++ {
		if p.rest.IsSet(cpu) {
			return cpu, p.cpu, true
		}
	}
	return 0, 0, false
}

// crossText is the run log's words for a cell's two probes.
func crossText(a, b int, before, after time.Duration, err error) string {
	if err != nil {
		return fmt.Sprintf("cross-cpu round trip: not measured (%v)", err)
	}
	return fmt.Sprintf("cross-cpu round trip cpu%d-cpu%d %v before, %v after", a, b, before, after)
}
