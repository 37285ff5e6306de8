package stackful

import (
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/corobench/corobench/reactor"
	"golang.org/x/sys/unix"
)

func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

// TestIOPipe: a reader suspends until a writer (after a sleep) sends data;
// a write larger than the pipe buffer suspends until the reader drains it.
func TestIOPipe(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		rfd, wfd := pipe(t)
		const size = 1 << 20 // > the 64 KiB pipe buffer: the writer must wait
		var got int
		var rerr, werr error
		err := s.Run(func() {
			r, err := OpenIO(rfd)
			if err != nil {
				rerr = err
				return
			}
			w, err := OpenIO(wfd)
			if err != nil {
				werr = err
				return
			}
			Go(func() {
				Sleep(time.Millisecond)
				buf := make([]byte, size)
				for i := range buf {
					buf[i] = byte(i)
				}
				_, werr = w.Write(buf)
				w.Close()
			})
			buf := make([]byte, 4096)
			for {
				n, err := r.Read(buf)
				for i := 0; i < n; i++ {
					if buf[i] != byte(got+i) {
						rerr = errors.New("data corrupted")
						return
					}
				}
				got += n
				if err != nil {
					if err != io.EOF {
						rerr = err
					}
					break
				}
			}
			r.Close()
		})
		if err != nil || rerr != nil || werr != nil || got != size {
			t.Fatalf("Run = %v, read error %v, write error %v, %d of %d bytes", err, rerr, werr, got, size)
		}
	})
}

// TestIOCloseWakesWaiter and the timeout of WaitReadable.
func TestIOCloseWakesWaiter(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		rfd, wfd := pipe(t)
		defer unix.Close(wfd)
		var timeoutErr, closedErr error
		err := s.Run(func() {
			r, err := OpenIO(rfd)
			if err != nil {
				closedErr = err
				return
			}
			timeoutErr = r.WaitReadable(time.Millisecond)
			Go(func() { r.Close() })
			_, closedErr = r.Read(make([]byte, 1))
		})
		if err != nil || !errors.Is(timeoutErr, ErrTimeout) || !errors.Is(closedErr, reactor.ErrClosed) {
			t.Fatalf("Run = %v, WaitReadable = %v (want timeout), Read after Close = %v (want ErrClosed)", err, timeoutErr, closedErr)
		}
	})
}

// TestTCPEcho: a server coroutine accepts and echoes; a client dials,
// writes and reads back, all on one scheduler.
func TestTCPEcho(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var got string
		var failure error
		err := s.Run(func() {
			ln, err := ListenTCP(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				failure = err
				return
			}
			defer ln.Close()
			Go(func() {
				conn, err := ln.Accept()
				if err != nil {
					failure = err
					return
				}
				defer conn.Close()
				buf := make([]byte, 64)
				n, err := conn.Read(buf)
				if err == nil {
					_, err = conn.Write(buf[:n])
				}
				if err != nil {
					failure = err
				}
			})
			port, err := localPort(ln)
			if err != nil {
				failure = err
				return
			}
			conn, err := DialTCP(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
			if err != nil {
				failure = err
				return
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("hello")); err != nil {
				failure = err
				return
			}
			buf := make([]byte, 64)
			n, err := conn.Read(buf)
			if err != nil {
				failure = err
			}
			got = string(buf[:n])
		})
		if err != nil || failure != nil || got != "hello" {
			t.Fatalf("Run = %v, failure %v, echoed %q", err, failure, got)
		}
	})
}

func localPort(io *IO) (uint16, error) {
	ap, err := io.FD().LocalAddr()
	return ap.Port(), err
}

// TestPipeHelper: Pipe gives two registered ends.
func TestPipeHelper(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var got []byte
		var failure error
		err := s.Run(func() {
			r, w, err := Pipe()
			if err != nil {
				failure = err
				return
			}
			Go(func() { w.Write([]byte("x")); w.Close() })
			got, failure = io.ReadAll(r)
			r.Close()
		})
		if err != nil || failure != nil || string(got) != "x" {
			t.Fatalf("Run = %v, failure %v, read %q", err, failure, got)
		}
	})
}
