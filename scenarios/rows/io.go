package rows

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/internal/loopback"
)

// This file holds the built-in rows' IO capabilities (Pipes, TCP: see
// capabilities.go), which the fdwake and echo bodies type-assert.
// The stackful rows implement them on the fibers adapter with
// stackful.OpenIO (the fd is registered with the scheduler's reactor, and a
// read or write that would block suspends only the calling coroutine); the
// goroutine rows implement them with os and net, whose files and sockets
// park the goroutine on Go's netpoller. The bodies cannot tell the
// difference, which is the point.

var (
	_ scenarios.Pipes = fibers{}
	_ scenarios.TCP   = fibers{}
	_ scenarios.Pipes = (*goroutines)(nil)
	_ scenarios.TCP   = (*goroutines)(nil)
)

// Pipe returns a pipe whose ends are registered with the running stackful
// scheduler's reactor.
func (fibers) Pipe() (io.ReadCloser, io.WriteCloser, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe2: %w", err)
	}
	r, err := stackful.OpenIO(p[0])
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, err
	}
	w, err := stackful.OpenIO(p[1])
	if err != nil {
		r.Close()
		unix.Close(p[1])
		return nil, nil, err
	}
	return r, w, nil
}

// ListenLoopback opens a listening socket registered with the running
// stackful scheduler's reactor.
func (fibers) ListenLoopback() (scenarios.Listener, error) {
	fd, port, err := loopback.Listen()
	if err != nil {
		return nil, err
	}
	lio, err := stackful.OpenIO(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &fiberListener{io: lio, port: port}, nil
}

type fiberListener struct {
	io   *stackful.IO
	port int
}

func (l *fiberListener) Port() int    { return l.port }
func (l *fiberListener) Close() error { return l.io.Close() }

func (l *fiberListener) Accept(timeout time.Duration) (io.ReadWriteCloser, error) {
	nfd, err := loopback.Accept(l.io.FD(), func() error {
		err := l.io.WaitReadable(timeout)
		if errors.Is(err, stackful.ErrTimeout) {
			return scenarios.ErrAcceptTimeout
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	conn, err := stackful.OpenIO(nfd)
	if err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return conn, nil
}

// Pipe returns an os.Pipe: both ends are non-blocking files that park the
// goroutine on the netpoller.
func (*goroutines) Pipe() (io.ReadCloser, io.WriteCloser, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return r, w, nil
}

// ListenLoopback opens a net.TCPListener on 127.0.0.1.
func (*goroutines) ListenLoopback() (scenarios.Listener, error) {
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)))
	if err != nil {
		return nil, err
	}
	return goListener{ln}, nil
}

type goListener struct{ ln *net.TCPListener }

func (l goListener) Port() int    { return l.ln.Addr().(*net.TCPAddr).Port }
func (l goListener) Close() error { return l.ln.Close() }

func (l goListener) Accept(timeout time.Duration) (io.ReadWriteCloser, error) {
	if err := l.ln.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	conn, err := l.ln.AcceptTCP()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, scenarios.ErrAcceptTimeout
	}
	if err != nil {
		return nil, err
	}
	// net sets TCP_NODELAY on every TCP connection; say so explicitly,
	// since the other rows' fairness depends on it.
	if err := conn.SetNoDelay(true); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
