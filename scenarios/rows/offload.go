package rows

import (
	"errors"
	"io"
	"os"
	"os/exec"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

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

var _ scenarios.PoolBound = fibers{}

// OffloadsToPool: the stackful rows' offload and file reads run on the
// reactor's thread pool (scenarios.PoolBound).
func (fibers) OffloadsToPool() {}

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

var (
	_ scenarios.Execs = fibers{}
	_ scenarios.Execs = (*goroutines)(nil)
)

// StartChild starts path through the reactor (stackful.StartProcess).
func (fibers) StartChild(path string, argv []string) (scenarios.Child, error) {
	ch, err := stackful.StartProcess(path, argv, reactor.ExecOptions{Stdout: true})
	if err != nil {
		return nil, err
	}
	return fiberChild{ch}, nil
}

type fiberChild struct{ ch *stackful.Child }

func (c fiberChild) Stdout() io.Reader { return c.ch.Stdout }
func (c fiberChild) Close()            { c.ch.Close() }
func (c fiberChild) Wait() (int, error) {
	st, err := c.ch.Wait(-1)
	if err != nil {
		return -1, err
	}
	return st.ExitCode(), nil
}

// StartChild starts path with os/exec, its stdout a pipe.
func (*goroutines) StartChild(path string, argv []string) (scenarios.Child, error) {
	cmd := &exec.Cmd{Path: path, Args: argv}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &goChild{cmd: cmd, out: out}, nil
}

type goChild struct {
	cmd    *exec.Cmd
	out    io.Reader
	waited bool
}

func (c *goChild) Stdout() io.Reader { return c.out }
func (c *goChild) Wait() (int, error) {
	c.waited = true
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return c.cmd.ProcessState.ExitCode(), nil
}
func (c *goChild) Close() {
	if !c.waited {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

var (
	_ scenarios.Watches = fibers{}
	_ scenarios.Watches = (*goroutines)(nil)
)

// WatchWrites watches path for IN_MODIFY through the reactor.
func (fibers) WatchWrites(path string) (scenarios.FileWatch, error) {
	w, err := stackful.NewWatch(path, unix.IN_MODIFY)
	if err != nil {
		return nil, err
	}
	return fiberWatch{w}, nil
}

type fiberWatch struct{ w *stackful.Watch }

func (w fiberWatch) Wait() error { _, err := w.w.Wait(-1); return err }
func (w fiberWatch) Close()      { w.w.Close() }

// WatchWrites watches path with fsnotify (its own goroutine reads the
// inotify fd and sends on a channel).
func (*goroutines) WatchWrites(path string) (scenarios.FileWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(path); err != nil {
		w.Close()
		return nil, err
	}
	return goWatch{w}, nil
}

type goWatch struct{ w *fsnotify.Watcher }

func (w goWatch) Close() { w.w.Close() }
func (w goWatch) Wait() error {
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return errors.New("fsnotify: watcher closed")
			}
			if ev.Has(fsnotify.Write) {
				return nil
			}
		case err := <-w.w.Errors:
			return err
		}
	}
}
