package reactor

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// Constructors for the fds the scenarios need: pipes, TCP listeners and
// connections, UDP sockets. They create the fd non-blocking and close-on-exec
// in the creating syscall (no fcntl) and register it once.

// Pipe returns the read and write ends of a new pipe.
func (l *Loop) Pipe() (r, w *FD, err error) {
	if l.closed {
		return nil, nil, ErrLoopClosed
	}
	var p [2]int
	l.stats.Syscalls++
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if r, err = l.registerIO(p[0]); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, err
	}
	if w, err = l.registerIO(p[1]); err != nil {
		r.Close()
		unix.Close(p[1])
		return nil, nil, err
	}
	return r, w, nil
}

// ListenTCP binds a TCP listener to addr (port 0 picks a free port; see
// LocalAddr) with SO_REUSEADDR. Accept connections with TryAccept after a
// Readable poll.
func (l *Loop) ListenTCP(addr netip.AddrPort) (*FD, error) {
	f, err := l.socket(addr, unix.SOCK_STREAM)
	if err != nil {
		return nil, err
	}
	l.stats.Syscalls += 2
	if err := unix.SetsockoptInt(f.fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		f.Close()
		return nil, os.NewSyscallError("setsockopt(SO_REUSEADDR)", err)
	}
	if err := unix.Bind(f.fd, sockaddr(addr)); err != nil {
		f.Close()
		return nil, fmt.Errorf("reactor: ListenTCP(%v): %w", addr, os.NewSyscallError("bind", err))
	}
	l.stats.Syscalls++
	if err := unix.Listen(f.fd, unix.SOMAXCONN); err != nil {
		f.Close()
		return nil, os.NewSyscallError("listen", err)
	}
	return f, nil
}

// DialTCP starts a non-blocking connect to addr. The connection is
// established when a Writable poll fires; then FinishConnect reports whether
// it succeeded.
func (l *Loop) DialTCP(addr netip.AddrPort) (*FD, error) {
	f, err := l.socket(addr, unix.SOCK_STREAM)
	if err != nil {
		return nil, err
	}
	l.stats.Syscalls++
	switch err := unix.Connect(f.fd, sockaddr(addr)); err {
	case nil, unix.EINPROGRESS:
		return f, nil
	default:
		f.Close()
		return nil, fmt.Errorf("reactor: DialTCP(%v): %w", addr, os.NewSyscallError("connect", err))
	}
}

// FinishConnect returns the outcome of a DialTCP once a Writable poll fired:
// nil when connected, else the connect error (ECONNREFUSED, ...).
func (f *FD) FinishConnect() error {
	if f.closed {
		return f.err
	}
	f.loop.stats.Syscalls++
	soerr, err := unix.GetsockoptInt(f.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return os.NewSyscallError("getsockopt(SO_ERROR)", err)
	}
	if soerr != 0 {
		return os.NewSyscallError("connect", unix.Errno(soerr))
	}
	return nil
}

// TryAccept accepts one pending connection and registers it. It returns
// ErrWouldBlock when none is pending (Start a Readable poll on the listener).
func (f *FD) TryAccept() (*FD, unix.Sockaddr, error) {
	if f.closed {
		return nil, nil, f.err
	}
	for {
		f.loop.stats.Syscalls++
		nfd, sa, err := unix.Accept4(f.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
			c, err := f.loop.registerIO(nfd)
			if err != nil {
				unix.Close(nfd)
				return nil, nil, err
			}
			return c, sa, nil
		case unix.EINTR, unix.ECONNABORTED:
			continue // a connection reset before we accepted it: try the next
		case unix.EAGAIN:
			f.ready &^= Readable | Error
			return nil, nil, ErrWouldBlock
		}
		return nil, nil, os.NewSyscallError("accept4", err)
	}
}

// ListenUDP binds a UDP socket to addr (port 0 picks a free port).
func (l *Loop) ListenUDP(addr netip.AddrPort) (*FD, error) {
	f, err := l.socket(addr, unix.SOCK_DGRAM)
	if err != nil {
		return nil, err
	}
	l.stats.Syscalls++
	if err := unix.Bind(f.fd, sockaddr(addr)); err != nil {
		f.Close()
		return nil, fmt.Errorf("reactor: ListenUDP(%v): %w", addr, os.NewSyscallError("bind", err))
	}
	return f, nil
}

// TryRecvfrom receives one datagram and its sender. The sender is returned
// as a unix.Sockaddr, which allocates; on a connected socket (Connect) use
// TryRead, which does not.
func (f *FD) TryRecvfrom(p []byte) (int, unix.Sockaddr, error) {
	if f.closed {
		return 0, nil, f.err
	}
	for {
		f.loop.stats.Syscalls++
		n, from, err := unix.Recvfrom(f.fd, p, 0)
		switch err {
		case nil:
			return n, from, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			f.ready &^= Readable | Error
			return 0, nil, ErrWouldBlock
		}
		return 0, nil, os.NewSyscallError("recvfrom", err)
	}
}

// TrySendto sends one datagram to addr.
func (f *FD) TrySendto(p []byte, to unix.Sockaddr) error {
	if f.closed {
		return f.err
	}
	for {
		f.loop.stats.Syscalls++
		err := unix.Sendto(f.fd, p, 0, to)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			f.ready &^= Writable | Error
			return ErrWouldBlock
		}
		return os.NewSyscallError("sendto", err)
	}
}

// Connect sets the default peer of a datagram socket (UDP connect(2): no
// packets are sent), after which TryRead and TryWrite work on it.
func (f *FD) Connect(addr netip.AddrPort) error {
	if f.closed {
		return f.err
	}
	f.loop.stats.Syscalls++
	if err := unix.Connect(f.fd, sockaddr(addr)); err != nil {
		return fmt.Errorf("reactor: Connect(%v): %w", addr, os.NewSyscallError("connect", err))
	}
	return nil
}

// LocalAddr returns the socket's bound address (e.g. the port a listener
// picked for port 0).
func (f *FD) LocalAddr() (netip.AddrPort, error) {
	if f.closed {
		return netip.AddrPort{}, f.err
	}
	f.loop.stats.Syscalls++
	sa, err := unix.Getsockname(f.fd)
	if err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockname", err)
	}
	return addrPort(sa)
}

// socket creates a non-blocking socket of the family of addr and registers it.
func (l *Loop) socket(addr netip.AddrPort, typ int) (*FD, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	if !addr.IsValid() {
		return nil, fmt.Errorf("reactor: invalid address %v: give an IP and a port, e.g. 127.0.0.1:0", addr)
	}
	family := unix.AF_INET6
	if addr.Addr().Unmap().Is4() {
		family = unix.AF_INET
	}
	l.stats.Syscalls++
	fd, err := unix.Socket(family, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	f, err := l.registerIO(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return f, nil
}

// sockaddr converts addr to the unix form (IPv4-mapped addresses as IPv4).
func sockaddr(addr netip.AddrPort) unix.Sockaddr {
	ip := addr.Addr().Unmap()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(addr.Port()), Addr: ip.As4()}
	}
	return &unix.SockaddrInet6{Port: int(addr.Port()), Addr: ip.As16()}
}

func addrPort(sa unix.Sockaddr) (netip.AddrPort, error) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)), nil
	}
	return netip.AddrPort{}, fmt.Errorf("reactor: unsupported socket address %T", sa)
}
