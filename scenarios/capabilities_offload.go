package scenarios

import "io"

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
type PoolBound interface {
	OffloadsToPool()
}
