package reactor

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Events is a set of fd readiness conditions.
type Events uint8

const (
	Readable Events = 1 << iota // data, EOF, a pending connection, or an error to read
	Writable                    // buffer space, or an error to write
	Error                       // EPOLLERR: the next read or write returns the error (e.g. ECONNRESET)
	Hangup                      // EPOLLHUP/EPOLLRDHUP: the peer closed its side
)

func (e Events) String() string {
	if e == 0 {
		return "none"
	}
	s := ""
	for i, name := range []string{"readable", "writable", "error", "hangup"} {
		if e&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += name
		}
	}
	return s
}

type fdKind uint8

const (
	kindIO fdKind = iota
	kindWake
	kindTimerfd
	kindPidfd
	kindInotify
)

// userFD reports whether an fd of this kind can hold an event that a
// non-blocking Tick must collect by polling. The loop's own eventfd cannot
// without Loop.wakePending saying so first, and its timerfd matters only to
// a blocking wait (a non-blocking Tick fires due timers by the clock).
func (k fdKind) userFD() bool { return k != kindWake && k != kindTimerfd }

// fdSlot is the loop's entry for one fd number. gen counts registrations of
// that number; epoll results carry the generation they were registered with
// so that results for a closed (and maybe reused) number are recognised.
type fdSlot struct {
	fd  *FD
	gen uint32
}

// FD is a non-blocking file descriptor registered with the loop exactly
// once, edge-triggered (EPOLLET) for input and output.
//
// Why edge-triggered: the fd stays registered for its whole life and waiting
// again costs no syscall. The FD caches readiness from the edges; a Try*
// call clears the cached bit only when the kernel says EAGAIN, and any data
// arriving after that EAGAIN raises a new edge. So a request/response cycle
// on a keep-alive connection costs read + write + the read that hits EAGAIN
// + the epoll wait, and no epoll_ctl at all (EPOLLONESHOT would add an
// EPOLL_CTL_MOD per wait; DEL+ADD, two). The price: all reads and writes must
// go through the Try* helpers, or the caller must call ClearReady after its
// own EAGAIN, or a Poll may fire spuriously (never too late).
//
// Close the fd with FD.Close, never close(2): the kernel silently drops a
// closed fd from epoll, so a poll pending on it would never fire. The loop
// notices only when the number is registered again (the old FD's polls then
// fire with ErrClosedOutside) or when a dup of the file keeps reporting
// under the old number (dropped by the generation check).
type FD struct {
	loop   *Loop
	fd     int
	gen    uint32
	kind   fdKind
	dgram  bool   // datagram socket: a zero-length read is a datagram, not EOF
	ready  Events // readiness seen since the last EAGAIN
	closed bool
	err    error // why the FD is closed: ErrClosed or ErrClosedOutside
	polls  *Poll // started polls, intrusive doubly linked list
	proc   *Process
}

// NewFD registers fd with the loop and takes ownership of it: it becomes
// non-blocking and FD.Close (or Loop.Close) closes it. Register an fd once;
// to wait on it repeatedly, Start a Poll again.
//
// Regular files and directories cannot be polled (epoll refuses them: they
// are always ready); use blocking IO for them.
func (l *Loop) NewFD(fd int) (*FD, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	if fd < 0 {
		return nil, fmt.Errorf("reactor: NewFD(%d): not a file descriptor", fd)
	}
	l.stats.Syscalls += 2 // SetNonblock is F_GETFL + F_SETFL
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("reactor: NewFD(%d): making it non-blocking: %w", fd, err)
	}
	return l.registerIO(fd)
}

// registerIO registers an already non-blocking fd as an IO FD.
func (l *Loop) registerIO(fd int) (*FD, error) {
	f, err := l.register(fd, kindIO, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET)
	if err != nil {
		return nil, err
	}
	l.stats.Syscalls++
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err == nil {
		f.dgram = typ == unix.SOCK_DGRAM || typ == unix.SOCK_SEQPACKET
	}
	return f, nil
}

