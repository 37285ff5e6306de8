package rows

import (
	"os"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// This file holds the built-in rows' thread-pool capabilities (Offloads,
// Files: see capabilities_offload.go), which the offload and fileio bodies
// type-assert. The stackful rows submit to the reactor's thread pool
// (stackful.Work, stackful.File); the goroutine rows do the work in the
// goroutine: inline for CPU work, a blocking pread for files.

var (
	_ scenarios.Offloads = fibers{}
	_ scenarios.Files    = fibers{}
	_ scenarios.Offloads = (*goroutines)(nil)
	_ scenarios.Files    = (*goroutines)(nil)
)

// NewOffloader returns a stackful.Work of the running scheduler.
func (fibers) NewOffloader() (scenarios.Offloader, error) {
	return fiberOffloader{stackful.NewWork()}, nil
}

type fiberOffloader struct{ w *stackful.Work }

// Run submits fn to the pool and suspends the coroutine until it returned.
// reactor.JobFunc(fn) is a conversion of a func value: no allocation.
func (o fiberOffloader) Run(fn func()) error { return o.w.Run(reactor.JobFunc(fn), -1) }
func (o fiberOffloader) Close()              { o.w.Close() }

// OpenFileReader opens path read-only through the pool (stackful.File).
func (fibers) OpenFileReader(path string) (scenarios.FileReader, error) {
	return stackful.OpenFile(path, os.O_RDONLY, 0)
}

// NewOffloader returns an offloader that runs the work inline.
func (*goroutines) NewOffloader() (scenarios.Offloader, error) { return inline{}, nil }

type inline struct{}

func (inline) Run(fn func()) error { fn(); return nil }
func (inline) Close()              {}

// OpenFileReader opens path with os.Open: ReadAt is a blocking pread.
func (*goroutines) OpenFileReader(path string) (scenarios.FileReader, error) {
	return os.Open(path)
}
