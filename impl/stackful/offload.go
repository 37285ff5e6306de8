package stackful

import (
	"errors"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// This file holds the awaitables on the reactor's thread pool and the rest of
// its event types (docs/design.md §4): pool work, file IO, exec, filesystem
// events, DNS and TTY. Each follows sources.go's pattern: an Event resolved by
// the reactor callback, the reactor event started just before AwaitWith and
// stopped just after (it may not have fired: a timeout or a cancellation came
// first). impl/stackless/offload.go has the state-machine twins.

// Work is a reusable slot for jobs offloaded to the reactor's thread pool (a
// reactor.Work): CPU-bound or blocking code that must not run on the
// scheduler's goroutine. One job at a time.
type Work struct {
	w  *reactor.Work
	ev Event
}

// NewWork returns an idle Work on the running scheduler's reactor.
func NewWork() *Work {
	s := scheduler("NewWork")
	wk := &Work{}
	wk.w = s.loop.NewWork(func() { wk.ev.Resolve(nil) })
	return wk
}

// Run submits job to the pool and suspends the coroutine until it has run.
// It fails without suspending when the pool refuses (reactor.ErrPoolQueueFull,
// reactor.ErrLoopClosed, or the previous job of this Work still running after
// a timeout: see Busy). On ErrTimeout (after timeout; none if negative) or a
// cancellation the job is withdrawn: still queued, it never runs; already
// running, it runs to its end on its thread and its completion is dropped,
// so the caller must not reuse memory the job writes until Busy is false.
func (wk *Work) Run(job reactor.Job, timeout time.Duration) error {
	wk.ev.Reset()
	if err := wk.w.Start(job); err != nil {
		return err
	}
	_, err := AwaitWith(&wk.ev, nil, timeout)
	wk.w.Stop()
	if err == nil {
		err = wk.w.Err()
	}
	return err
}

// Busy reports whether a withdrawn job is still running on a pool thread.
func (wk *Work) Busy() bool { return wk.w.Busy() }

// Close releases the Work (a job still running finishes and is forgotten).
func (wk *Work) Close() { wk.w.Close() }

// Offload runs fn on a pool thread and suspends the coroutine until it has
// returned (Work.Run with a fresh Work: it allocates; keep a Work for a loop).
func Offload(fn func(), timeout time.Duration) error {
	wk := NewWork()
	defer wk.Close()
	return wk.Run(reactor.JobFunc(fn), timeout)
}

// File is a regular file whose operations run on the reactor's thread pool
// (reactor.FSReq, as libuv does: a regular file cannot be polled). Each
// operation suspends the coroutine until the thread has done the syscall.
// Timeout (default none) bounds every operation: ErrTimeout. After a timeout
// or a cancellation the syscall may still be running on its thread: the
// request is dropped and a fresh one taken, and a buffer passed to a
// withdrawn Read or ReadAt may still be written until that syscall returns.
// One coroutine at a time may use a File.
type File struct {
	s       *Scheduler
	f       *reactor.File
	req     *reactor.FSReq
	ev      Event
	Timeout time.Duration // per operation; <= 0: none
}

func (s *Scheduler) newFSReq(f *File) {
	f.req = s.loop.NewFSReq(func() { f.ev.Resolve(nil) })
}

// OpenFile opens path (os.OpenFile's flags and permissions, O_CLOEXEC
// added) on a pool thread. A missing file fails with an *os.PathError that
// errors.Is(err, os.ErrNotExist).
func OpenFile(path string, flag int, perm os.FileMode) (*File, error) {
	s := scheduler("OpenFile")
	f := &File{s: s}
	s.newFSReq(f)
	if _, err := f.do(f.req.StartOpen(path, flag, perm)); err != nil {
		f.req.Close()
		return nil, err
	}
	f.f = f.req.File()
	return f, nil
}

// do awaits the operation startErr says was submitted (or returns that
// error), and after a timeout or cancellation replaces the request.
func (f *File) do(startErr error) (int, error) {
	if startErr != nil {
		return 0, startErr
	}
	f.ev.Reset()
	t := f.Timeout
	if t <= 0 {
		t = -1
	}
	_, err := AwaitWith(&f.ev, nil, t)
	if err != nil {
		f.req.Stop()
		if f.req.Busy() {
			f.req.Close() // its late completion is discarded by the reactor
			f.s.newFSReq(f)
		}
		return 0, err
	}
	if err := f.req.Err(); err != nil {
		return 0, err
	}
	return f.req.Result()
}

// Read reads into p at the file offset; 0, nil at end of file.
func (f *File) Read(p []byte) (int, error) { return f.do(f.req.StartRead(f.f, p)) }

// Write writes all of p at the file offset.
func (f *File) Write(p []byte) (int, error) { return f.do(f.req.StartWrite(f.f, p)) }

// ReadAt reads into p at off (pread); 0, nil at end of file.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.do(f.req.StartPread(f.f, p, off))
}