// register adds fd to the epoll set and to the fd table.
func (l *Loop) register(fd int, kind fdKind, events uint32) (*FD, error) {
	if fd >= len(l.fds) {
		n := max(2*len(l.fds), fd+1, 64)
		fds := make([]fdSlot, n)
		copy(fds, l.fds)
		l.fds = fds
	}
	slot := &l.fds[fd]
	gen := slot.gen + 1
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(gen)}
	l.stats.Syscalls++
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		switch err {
		case unix.EEXIST:
			return nil, fmt.Errorf("reactor: fd %d is already registered with this loop; keep using the *FD returned the first time", fd)
		case unix.EPERM:
			return nil, fmt.Errorf("reactor: fd %d cannot be polled (a regular file or directory is always ready); use blocking IO for it", fd)
		case unix.EBADF:
			return nil, fmt.Errorf("reactor: fd %d is not open", fd)
		}
		return nil, os.NewSyscallError("epoll_ctl(ADD)", err)
	}
	if old := slot.fd; old != nil {
		// The kernel accepted the number, so the file registered under it
		// earlier is gone: it was closed with close(2) rather than FD.Close.
		// Its waiters learn that instead of waiting forever.
		old.invalidate(ErrClosedOutside)
		if old.kind.userFD() {
			l.userFDs-- // its slot now holds f
		}
	}
	slot.gen = gen
	f := &FD{loop: l, fd: fd, gen: gen, kind: kind}
	slot.fd = f
	if kind.userFD() {
		l.userFDs++
	}
	return f, nil
}

// Fd returns the file descriptor number.
func (f *FD) Fd() int { return f.fd }

// Ready returns the readiness the FD has seen since the last EAGAIN.
func (f *FD) Ready() Events { return f.ready }

// ClearReady forgets cached readiness: call it after an EAGAIN from a read or
// write made without the Try* helpers (ClearReady(Readable|Error) after a
// read, ClearReady(Writable|Error) after a write).
func (f *FD) ClearReady(e Events) { f.ready &^= e }

// onEpoll records readiness from an epoll result and queues the started
// polls that want it.
func (f *FD) onEpoll(ev uint32) {
	var r Events
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		r |= Readable
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		r |= Writable
	}
	if ev&unix.EPOLLERR != 0 {
		r |= Error
	}
	if ev&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		r |= Hangup
	}
	f.ready |= r
	for p := f.polls; p != nil; p = p.next {
		if p.want&f.ready != 0 {
			f.loop.enqueue(p, &p.queued)
		}
	}
}

// invalidate marks the FD dead and wakes its started polls with err.
func (f *FD) invalidate(err error) {
	f.closed = true
	f.err = err
	for p := f.polls; p != nil; p = p.next {
		f.loop.enqueue(p, &p.queued)
	}
}

// Close wakes every started poll of the FD with ErrClosed (in the next
// Tick), removes the fd from epoll and closes it. Closing twice is a no-op.
func (f *FD) Close() error {
	if f.closed {
		return nil
	}
	l := f.loop
	f.invalidate(ErrClosed)
	if l.closed {
		return nil // Loop.Close closed the fd already
	}
	if l.fds[f.fd].fd == f {
		l.fds[f.fd].fd = nil
		if f.kind.userFD() {
			l.userFDs--
		}
	}
	// Deleting explicitly matters when the file is shared (dup, fork): then
	// close alone would leave it in the epoll set.
	l.stats.Syscalls += 2
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, f.fd, nil)
	if err := unix.Close(f.fd); err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// TryRead reads into p without blocking. It returns ErrWouldBlock (EAGAIN)
