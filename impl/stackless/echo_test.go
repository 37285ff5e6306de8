package stackless

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// A TCP echo server and its clients on loopback, all state machines on one
// scheduler: the listener accepts (accept4 + ClearReady on EAGAIN), each
// connection echoes until EOF, each client sends rounds messages and checks
// every echo.

type listener struct {
	Coro
	f        *FD
	want     int
	accepted int
	conns    []*echoConn
}

func (t *listener) Resume(c *Context) Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for t.accepted < t.want {
		nfd, _, err := unix.Accept4(t.f.Fd(), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == unix.EAGAIN {
			t.f.ClearReady(reactor.Readable)
			return c.AwaitReadable(t.f)
		}
		if err != nil {
			return c.Fail(fmt.Errorf("accept4: %w", err))
		}
		cf, err := c.Scheduler().NewFD(nfd)
		if err != nil {
			return c.Fail(err)
		}
		conn := &echoConn{f: cf}
		t.conns = append(t.conns, conn)
		if err := c.Spawn(conn); err != nil {
			return c.Fail(err)
		}
		t.accepted++
	}
	return c.Done()
}

// echoConn states: read, then write the pending bytes.
type echoConn struct {
	Coro
	f       *FD
	buf     [512]byte
	pending []byte
	echoed  int
}

func (t *echoConn) Resume(c *Context) Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for {
		if len(t.pending) > 0 { // write state
			n, err := t.f.TryWrite(t.pending)
			t.pending = t.pending[n:]
			t.echoed += n
			if errors.Is(err, reactor.ErrWouldBlock) || (err == nil && len(t.pending) > 0) {
				return c.AwaitWritable(t.f)
			}
			if err != nil {
				return c.Fail(err)
			}
			continue
		}
		n, err := t.f.TryRead(t.buf[:]) // read state
		switch {
		case errors.Is(err, reactor.ErrWouldBlock):
			return c.AwaitReadable(t.f)
		case err == io.EOF:
			return c.Done() // the client closed: the test closes the FD
		case err != nil:
			return c.Fail(err)
		}
		t.pending = t.buf[:n]
	}
}

// client sends rounds messages of size bytes and reads each echo back.
type client struct {
	Coro
	f           *FD
	rounds, i   int
	size        int
	msg, got    []byte
	sent        bool
	readWaits   int
	checkedByte int
}

func (t *client) Resume(c *Context) Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for t.i < t.rounds {
		if !t.sent {
			for j := range t.msg {
				t.msg[j] = byte(t.i + j)
			}
			// Messages are small: one write always fits the socket buffer.
			if n, err := t.f.TryWrite(t.msg); err != nil || n != len(t.msg) {
				return c.Fail(fmt.Errorf("client write: %d, %v", n, err))
			}
			t.sent, t.got = true, t.got[:0]
		}
		var buf [512]byte
		n, err := t.f.TryRead(buf[:t.size-len(t.got)])
		if errors.Is(err, reactor.ErrWouldBlock) {
			t.readWaits++
			return c.AwaitReadable(t.f)
		}
		if err != nil {
			return c.Fail(fmt.Errorf("client read: %w", err))
		}
		t.got = append(t.got, buf[:n]...)
		if len(t.got) == t.size {
			if !bytes.Equal(t.got, t.msg) {
				return c.Fail(fmt.Errorf("round %d: echo %v, sent %v", t.i, t.got, t.msg))
			}
			t.checkedByte += t.size
			t.i, t.sent = t.i+1, false
		}
	}
	if err := unix.Shutdown(t.f.Fd(), unix.SHUT_WR); err != nil {
		return c.Fail(err)
	}
	return c.Done()
}

func TestTCPEcho(t *testing.T) {
	const clients, rounds, size = 8, 50, 100
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, clients); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewWithOptions(Options{TickInterval: 1})
	defer s.Close()
	lf, err := s.NewFD(lfd)
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{f: lf, want: clients}
	_ = s.Spawn(l)
	var cs []*client
	for i := 0; i < clients; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, sa); err != nil { // loopback: completes in the backlog
			t.Fatal(err)
		}
		cf, err := s.NewFD(fd)
		if err != nil {
			t.Fatal(err)
		}
		cl := &client{f: cf, rounds: rounds, size: size, msg: make([]byte, size), got: make([]byte, 0, size)}
		cs = append(cs, cl)
		_ = s.Spawn(cl)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, cl := range cs {
		if cl.checkedByte != rounds*size {
			t.Fatalf("a client checked %d bytes, want %d", cl.checkedByte, rounds*size)
		}
		if cl.readWaits == 0 {
			t.Fatal("a client never waited for readability: the test did not exercise the reactor")
		}
		_ = cl.f.Close()
	}
	for _, conn := range l.conns {
		total += conn.echoed
		_ = conn.f.Close()
	}
	if total != clients*rounds*size {
		t.Fatalf("server echoed %d bytes, want %d", total, clients*rounds*size)
	}
	_ = lf.Close()
}
