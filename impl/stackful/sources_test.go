package stackful

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/selfexec"
	"github.com/corobench/corobench/reactor"
)

func TestSignalWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var n uint64
		var werr error
		err := s.Run(func() {
			g, err := NewSignal(unix.SIGUSR1)
			if err != nil {
				werr = err
				return
			}
			defer g.Close()
			Go(func() { _ = unix.Kill(unix.Getpid(), unix.SIGUSR1) })
			n, werr = g.Wait(10 * time.Second)
		})
		if err != nil || werr != nil || n < 1 {
			t.Fatalf("Run = %v; Wait = %d, %v; want >= 1 delivery", err, n, werr)
		}
	})
}

func TestProcessWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		cmd := exec.Command("sleep", "0.05")
		if err := cmd.Start(); err != nil {
			t.Skip("cannot start sleep:", err)
		}
		defer cmd.Wait()
		s := newSched(t, b)
		var werr error
		err := s.Run(func() {
			p, err := NewProcess(cmd.Process.Pid)
			if err != nil {
				werr = err
				return
			}
			defer p.Close()
			werr = p.Wait(10 * time.Second)
		})
		if errors.Is(werr, reactor.ErrNotSupported) {
			t.Skip(werr)
		}
		if err != nil || werr != nil {
			t.Fatalf("Run = %v; Wait = %v", err, werr)
		}
		if cmd.ProcessState != nil {
			t.Fatal("reaped before Wait")
		}
	})
}

// TestUDP: a coroutine blocks in ReadFrom until another sends a datagram.
func TestUDP(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var got string
		var rerr error
		err := s.Run(func() {
			lo := netip.MustParseAddrPort("127.0.0.1:0")
			a, err := ListenUDP(lo)
			if err != nil {
				rerr = err
				return
			}
			defer a.Close()
			c, err := ListenUDP(lo)
			if err != nil {
				rerr = err
				return
			}
			defer c.Close()
			addr, _ := a.LocalAddr()
			Go(func() {
				if err := c.WriteTo([]byte("hello"), &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
					rerr = err
				}
			})
			buf := make([]byte, 64)
			n, _, err := a.ReadFrom(buf) // suspends: the sender has not run yet
			if err != nil {
				rerr = err
			}
			got = string(buf[:n])
		})
		if err != nil || rerr != nil || got != "hello" {
			t.Fatalf("Run = %v; err %v; got %q, want hello", err, rerr, got)
		}
	})
}

// TestShutdownOnSignal: with Options.ShutdownOnSignal, SIGINT during Run
// starts a graceful shutdown: the sleeping coroutines are cancelled, their
// cleanup runs, Run returns nil. Without the option the child would die of
// the signal. It runs in a child process for that reason.
func TestShutdownOnSignal(t *testing.T) {
	if mode := os.Getenv(childEnv); strings.HasPrefix(mode, "sigint-") {
		b := Coro
		if mode == "sigint-asm" {
			b = Asm
		}
		s := newSched(t, b, func(o *Options) { o.ShutdownOnSignal = true })
		err := s.Run(func() {
			Go(func() {
				defer fmt.Println("cleanup ran")
				Sleep(time.Hour)
			})
			Yield()
			_ = unix.Kill(unix.Getpid(), unix.SIGINT)
			err := Sleep(time.Hour)
			fmt.Println("main sleep:", errors.Is(err, ErrCancelled))
		})
		fmt.Println("RUN RETURNED:", err)
		os.Exit(0)
	}
	eachBackend(t, func(t *testing.T, b Backend) {
		out, err := selfexec.CombinedOutput([]string{"-test.run=^TestShutdownOnSignal$"}, childEnv+"=sigint-"+b.String())
		if err != nil || !strings.Contains(out, "cleanup ran") || !strings.Contains(out, "main sleep: true") ||
			!strings.Contains(out, "RUN RETURNED: <nil>") {
			t.Fatalf("child: %v; want the sleeps cancelled, the cleanup run and Run = nil; output:\n%s", err, tail(out, 2000))
		}
	})
}
