package bodies

import (
	"errors"
	"fmt"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// poolCPUs and poolCPUsDoc say, in a pool scenario's Summary (the line the
// report shows under its heading) and Doc, how many CPUs each row's cells
// use, so that no reader compares a cell of 1 P with one of several
// without knowing it. The counts of a run are in its results' gomaxprocs
// and thread-pool lines.
const (
	poolCPUs = "CPUs differ by row: goroutine-single runs on one P; the stackful and stackless rows on the scheduler's P and one per pool thread " +
		"(as many threads as allowed CPUs less one), as many Ps as goroutine-multi has; compare those four, goroutine-single is the one-CPU reference."
	poolCPUsDoc = "The stackful and stackless rows' pool threads run Go code and need Ps beside the scheduler's: these cells run with " +
		"GOMAXPROCS = 1 + k and a pool of k threads, k = allowed CPUs − 1 (at least 1), the same k for every row, " +
		"so they use as many CPUs as goroutine-multi (GOMAXPROCS = allowed CPUs); their process starts on the CPU single-P cells run on and their pool threads run on the other allowed CPUs " +
		"(the results' cpu-pin line), so every hand-off to the pool crosses CPUs, as the run's thread hand-off floor does; goroutine-single does the same work on 1 P, " +
		"the one-CPU reference. With one P a pool thread would run only when Go preempts the loop (~10 ms)."
)

// poolStarved is the offload and fileio bodies' refusal of a pool-bound row
// (scenarios.PoolBound; the state-machine bodies always are) in a process
// with a single P. The reactor's pool threads run Go code and need a P, and
// a scheduler that never blocks (a ping-pong beside the work) holds the only
// one: a pool thread then runs only when the loop is preempted, about every
// 10 ms, so the cell would measure Go's preemption, not the design
// (measured: ~13 ms per 64 KiB chunk at GOMAXPROCS=1 against ~0.8 ms at 2).
// benchrun never starts such a cell with one P: a pool cell gets
// GOMAXPROCS = 1 + scenarios.PoolThreads() (Row.CellGOMAXPROCS). This is
// for a run outside it (go test -cpu 1), or a row from another module that
// implements PoolBound without declaring RowDef.PoolBound.
func poolStarved() error {
	if scenarios.ProcessPoolThreads() < 1 {
		return scenarios.NotSupported("the reactor's thread pool runs Go code and needs Ps of its own, and this process has GOMAXPROCS=1: a pool thread would run only when the loop is preempted (~10 ms), so the figure would measure Go's preemption, not the design; benchrun runs a PoolBound row's pool cells with GOMAXPROCS = 1 + pool threads (declare RowDef.PoolBound)")
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

// StacklessFor returns the scheduler a state-machine body of the named
// scenario runs on, the stackless row's runtime, and its release (the
// scheduler, then the loop). The name, not the *Scenario, because a body
// cannot refer to its own scenario's variable (an initialisation cycle);
// the scenario's UsesPool stays the one declaration the harness and this
// read. For a pool scenario (UsesPool) the reactor is a loop of
// the body's own (stackless.Options.Loop) whose thread pool has
// scenarios.ProcessPoolThreads() threads, one per P beside the
// scheduler's, placed on scenarios.ProcessPoolCPUs(), as the stackful rows
// size and place theirs (rows.StackfulOptions);
// otherwise the scheduler creates its reactor on first use, as
// stackless.New does.
func StacklessFor(scenario string) (*stackless.Scheduler, func(), error) {
	s, ok := scenarios.Lookup(scenario)
	if !ok {
		return nil, nil, fmt.Errorf("bodies.StacklessFor: no scenario %q is registered", scenario)
	}
	if !s.UsesPool {
		sched := stackless.New()
		return sched, func() { sched.Close() }, nil
	}
	cpus, err := scenarios.ProcessPoolCPUs()
	if err != nil {
		return nil, nil, err
	}
	loop, err := reactor.NewWithOptions(reactor.Options{PoolThreads: scenarios.ProcessPoolThreads(), PoolCPUs: cpus})
	if err != nil {
		return nil, nil, err
	}
	sched, err := stackless.NewWithOptions(stackless.Options{Loop: loop})
	if err != nil {
		loop.Close()
		return nil, nil, err
	}
	return sched, func() { sched.Close(); loop.Close() }, nil
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
