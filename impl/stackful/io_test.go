package stackful

import (
	"errors"
	"io"
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
