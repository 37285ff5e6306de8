package stackless

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/selfexec"
	"github.com/corobench/corobench/reactor"
)

// TestUDP: a task waits for a datagram another task sends.
func TestUDP(t *testing.T) {
	s := New()
	defer s.Close()
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	a, err := s.ListenUDP(lo)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := s.ListenUDP(lo)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr, _ := a.LocalAddr()
	to := &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	var got string
	var rerr error
	buf := make([]byte, 64)
	_ = s.Spawn(&funcTask{f: func(ctx *Context) Step {
		n, _, err := a.TryRecvfrom(buf)
		if errors.Is(err, reactor.ErrWouldBlock) {
			return ctx.AwaitReadable(a)
		}
		got, rerr = string(buf[:n]), err
		return ctx.Done()
	}})
	_ = s.Spawn(&funcTask{f: func(ctx *Context) Step {
		if err := c.TrySendto([]byte("hello"), to); err != nil {
			rerr = err
		}
		return ctx.Done()
	}})
	if err := s.Run(); err != nil || rerr != nil || got != "hello" {
		t.Fatalf("Run = %v; err %v; got %q, want hello", err, rerr, got)
	}
}

const stacklessChildEnv = "STACKLESS_TEST_CHILD"

// hourSleeper sleeps an hour, then reports whether the sleep was cancelled.
type hourSleeper struct {
	Coro
	state int
	kill  bool // send SIGINT to the process before sleeping
}

func (t *hourSleeper) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		if t.kill {
			_ = unix.Kill(unix.Getpid(), unix.SIGINT)
		}
		return c.Sleep(time.Hour)
	}
	fmt.Println("sleep cancelled:", errors.Is(c.Err(), ErrCancelled))
	return c.Done()
}

// TestShutdownOnSignal: with Options.ShutdownOnSignal, SIGINT during Run
// starts a graceful shutdown; the sleeping tasks are cancelled and Run
// returns nil. Without the option the child would die of the signal, so it
// runs in a child process.
func TestShutdownOnSignal(t *testing.T) {
	if os.Getenv(stacklessChildEnv) == "sigint" {
		s, _ := NewWithOptions(Options{ShutdownOnSignal: true})
		_ = s.Spawn(&hourSleeper{})
		_ = s.Spawn(&hourSleeper{kill: true})
		fmt.Println("RUN RETURNED:", s.Run())
		os.Exit(0)
	}
	out, err := selfexec.CombinedOutput([]string{"-test.run=^TestShutdownOnSignal$"}, stacklessChildEnv+"=sigint")
	if err != nil || strings.Count(out, "sleep cancelled: true") != 2 || !strings.Contains(out, "RUN RETURNED: <nil>") {
		t.Fatalf("child: %v; want both sleeps cancelled and Run = nil; output:\n%s", err, out)
	}
}
