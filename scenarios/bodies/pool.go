package bodies

import (
	"errors"
	"runtime"

	"github.com/corobench/corobench/scenarios"
)

// poolStarved is the offload and fileio bodies' refusal of a pool-bound row
// (scenarios.PoolBound; the state-machine bodies always are) in a process
// with a single P. The reactor's pool threads run Go code and need a P, and
// a scheduler that never blocks (a ping-pong beside the work) holds the only
// one: a pool thread then runs only when the loop is preempted, about every
// 10 ms, so the cell would measure Go's preemption, not the design (measured:
// ~13 ms per 64 KiB chunk at GOMAXPROCS=1 against ~0.8 ms at 2). Giving the
// pool Ps of its own (GOMAXPROCS = 1 + pool threads for these cells) is the
// fix still to build; until then the cell says so.
func poolStarved() error {
	if runtime.GOMAXPROCS(0) < 2 {
		return scenarios.NotSupported("the reactor's thread pool runs Go code and needs Ps of its own, and this row runs with GOMAXPROCS=1: a pool thread would run only when the loop is preempted (~10 ms), so the figure would measure Go's preemption, not the design; not measured until the pool gets its own Ps")
	}
	return nil
}

// poolStarvedBlocking is poolStarved for a blocking row that offloads to a
// pool; a row that does the work in its goroutines is measured as it is.
func poolStarvedBlocking(rt scenarios.Blocking) error {
	if _, pooled := rt.(scenarios.PoolBound); pooled {
		return poolStarved()
	}
	return nil
}

// waitAll waits for every worker's done signal (the offload, fileio and exec
// blocking bodies run c workers each).
func waitAll(done []scenarios.Signal) {
	for _, d := range done {
		d.Wait()
	}
}

// sumWorkers is the workers' checksums added up, or their errors joined.
func sumWorkers(errs []error, sums []uint64) (uint64, error) {
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var sum uint64
	for _, s := range sums {
		sum += s
	}
	return sum, nil
}