// WriteAt writes p at off (pwrite).
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.do(f.req.StartPwrite(f.f, p, off))
}

// Sync flushes the file to its device (fsync).
func (f *File) Sync() error { _, err := f.do(f.req.StartFsync(f.f)); return err }

// Stat returns the file's status (fstat); the value is a copy.
func (f *File) Stat() (unix.Stat_t, error) {
	if _, err := f.do(f.req.StartFstat(f.f)); err != nil {
		return unix.Stat_t{}, err
	}
	return *f.req.Stat(), nil
}

// Close closes the file on a pool thread and releases the request.
func (f *File) Close() error {
	_, err := f.do(f.req.StartClose(f.f))
	f.req.Close()
	return err
}

// Stat returns path's status (stat on a pool thread).
func Stat(path string) (unix.Stat_t, error) {
	s := scheduler("Stat")
	f := &File{s: s}
	s.newFSReq(f)
	defer func() { f.req.Close() }()
	if _, err := f.do(f.req.StartStat(path)); err != nil {
		return unix.Stat_t{}, err
	}
	return *f.req.Stat(), nil
}

// Child is a child process started with StartProcess: its stdin, stdout and
// stderr (when asked for in reactor.ExecOptions) are IOs, so a coroutine
// reads and writes them asynchronously, and Wait suspends until it exits
// (the reactor's pidfd event).
type Child struct {
	c                     *reactor.Child
	Stdin, Stdout, Stderr *IO // nil unless asked for
	ev                    Event
}

// StartProcess starts path with argv (argv[0] included). A binary that
// cannot be executed fails here, with os.StartProcess's *os.PathError.
func StartProcess(path string, argv []string, o reactor.ExecOptions) (*Child, error) {
	s := scheduler("StartProcess")
	ch := &Child{}
	c, err := s.loop.Spawn(path, argv, o, func() { ch.ev.Resolve(nil) })
	if err != nil {
		return nil, err
	}
	ch.c = c
	if c.Stdin != nil {
		ch.Stdin = wrapIO(s, c.Stdin)
	}
	if c.Stdout != nil {
		ch.Stdout = wrapIO(s, c.Stdout)
	}
	if c.Stderr != nil {
		ch.Stderr = wrapIO(s, c.Stderr)
	}
	return ch, nil
}

// Pid returns the child's process id.
func (ch *Child) Pid() int { return ch.c.Pid() }

// Kill sends sig to the child.
func (ch *Child) Kill(sig unix.Signal) error { return ch.c.Kill(sig) }

// Wait suspends the coroutine until the child has exited and returns its
// reaped status; ErrTimeout after timeout (none if negative; the child runs
// on: Kill it) or a cancellation.
func (ch *Child) Wait(timeout time.Duration) (*os.ProcessState, error) {
	if !ch.c.Exit.Exited() {
		ch.ev.Reset()
		ch.c.Exit.Start()
		_, err := AwaitWith(&ch.ev, nil, timeout)
		ch.c.Exit.Stop()
		if err != nil {
			return nil, err
		}
	}
	return ch.c.Wait()
}

// Close releases the pipes and the exit event; a child still running is
// killed and reaped.
func (ch *Child) Close() {
	for _, io := range []*IO{ch.Stdin, ch.Stdout, ch.Stderr} {
		if io != nil {
			io.rpoll.Close()
			io.wpoll.Close()
		}
	}
	ch.c.Close() // closes the pipe fds
}

