package scenarios

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
	"github.com/corobench/corobench/reactor"
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
	_ Pipes = fibers{}
	_ TCP   = fibers{}
	_ Pipes = (*goroutines)(nil)
	_ TCP   = (*goroutines)(nil)
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
func (fibers) ListenLoopback() (Listener, error) {
	fd, port, err := listenLoopbackFD()
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
	nfd, err := acceptLoopback(l.io.FD(), func() error {
		err := l.io.WaitReadable(timeout)
		if errors.Is(err, stackful.ErrTimeout) {
			return ErrAcceptTimeout
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

// listenLoopbackFD returns a non-blocking TCP listening socket bound to
// 127.0.0.1 on a free port, and that port.
func listenLoopbackFD() (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("socket: %w", err)
	}
	fail := func(op string, err error) (int, int, error) {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail("bind 127.0.0.1:0", err)
	}
	// The kernel caps the backlog at net.core.somaxconn; the echo scenario's
	// generator opens up to 1024 connections before the first is accepted.
	if err := unix.Listen(fd, 4096); err != nil {
		return fail("listen", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return fail("getsockname", fmt.Errorf("unexpected address %T", sa))
	}
	return fd, in4.Port, nil
}

// acceptLoopback accepts one connection on the reactor-registered listener
// lfd, calling wait to suspend until the listener is readable whenever no
// connection is pending.
func acceptLoopback(lfd *reactor.FD, wait func() error) (int, error) {
	for {
		nfd, err := tryAccept(lfd)
		if err != reactor.ErrWouldBlock {
			return nfd, err
		}
		if err := wait(); err != nil {
			return -1, err
		}
	}
}

// tryAccept accepts one pending connection on the reactor-registered
// listener lfd without blocking; reactor.ErrWouldBlock means none is
// pending (wait for lfd to be readable, then retry). The accepted socket is
// non-blocking, close-on-exec, and has TCP_NODELAY set.
func tryAccept(lfd *reactor.FD) (int, error) {
	for {
		nfd, _, err := unix.Accept4(lfd.Fd(), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == nil {
			if err := unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
				unix.Close(nfd)
				return -1, fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
			}
			return nfd, nil
		}
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != unix.EAGAIN {
			return -1, fmt.Errorf("accept4: %w", err)
		}
		// accept4 bypassed the reactor's Try* helpers, so its EAGAIN must
		// clear the cached readiness, or the next wait would return at once.
		lfd.ClearReady(reactor.Readable | reactor.Error)
		return -1, reactor.ErrWouldBlock
	}
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
func (*goroutines) ListenLoopback() (Listener, error) {
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
		return nil, ErrAcceptTimeout
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