// when nothing is ready: Start a Readable Poll, suspend, and retry when it
// fires. End of stream is 0, io.EOF (for datagram sockets, 0, nil is an
// empty datagram). A peer reset arrives as ECONNRESET.
func (f *FD) TryRead(p []byte) (int, error) {
	if f.closed {
		return 0, f.err
	}
	for {
		f.loop.stats.Syscalls++
		n, err := unix.Read(f.fd, p)
		switch err {
		case nil:
			if n == 0 && len(p) > 0 && !f.dgram {
				return 0, io.EOF
			}
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			f.ready &^= Readable | Error // a pending error would have been returned instead
			return 0, ErrWouldBlock
		}
		return 0, os.NewSyscallError("read", err)
	}
}

// TryWrite writes p without blocking and returns how much the kernel took.
// A short count means the buffer filled: the rest would block, so Start a
// Writable Poll before writing it. ErrWouldBlock means nothing was written.
func (f *FD) TryWrite(p []byte) (int, error) {
	if f.closed {
		return 0, f.err
	}
	for {
		f.loop.stats.Syscalls++
		n, err := unix.Write(f.fd, p)
		switch err {
		case nil:
			if n < len(p) {
				f.ready &^= Writable
			}
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			f.ready &^= Writable | Error
			return 0, ErrWouldBlock
		}
		return 0, os.NewSyscallError("write", err)
	}
}

// Poll waits for readiness of one FD. It fires once per Start, when the FD
// is (or becomes) ready for any of the wanted conditions, or when the FD is
// closed. Starting a poll on an FD whose cached readiness already matches
// costs no syscall: it fires in the next Tick.
type Poll struct {
	event
	fd         *FD
	want       Events
	revents    Events
	err        error
	prev, next *Poll
}

// NewPoll creates an idle poll for the wanted conditions (Readable,
// Writable or both). A pending socket error (Error) wakes any poll, since it
// makes both reads and writes return; a hangup wakes readers (it makes reads
// return 0) but not writers, who wake from the Writable that a full hangup
// also raises.
func (f *FD) NewPoll(want Events, cb func()) *Poll {
	if want&(Readable|Writable) == 0 {
		panic("reactor: NewPoll needs Readable, Writable or both, got " + want.String())
	}
	return &Poll{event: newEvent(f.loop, cb, "Poll"), fd: f, want: want&(Readable|Writable) | Error}
}

// Start begins listening. No syscall: the fd is registered already.
func (p *Poll) Start() {
	if !p.activate("Poll") {
		return
	}
	f := p.fd
	p.next = f.polls
	if f.polls != nil {
		f.polls.prev = p
	}
	f.polls = p
	if f.closed || f.ready&p.want != 0 {
		p.loop.enqueue(p, &p.queued)
	}
}

// Stop stops listening; a no-op when idle.
func (p *Poll) Stop() {
	if p.state == stateActive {
		p.unlink()
		p.deactivate()
	}
}

// Close stops and releases the poll (not the FD).
func (p *Poll) Close() {
	p.Stop()
	p.release()
}

// Revents returns the FD's readiness when the poll fired (it may include
// conditions the poll did not ask for, such as Hangup).
func (p *Poll) Revents() Events { return p.revents }

// Err returns nil, or ErrClosed / ErrClosedOutside when the poll fired
// because its FD was closed. Socket errors such as a peer reset are not
// consumed here: Revents has Error set and the next TryRead or TryWrite
// returns the error itself (ECONNRESET, EPIPE, ...).
func (p *Poll) Err() error { return p.err }

func (p *Poll) unlink() {
	f := p.fd
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		f.polls = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	}
	p.prev, p.next = nil, nil
}

// fireQueued fires the poll if it is still started and its condition still
// holds (a Try* call may have consumed the readiness since it was queued).
func (p *Poll) fireQueued() {
	p.queued = false
	if p.state != stateActive {
		return
	}
	f := p.fd
	switch {
	case f.closed:
		p.err, p.revents = f.err, 0
	case f.ready&p.want != 0:
		p.err, p.revents = nil, f.ready
	default:
		return
	}
	p.unlink()
	p.fire()
}
