package loadgen

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// TrivialServer is the cheapest echo server we know how to write, for
// measuring the generator's own ceiling: one OS thread (pinned when asked)
// blocking in epoll_wait on level-triggered sockets, reading what arrived
// and writing it straight back, with no runtime, scheduler or buffer
// between it and the kernel. What the generator sustains against it is
// what the generator itself sustains (with a server that costs as little
// as a server can): a row whose knee comes near it may be measuring the
// generator.
//
// Accepted sockets are left blocking: a read happens only when epoll says
// the socket is readable, and a write blocks only while the peer's receive
// buffer is full, which the generator (which never blocks) soon drains.
type TrivialServer struct {
	lfd, epfd, stop int
	addr            netip.AddrPort
	done            chan error
	// blocked is the time serve spent waiting in epoll_wait for work:
	// the server's spare capacity (CPU-time counters leave out the
	// softirq work of its sends, most of what a loopback echo costs).
	// Written by serve only, read after Close.
	blocked time.Duration
	// burn is the thread CPU time spent per size bytes read
	// (StartBurningServer); zero for the trivial server itself.
	burn time.Duration
	size int
}

// StartTrivialServer listens on 127.0.0.1 (an ephemeral port) and serves
// on a thread of its own, pinned to cpu when cpu >= 0.
func StartTrivialServer(cpu int) (*TrivialServer, error) {
	return StartBurningServer(cpu, 0, 1)
}

// StartBurningServer is StartTrivialServer made slower by a known amount:
// for every size bytes it reads (one request) it spins until its thread
// has used burn more CPU time, then echoes. Its capacity is then set by
// the server, not the generator (about 1e9 / (burn + the trivial server's
// own cost) requests per second): a case where a server's measured knee
// lies below the generator's ceiling, against which an estimate of
// capacity from the server's cost per request can be checked
// (-server-burn).
func StartBurningServer(cpu int, burn time.Duration, size int) (*TrivialServer, error) {
	if burn < 0 || size < 1 {
		return nil, fmt.Errorf("trivial server: burn %v per %d bytes: want burn >= 0 and size >= 1", burn, size)
	}
	s := &TrivialServer{lfd: -1, epfd: -1, stop: -1, done: make(chan error, 1), burn: burn, size: size}
	fail := func(err error) (*TrivialServer, error) {
		s.closeFDs()
		return nil, fmt.Errorf("trivial server: %w", err)
	}
	var err error
	if s.lfd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0); err != nil {
		return fail(err)
	}
	if err := unix.Bind(s.lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail(err)
	}
	if err := unix.Listen(s.lfd, 4096); err != nil {
		return fail(err)
	}
	sa, err := unix.Getsockname(s.lfd)
	if err != nil {
		return fail(err)
	}
	s.addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	if s.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail(err)
	}
	if s.stop, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail(err)
	}
	for _, fd := range []int{s.lfd, s.stop} {
		if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return fail(err)
		}
	}
	ready := make(chan error, 1)
	go func() {
		// The thread is the server's alone and ends with it (no
		// UnlockOSThread), so its affinity does not leak into the
		// runtime's thread pool.
		runtime.LockOSThread()
		if cpu >= 0 {
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				ready <- fmt.Errorf("pinning the server thread to cpu %d: %w", cpu, err)
				return
			}
		}
		ready <- nil
		s.done <- s.serve()
	}()
	if err := <-ready; err != nil {
		return fail(err)
	}
	return s, nil
}

// Blocked is the time the server's thread spent waiting for work (in
// epoll_wait), from its start to Close; valid after Close.
func (s *TrivialServer) Blocked() time.Duration { return s.blocked }

// Addr is the server's address.
func (s *TrivialServer) Addr() netip.AddrPort { return s.addr }

// serve is the loop: accept, read, write back, until Close.
func (s *TrivialServer) serve() error {
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	var unburnt int // bytes read whose burn is still owed (< size)
	conns := map[int32]bool{}
	defer func() {
		for fd := range conns {
			unix.Close(int(fd))
		}
	}()
	for {
		t := time.Now()
		n, err := unix.EpollWait(s.epfd, events, -1)
		s.blocked += time.Since(t)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			switch int(ev.Fd) {
			case s.stop:
				return nil
			case s.lfd:
				for {
					fd, _, err := unix.Accept4(s.lfd, unix.SOCK_CLOEXEC)
					if err == unix.EAGAIN || err == unix.EINTR {
						break
					}
					if err != nil {
						return fmt.Errorf("accept: %w", err)
					}
					unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
					if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
						unix.Close(fd)
						return fmt.Errorf("epoll_ctl: %w", err)
					}
					conns[int32(fd)] = true
				}
			default:
				r, err := unix.Read(int(ev.Fd), buf)
				if err == unix.EINTR || err == unix.EAGAIN {
					continue
				}
				if err != nil || r == 0 {
					// The generator closed (or reset) the connection.
					unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(ev.Fd), nil)
					unix.Close(int(ev.Fd))
					delete(conns, ev.Fd)
					continue
				}
				if s.burn > 0 {
					unburnt += r
					spinThreadCPU(s.burn * time.Duration(unburnt/s.size))
					unburnt %= s.size
				}
				for p := buf[:r]; len(p) > 0; {
					w, err := unix.Write(int(ev.Fd), p)
					if err == unix.EINTR {
						continue
					}
					if err != nil {
						return fmt.Errorf("write: %w", err)
					}
					p = p[w:]
				}
			}
		}
	}
}

// Close stops the server, waits for its thread, and returns what ended it
// (nil for Close itself).
func (s *TrivialServer) Close() error {
	var one = [8]byte{1}
	_, werr := unix.Write(s.stop, one[:])
	var err error
	if werr == nil {
		err = <-s.done
	}
	s.closeFDs()
	return errors.Join(werr, err)
}

func (s *TrivialServer) closeFDs() {
	for _, fd := range []*int{&s.lfd, &s.epfd, &s.stop} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// spinThreadCPU spins until the calling thread has used d more CPU time
// (CLOCK_THREAD_CPUTIME_ID: the clock's own system calls count as spent).
func spinThreadCPU(d time.Duration) {
	if d <= 0 {
		return
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	until := ts.Nano() + int64(d)
	for ts.Nano() < until {
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	}
}
