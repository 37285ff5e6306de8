package stackless

import (
	"errors"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// This file holds the Sources on the reactor's thread pool and the rest of
// its event types (docs/design.md §4): pool work, file IO, exec, filesystem
// events, DNS and TTY. impl/stackful/offload.go has the blocking twins.
//
// The pool-backed ones (Work, File, Resolver) submit their job in the helper
// that returns the suspend Step, just before the task suspends, as the
// stackful twin starts it just before AwaitWith: a submission can fail (the
// pool's queue is full), and a failure must become the task's error, not a
// wait nobody ends. Their Source's Start is therefore empty and its Stop
// withdraws the job. A wait that ends at once (a pending cancellation) never
// starts the Source; the next helper call withdraws the job it left behind.

// submitted is the Source event of a pool-backed wait: already started by the
// helper, stopped (withdrawn) by the waker when the wait ends.
type submitted struct{ stop func() }

func (submitted) Start()  {}
func (p submitted) Stop() { p.stop() }

// poolWait is what Work, File and Resolver share: the Source and an Event
// to fail a wait with at once when the pool refuses the job.
type poolWait struct {
	Source
	refused Event
}

// await returns the Step for a job whose submission returned err: an
// immediate resume with err (an already-rejected Event takes the fast
// path), or the wait on the Source with timeout d (none if <= 0).
func (p *poolWait) await(c *Context, err error, d time.Duration) Step {
	if err != nil {
		p.refused.Reset()
		p.refused.Reject(err)
		return c.Await(&p.refused)
	}
	return c.AwaitSource(&p.Source, d)
}

// Work is a reusable slot for jobs offloaded to the reactor's thread pool
// (reactor.Work): CPU-bound or blocking code that must not run on the
// scheduler's goroutine. One job at a time.
type Work struct {
	poolWait
	w *reactor.Work
}

// NewWork returns an idle Work on the scheduler's reactor.
func (s *Scheduler) NewWork() (*Work, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	wk := &Work{}
	wk.w = l.NewWork(func() { s.fireSource(&wk.Source) })
	wk.Source = Source{ev: submitted{wk.w.Stop}, outcome: func() (any, error) { return nil, wk.w.Err() }}
	return wk, nil
}

// AwaitWork submits job and suspends the task until it has run (Err nil),
// or ErrTimeout after d (none if <= 0), or a cancellation: then the job is
// withdrawn (still queued, it never runs; running, it finishes on its thread
// and is forgotten: memory it writes must not be reused until Busy is false).
// A refused submission (reactor.ErrPoolQueueFull, the previous job still
// running) resumes the task at once with that error.
func (c *Context) AwaitWork(wk *Work, job reactor.Job, d time.Duration) Step {
	wk.w.Stop() // a job left by a wait that ended at once
	return wk.await(c, wk.w.Start(job), d)
}

// Busy reports whether a withdrawn job is still running on a pool thread.
func (wk *Work) Busy() bool { return wk.w.Busy() }

// Close releases the Work.
func (wk *Work) Close() { wk.w.Close() }

// File is a regular file whose operations run on the reactor's thread pool
// (reactor.FSReq, as libuv does). Each method starts one operation and
// returns the Step that waits for it; on the next Resume, c.Err() is its
// error and c.Result() its byte count (an int) for Read, Write, ReadAt and
// WriteAt. Timeout (default none) bounds every operation: ErrTimeout. After
// a timeout or a cancellation the syscall may still run on its thread: the
// next operation takes a fresh request, and a buffer passed to the
// withdrawn read may still be written until that syscall returns. One task
// at a time may use a File.
type File struct {
	poolWait
	s       *Scheduler
	f       *reactor.File
	req     *reactor.FSReq
	stat    unix.Stat_t
	Timeout time.Duration
}

// NewFile returns a File with no file open yet: Open or StatPath it.
func (s *Scheduler) NewFile() (*File, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	f := &File{s: s}
	f.req = l.NewFSReq(f.fire)
	f.Source = Source{ev: submitted{func() { f.req.Stop() }}, outcome: f.outcome}
	return f, nil
}

func (f *File) fire() { f.s.fireSource(&f.Source) }

// outcome is the finished operation's result: its error, or its count;
// an open keeps its file, a stat its status.
func (f *File) outcome() (any, error) {
	if err := f.req.Err(); err != nil {
		return nil, err
	}
	n, err := f.req.Result()
	if err != nil {
		return nil, err
	}
	if f.f == nil {
		f.f = f.req.File() // an open: the file it opened (nil for other operations)
	}
	f.stat = *f.req.Stat()
	return n, nil
}

// fresh readies the request for a new operation: a request whose withdrawn
// syscall still runs is dropped (the reactor discards its completion) and
// replaced.
func (f *File) fresh() *reactor.FSReq {
	f.req.Stop()
	if f.req.Busy() {
		f.req.Close()
		f.req = f.s.r.loop.NewFSReq(f.fire)
	}
	return f.req
}

// Open opens path (os.OpenFile's flags, O_CLOEXEC added). A missing file
// fails with an *os.PathError that errors.Is(err, os.ErrNotExist).
func (f *File) Open(c *Context, path string, flag int, perm os.FileMode) Step {
	if f.f != nil {
		return f.await(c, errors.New("stackless: File.Open on an open File"), 0)
	}
	return f.await(c, f.fresh().StartOpen(path, flag, perm), f.Timeout)
}

// Read reads into p at the file offset; Result 0 at end of file.
func (f *File) Read(c *Context, p []byte) Step {
	return f.await(c, f.fresh().StartRead(f.f, p), f.Timeout)
}

// Write writes all of p at the file offset.
func (f *File) Write(c *Context, p []byte) Step {
	return f.await(c, f.fresh().StartWrite(f.f, p), f.Timeout)
}

// ReadAt reads into p at off (pread); Result 0 at end of file.
func (f *File) ReadAt(c *Context, p []byte, off int64) Step {
	return f.await(c, f.fresh().StartPread(f.f, p, off), f.Timeout)
}

// WriteAt writes p at off (pwrite).
func (f *File) WriteAt(c *Context, p []byte, off int64) Step {
	return f.await(c, f.fresh().StartPwrite(f.f, p, off), f.Timeout)
}

// Sync flushes the file (fsync).
func (f *File) Sync(c *Context) Step { return f.await(c, f.fresh().StartFsync(f.f), f.Timeout) }

// Fstat reads the open file's status; then Stat returns it.
func (f *File) Fstat(c *Context) Step { return f.await(c, f.fresh().StartFstat(f.f), f.Timeout) }

// StatPath reads path's status (stat); then Stat returns it.
func (f *File) StatPath(c *Context, path string) Step {
	return f.await(c, f.fresh().StartStat(path), f.Timeout)
}

// Stat returns the status the last Fstat or StatPath read.
func (f *File) Stat() unix.Stat_t { return f.stat }

// Close closes the open file; the File can Open another afterwards.
func (f *File) Close(c *Context) Step {
	file := f.f
	f.f = nil
	return f.await(c, f.fresh().StartClose(file), f.Timeout)
}

// Release releases the request (after the last operation).
func (f *File) Release() { f.req.Close() }

// Child is a child process started with StartProcess: its stdin, stdout and
// stderr (when asked for in reactor.ExecOptions) are FDs, read and written
// with TryRead/TryWrite and AwaitReadable/AwaitWritable; its exit is a
// Source (the reactor's pidfd event): c.AwaitSource(&ch.Source, d), then
// ch.Wait reaps it.
type Child struct {
	Source
	c                     *reactor.Child
	Stdin, Stdout, Stderr *FD // nil unless asked for
}

// StartProcess starts path with argv (argv[0] included). A binary that
// cannot be executed fails here, with os.StartProcess's *os.PathError.
func (s *Scheduler) StartProcess(path string, argv []string, o reactor.ExecOptions) (*Child, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	ch := &Child{}
	c, err := l.Spawn(path, argv, o, func() { s.fireSource(&ch.Source) })
	if err != nil {
		return nil, err
	}
	ch.c = c
	ch.Source = Source{ev: c.Exit, outcome: func() (any, error) { return nil, nil }}
	if c.Stdin != nil {
		ch.Stdin = s.wrapFD(c.Stdin)
	}
	if c.Stdout != nil {
		ch.Stdout = s.wrapFD(c.Stdout)
	}
	if c.Stderr != nil {
		ch.Stderr = s.wrapFD(c.Stderr)
	}
	return ch, nil
}

// Pid returns the child's process id.
func (ch *Child) Pid() int { return ch.c.Pid() }

// Exited reports whether the child's exit has been seen (then Wait reaps
// it without blocking).
func (ch *Child) Exited() bool { return ch.c.Exit.Exited() }

// Kill sends sig to the child.
func (ch *Child) Kill(sig unix.Signal) error { return ch.c.Kill(sig) }

// Wait reaps the child after its exit Source fired; before, it refuses
// (an error), never blocking the scheduler.
func (ch *Child) Wait() (*os.ProcessState, error) { return ch.c.Wait() }

// Close releases the pipes and the exit event; a child still running is
// killed and reaped.
func (ch *Child) Close() {
	for _, f := range []*FD{ch.Stdin, ch.Stdout, ch.Stderr} {
		if f != nil {
			f.rd.ev.(*reactor.Poll).Close()
			f.wr.ev.(*reactor.Poll).Close()
		}
	}
	ch.c.Close() // closes the pipe fds
}

// Watch is an inotify watch as a Source (reactor.Watch): the wait's Result
// is the batch of []reactor.FSEvent (reused by the next wait). Events
// arriving while no task waits are kept for the next wait.
type Watch struct {
	Source
	w *reactor.Watch
}

// NewWatch watches path for the events in mask; a missing path fails with
// an *os.PathError.
func (s *Scheduler) NewWatch(path string, mask uint32) (*Watch, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	wt := &Watch{}
	if wt.w, err = l.NewWatch(path, mask, func() { s.fireSource(&wt.Source) }); err != nil {
		return nil, err
	}
	wt.Source = Source{ev: wt.w, outcome: func() (any, error) { return wt.w.Events(), nil }}
	return wt, nil
}

// Close removes the watch.
func (wt *Watch) Close() { wt.w.Close() }

// Resolver resolves host names on the reactor's thread pool
// (reactor.Resolve: Go's resolver, pointed at reactor.Options.DNSServer,
// given through Options.Loop, or resolv.conf). One lookup at a time.
type Resolver struct {
	poolWait
	r *reactor.Resolve
}

// NewResolver returns an idle Resolver.
func (s *Scheduler) NewResolver() (*Resolver, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	rs := &Resolver{}
	rs.r = l.NewResolve(func() { s.fireSource(&rs.Source) })
	rs.Source = Source{ev: submitted{rs.r.Stop}, outcome: rs.outcome}
	return rs, nil
}

func (rs *Resolver) outcome() (any, error) {
	if err := rs.r.Err(); err != nil {
		return nil, err
	}
	addrs, err := rs.r.Result()
	if err != nil {
		return nil, err
	}
	return addrs, nil
}

// AwaitLookup starts the lookup of name and suspends the task until its
// answer: Result is the []netip.Addr. The timeout (none if <= 0) is the
// lookup's own: a *net.DNSError whose IsTimeout is true; an unknown name is
// one whose IsNotFound is true. A cancellation stops the lookup at once.
func (c *Context) AwaitLookup(rs *Resolver, name string, timeout time.Duration) Step {
	rs.r.Stop()
	return rs.await(c, rs.r.Start(name, timeout), 0)
}

// Addrs is a typed reading of c.Result() after AwaitLookup.
func Addrs(c *Context) []netip.Addr { a, _ := c.Result().([]netip.Addr); return a }

// Close releases the Resolver.
func (rs *Resolver) Close() { rs.r.Close() }

// TTY is a terminal as an FD (reactor.TTY: pollable, no thread needed), with
// the terminal controls on T. TryRead reports a pty master whose slave side
// has closed as io.EOF (the kernel's EIO).
type TTY struct {
	*FD
	T *reactor.TTY
}

// TryRead reads without blocking (FD.TryRead's twin through
// reactor.TTY.TryRead, for the EIO rule).
func (t *TTY) TryRead(p []byte) (int, error) { return t.T.TryRead(p) }

// OpenPTY opens a pseudo-terminal pair: the master side as a TTY, the slave
// side as a blocking *os.File for a child or a test to use as its terminal.
func (s *Scheduler) OpenPTY() (*TTY, *os.File, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, nil, err
	}
	m, slave, err := l.OpenPTY()
	if err != nil {
		return nil, nil, err
	}
	return &TTY{FD: s.wrapFD(m.FD), T: m}, slave, nil
}

// NewTTY registers the terminal fd (owned from now on); a non-terminal is
// refused with an error naming it.
func (s *Scheduler) NewTTY(fd int) (*TTY, error) {
	l, err := s.Loop()
	if err != nil {
		return nil, err
	}
	t, err := l.NewTTY(fd)
	if err != nil {
		return nil, err
	}
	return &TTY{FD: s.wrapFD(t.FD), T: t}, nil
}
