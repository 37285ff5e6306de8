// Package loopback opens and accepts non-blocking TCP sockets on
// 127.0.0.1 for the rows that serve through corobench's reactor: the
// stackful rows' TCP capability (scenarios/rows) and the stackless echo
// body (scenarios/bodies) share it, so both accept the same way.
package loopback

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// Listen returns a non-blocking TCP listening socket bound to
// 127.0.0.1 on a free port, and that port.
func Listen() (fd, port int, err error) {
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

// Accept accepts one connection on the reactor-registered listener
// lfd, calling wait to suspend until the listener is readable whenever no
// connection is pending.
func Accept(lfd *reactor.FD, wait func() error) (int, error) {
	for {
		nfd, err := TryAccept(lfd)
		if err != reactor.ErrWouldBlock {
			return nfd, err
		}
		if err := wait(); err != nil {
			return -1, err
		}
	}
}

// TryAccept accepts one pending connection on the reactor-registered
// listener lfd without blocking; reactor.ErrWouldBlock means none is
// pending (wait for lfd to be readable, then retry). The accepted socket is
// non-blocking, close-on-exec, and has TCP_NODELAY set.
func TryAccept(lfd *reactor.FD) (int, error) {
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