// Watch is an inotify watch a coroutine waits on (reactor.Watch). Events
// arriving while nobody waits are kept for the next Wait.
type Watch struct {
	w  *reactor.Watch
	ev Event
}

// NewWatch watches path for the events in mask (unix.IN_MODIFY, ...). A
// missing path fails with an *os.PathError.
func NewWatch(path string, mask uint32) (*Watch, error) {
	s := scheduler("NewWatch")
	wt := &Watch{}
	w, err := s.loop.NewWatch(path, mask, func() { wt.ev.Resolve(nil) })
	if err != nil {
		return nil, err
	}
	wt.w = w
	return wt, nil
}

// Wait suspends the coroutine until events arrive and returns them (the
// slice is reused by the next Wait); ErrTimeout after timeout (none if
// negative) or a cancellation.
func (wt *Watch) Wait(timeout time.Duration) ([]reactor.FSEvent, error) {
	wt.ev.Reset()
	wt.w.Start()
	_, err := AwaitWith(&wt.ev, nil, timeout)
	wt.w.Stop()
	if err != nil {
		return nil, err
	}
	return wt.w.Events(), nil
}

// Close removes the watch.
func (wt *Watch) Close() { wt.w.Close() }

// Resolver resolves host names on the reactor's thread pool (reactor.Resolve:
// Go's resolver, pointed at reactor.Options.DNSServer or resolv.conf). One
// lookup at a time per Resolver.
type Resolver struct {
	r  *reactor.Resolve
	ev Event
}

// NewResolver returns an idle Resolver on the running scheduler's reactor.
func NewResolver() *Resolver {
	s := scheduler("NewResolver")
	rs := &Resolver{}
	rs.r = s.loop.NewResolve(func() { rs.ev.Resolve(nil) })
	return rs
}

// Lookup resolves name and suspends the coroutine until the answer. The
// timeout (none if <= 0) is the lookup's own: it fails with a
// *net.DNSError whose IsTimeout is true. An unknown name fails with a
// *net.DNSError whose IsNotFound is true. A cancellation stops the lookup at
// once (its context is cancelled).
func (rs *Resolver) Lookup(name string, timeout time.Duration) ([]netip.Addr, error) {
	rs.ev.Reset()
	if err := rs.r.Start(name, timeout); err != nil {
		return nil, err
	}
	_, err := AwaitWith(&rs.ev, nil, -1)
	rs.r.Stop()
	if err != nil {
		return nil, err
	}
	if err := rs.r.Err(); err != nil {
		return nil, err
	}
	return rs.r.Result()
}

// Close releases the Resolver.
func (rs *Resolver) Close() { rs.r.Close() }

// TTY is a terminal as an IO (reactor.TTY: pollable, no thread needed):
// Read and Write suspend like a pipe's; a pty master whose slave side has
// closed reads io.EOF (the kernel's EIO). Terminal controls (SetRaw, Size,
// SetSize) are on T.
type TTY struct {
	*IO
	T *reactor.TTY
}

// Read reads into p, suspending the coroutine until data, end of stream or
// an error (IO.Read's twin, through reactor.TTY.TryRead for the EIO rule).
func (t *TTY) Read(p []byte) (int, error) {
	for {
		n, err := t.T.TryRead(p)
		if !errors.Is(err, reactor.ErrWouldBlock) {
			return n, err
		}
		if err := t.wait(t.rpoll, &t.rready, -1); err != nil {
			return 0, err
		}
	}
}

// OpenPTY opens a pseudo-terminal pair: the master side as a TTY on the
// running scheduler's reactor, the slave side as a blocking *os.File for a
// child or a test to use as its terminal.
func OpenPTY() (*TTY, *os.File, error) {
	s := scheduler("OpenPTY")
	m, slave, err := s.loop.OpenPTY()
	if err != nil {
		return nil, nil, err
	}
	return &TTY{IO: wrapIO(s, m.FD), T: m}, slave, nil
}

// NewTTY registers the terminal fd (owned from now on); a non-terminal is
// refused with an error naming it.
func NewTTY(fd int) (*TTY, error) {
	s := scheduler("NewTTY")
	t, err := s.loop.NewTTY(fd)
	if err != nil {
		return nil, err
	}
	return &TTY{IO: wrapIO(s, t.FD), T: t}, nil
}
