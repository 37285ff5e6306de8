package stackful

import (
	"errors"
	"net/netip"
	"time"

	"github.com/corobench/corobench/reactor"
)

// IO is a file descriptor registered with the running scheduler's reactor,
// with blocking Read and Write for coroutines (docs/design.md §1: async IO). Each
// direction has one reactor poll and one event, made at Open and reused for
// every wait, so waiting does not allocate. At most one coroutine may wait
// per direction at a time.
type IO struct {
	s      *Scheduler
	fd     *reactor.FD
	rpoll  *reactor.Poll
	wpoll  *reactor.Poll
	rready Event // resolved by rpoll's callback
	wready Event // resolved by wpoll's callback
}

// OpenIO registers fd (a pipe, socket, eventfd... not a regular file) with
// the running scheduler's reactor, which takes ownership of it and makes it
// non-blocking; Close closes it.
func OpenIO(fd int) (*IO, error) {
	s := scheduler("OpenIO")
	rfd, err := s.loop.NewFD(fd)
	if err != nil {
		return nil, err
	}
	return wrapIO(s, rfd), nil
}

// Pipe returns a pipe whose ends are registered with the running
// scheduler's reactor.
func Pipe() (r, w *IO, err error) {
	s := scheduler("Pipe")
	rfd, wfd, err := s.loop.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return wrapIO(s, rfd), wrapIO(s, wfd), nil
}

// ListenTCP returns a listening TCP socket bound to addr (port 0: any free
// port), registered with the running scheduler's reactor.
func ListenTCP(addr netip.AddrPort) (*IO, error) {
	s := scheduler("ListenTCP")
	rfd, err := s.loop.ListenTCP(addr)
	if err != nil {
		return nil, err
	}
	return wrapIO(s, rfd), nil
}

// DialTCP connects to addr, suspending the coroutine until the connection
// is established or fails.
func DialTCP(addr netip.AddrPort) (*IO, error) {
	s := scheduler("DialTCP")
	rfd, err := s.loop.DialTCP(addr)
	if err != nil {
		return nil, err
	}
	io := wrapIO(s, rfd)
	if err := io.WaitWritable(-1); err != nil {
		io.Close()
		return nil, err
	}
	if err := rfd.FinishConnect(); err != nil {
		io.Close()
		return nil, err
	}
	return io, nil
}

// Accept waits for a connection on a listening socket and returns it,
// registered with the reactor.
func (io *IO) Accept() (*IO, error) {
	for {
		rfd, _, err := io.fd.TryAccept()
		if err == nil {
			return wrapIO(io.s, rfd), nil
		}
		if !errors.Is(err, reactor.ErrWouldBlock) {
			return nil, err
		}
		if err := io.wait(io.rpoll, &io.rready, -1); err != nil {
			return nil, err
		}
	}
}

func wrapIO(s *Scheduler, rfd *reactor.FD) *IO {
	io := &IO{s: s, fd: rfd}
	io.rpoll = rfd.NewPoll(reactor.Readable, func() { io.rready.Resolve(nil) })
	io.wpoll = rfd.NewPoll(reactor.Writable, func() { io.wready.Resolve(nil) })
	return io
}

// FD returns the reactor's handle of the descriptor.
func (io *IO) FD() *reactor.FD { return io.fd }

// Read reads into p, suspending the coroutine until data, end of stream
// (0, io.EOF) or an error arrives.
func (io *IO) Read(p []byte) (int, error) {
	for {
		n, err := io.fd.TryRead(p)
		if !errors.Is(err, reactor.ErrWouldBlock) {
			return n, err
		}
		if err := io.wait(io.rpoll, &io.rready, -1); err != nil {
			return 0, err
		}
	}
}

// Write writes all of p, suspending the coroutine whenever the descriptor
// is not writable. It returns how much was written and the first error.
func (io *IO) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := io.fd.TryWrite(p[done:])
		done += n
		switch {
		case err == nil:
		case errors.Is(err, reactor.ErrWouldBlock):
			if err := io.wait(io.wpoll, &io.wready, -1); err != nil {
				return done, err
			}
		default:
			return done, err
		}
	}
	return done, nil
}

// WaitReadable suspends the coroutine until the descriptor is readable,
// failing with ErrTimeout after timeout (none if negative).
func (io *IO) WaitReadable(timeout time.Duration) error {
	return io.wait(io.rpoll, &io.rready, timeout)
}

// WaitWritable suspends the coroutine until the descriptor is writable,
// failing with ErrTimeout after timeout (none if negative).
func (io *IO) WaitWritable(timeout time.Duration) error {
	return io.wait(io.wpoll, &io.wready, timeout)
}

// wait starts the poll, awaits its event and stops the poll again (it may
// not have fired: a timeout or a cancellation came first).
func (io *IO) wait(p *reactor.Poll, ready *Event, timeout time.Duration) error {
	ready.Reset()
	p.Start()
	_, err := AwaitWith(ready, nil, timeout)
	p.Stop()
	if err == nil {
		err = p.Err()
	}
	return err
}

// Close closes the descriptor; a coroutine waiting on it wakes with
// reactor.ErrClosed.
func (io *IO) Close() error {
	err := io.fd.Close()
	// Wake the waiters ourselves: the closed polls will not fire.
	if io.rpoll.Active() {
		io.rready.Reject(reactor.ErrClosed)
	}
	if io.wpoll.Active() {
		io.wready.Reject(reactor.ErrClosed)
	}
	io.rpoll.Close()
	io.wpoll.Close()
	return err
}
