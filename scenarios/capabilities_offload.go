package scenarios

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/corobench/corobench/internal/cpulist"
)

// Capabilities of the offload, fileio and exec scenarios (the reactor's thread
// pool, docs/design.md §4), beside those of capabilities.go.

// Offloads is the capability to run CPU-bound or blocking work off the
// scheduler's thread and await it, suspending only the caller. The
// stackful rows submit to the reactor's thread pool; the goroutine rows
// run the work inline (a goroutine is already a thread's worth of
// scheduling: Go's scheduler spreads them over GOMAXPROCS threads).
type Offloads interface {
	NewOffloader() (Offloader, error)
}

// Offloader runs one job at a time for one coroutine.
type Offloader interface {
	// Run runs fn (off the scheduler's thread where the row has a pool)
	// and returns once it has returned.
	Run(fn func()) error
	Close()
}

// Files is the capability to read a regular file at offsets, suspending
// only the caller. A regular file cannot be polled: the stackful rows read
// it on the reactor's thread pool; the goroutine rows call pread in the
// goroutine, which blocks its thread (Go's scheduler hands the P on).
type Files interface {
	OpenFileReader(path string) (FileReader, error)
}

// FileReader reads a file at offsets; one coroutine uses it at a time.
type FileReader interface {
	ReadAt(p []byte, off int64) (int, error)
	Close() error
}

// Execs is the capability to start a child process whose output pipe and
// exit a coroutine awaits, suspending only itself. The stackful rows use
// the reactor's Spawn (pipes registered with the loop, the exit a pidfd
// event); the goroutine rows use os/exec.
type Execs interface {
	StartChild(path string, argv []string) (Child, error)
}

// Child is a started child process with its stdout as a pipe.
type Child interface {
	// Stdout is the read end of the child's stdout.
	Stdout() io.Reader
	// Wait awaits the exit (after Stdout has been read to EOF) and reaps
	// the child; it returns the exit code.
	Wait() (int, error)
	// Close releases the pipe (and kills a child not waited for).
	Close()
}

// Watches is the capability to wait for filesystem events on a path,
// suspending only the caller. The stackful rows use the reactor's inotify
// watch; the goroutine rows github.com/fsnotify/fsnotify.
type Watches interface {
	WatchWrites(path string) (FileWatch, error)
}

// FileWatch delivers the writes to one file.
type FileWatch interface {
	// Wait returns after at least one write to the file since the
	// previous Wait returned (events of one wake-up count as one).
	Wait() error
	Close()
}

// PoolBound marks an Offloads or Files row whose work runs on a thread pool
// of Go code (the reactor's), so the pool's threads need Ps of their own
// beside the scheduler's. The offload and fileio bodies refuse such a row in
// a process with one P, where a pool thread runs only when the loop is
// preempted and the figure would measure Go's preemption, not the design.
// A row that implements it declares RowDef.PoolBound, so that benchrun
// gives its pool cells those Ps (Row.CellGOMAXPROCS).
type PoolBound interface {
	OffloadsToPool()
}

// Pool cells. A scenario that runs its work on the runtime's thread pool
// (Scenario.UsesPool) on a row whose runtime's pool runs Go code
// (RowDef.PoolBound) is a pool cell. Its process gets GOMAXPROCS =
// 1 + PoolThreads(): one P for the scheduler's thread, which stays on it,
// and one per pool thread; and the row sizes its runtime's pool from that
// (ProcessPoolThreads), so the pool never has more threads than Ps beside
// the scheduler's. The size is the machine's, not the row's: every row of
// a pool scenario runs with the same pool, and, at every allowed CPU but
// one for the pool, with as many Ps as goroutine-multi has.

// PoolThreads is the pool size benchrun plans for pool cells: the CPUs
// this process may run on (runtime.NumCPU, its affinity at start) less the
// one the scheduler's thread keeps busy, at least 1. More threads than
// free CPUs would only time-slice them (the work is CPU-bound: a checksum,
// a copy out of the page cache) and give the cell more Ps than
// goroutine-multi has.
func PoolThreads() int { return max(1, runtime.NumCPU()-1) }

// PoolCell reports whether the cells of scenario s on row r are pool
// cells.
func (r Row) PoolCell(s *Scenario) bool {
	d, ok := rowDefs[r]
	return ok && d.PoolBound && s != nil && s.UsesPool
}

// CellGOMAXPROCS returns the GOMAXPROCS the cells of scenario s run with
// on row r: 1 + PoolThreads() for a pool cell, else the row's own
// (Row.GOMAXPROCS).
func (r Row) CellGOMAXPROCS(s *Scenario) int {
	if r.PoolCell(s) {
		return 1 + PoolThreads()
	}
	return r.GOMAXPROCS()
}

// ProcessPoolThreads is the pool size a PoolBound row gives its runtime in
// a pool cell's process: its Ps less the scheduler's (GOMAXPROCS − 1),
// which is PoolThreads() in a child benchrun started, and 0 in a process
// with one P (the bodies then report not supported).
func ProcessPoolThreads() int { return runtime.GOMAXPROCS(0) - 1 }

// PoolCPUsEnv names the environment variable through which benchrun tells
// a pool cell's process where its pool threads run: a CPU list as taskset
// writes one ("0", "0,2-3"). benchrun starts the process on the CPU it
// pins single-P cells to, so the scheduler's thread stays there, and names
// the CPUs it keeps its own threads on (the rest) here, so that every
// hand-off to the pool crosses to another CPU (reactor.Options.PoolCPUs
// says why that is the figure to take). Unset or empty: the pool's threads
// run where the kernel puts them, as in a cell run by hand.
const PoolCPUsEnv = "COROBENCH_POOL_CPUS"

// ProcessPoolCPUs is the pool placement benchrun asked this process for
// (PoolCPUsEnv), for the rows to give their runtime's pool
// (reactor.Options.PoolCPUs): nil when none was asked for, an error naming
// the variable when its value is not a CPU list.
func ProcessPoolCPUs() ([]int, error) {
	v := os.Getenv(PoolCPUsEnv)
	if v == "" {
		return nil, nil
	}
	cpus, err := cpulist.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %v; write CPU numbers and ranges as taskset does (0,2-3), or unset it to let the kernel place the pool's threads", PoolCPUsEnv, v, err)
	}
	return cpus, nil
}
