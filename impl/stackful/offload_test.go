package stackful

import (
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// TestWorkRun: jobs run on pool threads while the coroutines wait; the
// checksums they compute are the ones computed inline.
func TestWorkRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		want := crc32.ChecksumIEEE(buf)
		got := make([]uint32, 8)
		errs := make([]error, 8)
		err := s.Run(func() {
			for i := range got {
				Go(func() {
					wk := NewWork()
					defer wk.Close()
					errs[i] = wk.Run(reactor.JobFunc(func() { got[i] = crc32.ChecksumIEEE(buf) }), -1)
				})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if errs[i] != nil || got[i] != want {
				t.Fatalf("job %d: %v, sum %x, want %x", i, errs[i], got[i], want)
			}
		}
	})
}

// TestWorkTimeoutAndBusy: a job that outlives its timeout fails the wait with
// ErrTimeout; until it has returned, the Work refuses a new job (an error,
// not a suspension); afterwards it takes one again.
func TestWorkTimeoutAndBusy(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		release := make(chan struct{})
		var first, second, third error
		err := s.Run(func() {
			wk := NewWork()
			defer wk.Close()
			var started atomic.Bool
			block := reactor.JobFunc(func() { started.Store(true); <-release })
			// A timeout that came before the pool thread took the job
			// withdrew it unrun (a slow thread start on a loaded
			// machine): try again, so that the timeout is one of a
			// running job.
			for {
				first = wk.Run(block, 20*time.Millisecond)
				if started.Load() || wk.Busy() {
					break
				}
			}
			second = wk.Run(reactor.JobFunc(func() {}), -1)
			close(release)
			for wk.Busy() {
				if err := Sleep(time.Millisecond); err != nil {
					third = err
					return
				}
			}
			third = Offload(func() {}, -1)
		})
		if err != nil || !errors.Is(first, ErrTimeout) || second == nil || !strings.Contains(second.Error(), "running") || third != nil {
			t.Fatalf("Run = %v; first %v (want ErrTimeout); second %v (want still running); third %v", err, first, second, third)
		}
	})
}

// TestWorkShutdownInFlight: a graceful shutdown cancels a coroutine waiting
// for a job; Run returns once the others' cleanup is done.
func TestWorkShutdownInFlight(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		release := make(chan struct{})
		defer close(release)
		var werr error
		err := s.Run(func() {
			Go(func() { werr = Offload(func() { <-release }, -1) })
			_ = Sleep(5 * time.Millisecond)
			Shutdown()
		})
		if !errors.Is(werr, ErrCancelled) {
			t.Fatalf("Run = %v; waiting coroutine got %v, want ErrCancelled", err, werr)
		}
	})
}

// TestFileIO: open, write, pwrite, sync, pread, read, stat, close through
// the pool; the file holds what was written; a missing file is ErrNotExist.
func TestFileIO(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		path := filepath.Join(t.TempDir(), "f")
		var steps []string
		fail := func(step string, err error) bool {
			if err != nil {
				steps = append(steps, step+": "+err.Error())
				return true
			}
			return false
		}
		var size int64
		var missing, stMissing error
		err := s.Run(func() {
			f, err := OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
			if fail("open", err) {
				return
			}
			if _, err := f.Write([]byte("hello world")); fail("write", err) {
				return
			}
			if _, err := f.WriteAt([]byte("W"), 6); fail("pwrite", err) {
				return
			}
			if fail("sync", f.Sync()) {
				return
			}
			p := make([]byte, 5)
			if n, err := f.ReadAt(p, 6); fail("pread", err) || string(p[:n]) != "World" {
				steps = append(steps, "pread got "+string(p[:n]))
			}
			if n, err := f.Read(p); fail("read at EOF", err) || n != 0 {
				steps = append(steps, "read past the end returned data")
			}
			st, err := f.Stat()
			if fail("fstat", err) {
				return
			}
			size = st.Size
			if fail("close", f.Close()) {
				return
			}
			_, missing = OpenFile(path+".missing", os.O_RDONLY, 0)
			_, stMissing = Stat(path + ".missing")
		})
		if err != nil || len(steps) > 0 {
			t.Fatalf("Run = %v; %v", err, steps)
		}
		data, _ := os.ReadFile(path)
		if string(data) != "hello World" || size != 11 {
			t.Fatalf("file %q size %d", data, size)
		}
		if !errors.Is(missing, os.ErrNotExist) || !errors.Is(stMissing, os.ErrNotExist) {
			t.Fatalf("missing file: open %v, stat %v; want ErrNotExist", missing, stMissing)
		}
	})
}

// TestFileTimeout: an operation on a fifo nobody writes blocks its pool
// thread; the coroutine's wait ends with ErrTimeout and the File stays
// usable (a fresh request) once a writer appears.
func TestFileTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		path := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Skip(err)
		}
		var first, second error
		var got string
		err := s.Run(func() {
			f, err := OpenFile(path, os.O_RDWR, 0) // O_RDWR: the open does not wait for a writer
			if err != nil {
				first = err
				return
			}
			f.Timeout = 20 * time.Millisecond
			p := make([]byte, 8)
			_, first = f.Read(p)
			w, _ := os.OpenFile(path, os.O_WRONLY, 0)
			_, _ = w.Write([]byte("abcdefgh"))
			_, _ = w.Write([]byte("ijklmnop"))
			_ = w.Close()
			f.Timeout = 0
			q := make([]byte, 8)
			var n int
			n, second = f.Read(q)
			got = string(q[:n])
			_ = f.Close()
		})
		if err != nil || !errors.Is(first, ErrTimeout) || second != nil || len(got) == 0 {
			t.Fatalf("Run = %v; first read %v (want ErrTimeout); second %v %q", err, first, second, got)
		}
	})
}

// TestExec: the child's output read through its pipe, its exit awaited;
// a missing binary fails at once; Wait times out on a sleeping child, and
// Kill ends it.
func TestExec(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var out string
		var code int
		var steps []string
		var missing error
		err := s.Run(func() {
			ch, err := StartProcess("/bin/sh", []string{"sh", "-c", "read x; echo got $x; exit 3"},
				reactor.ExecOptions{Stdin: true, Stdout: true})
			if err != nil {
				steps = append(steps, err.Error())
				return
			}
			defer ch.Close()
			if _, err := ch.Stdin.Write([]byte("ping\n")); err != nil {
				steps = append(steps, "write: "+err.Error())
			}
			b, err := io.ReadAll(ch.Stdout)
			if err != nil {
				steps = append(steps, "read: "+err.Error())
			}
			out = string(b)
			st, err := ch.Wait(10 * time.Second)
			if err != nil {
				steps = append(steps, "wait: "+err.Error())
				return
			}
			code = st.ExitCode()
			_, missing = StartProcess("/nonexistent/binary", []string{"x"}, reactor.ExecOptions{})
			sl, err := StartProcess("/bin/sleep", []string{"sleep", "10"}, reactor.ExecOptions{})
			if err != nil {
				steps = append(steps, err.Error())
				return
			}
			defer sl.Close()
			if _, err := sl.Wait(20 * time.Millisecond); !errors.Is(err, ErrTimeout) {
				steps = append(steps, "sleep wait: want ErrTimeout")
			}
			_ = sl.Kill(unix.SIGKILL)
			if st, err := sl.Wait(10 * time.Second); err != nil || st.Success() {
				steps = append(steps, "killed sleep did not end killed")
			}
		})
		if err != nil || len(steps) > 0 || out != "got ping\n" || code != 3 || !errors.Is(missing, os.ErrNotExist) {
			t.Fatalf("Run = %v; %v; out %q code %d; missing binary %v", err, steps, out, code, missing)
		}
	})
}

// TestWatch: a write to a watched file wakes the waiting coroutine with
// IN_MODIFY; a wait with nothing happening times out; a missing path fails.
func TestWatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		path := filepath.Join(t.TempDir(), "w")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var mask uint32
		var werr, timeout, missing error
		err := s.Run(func() {
			w, err := NewWatch(path, unix.IN_MODIFY)
			if err != nil {
				werr = err
				return
			}
			defer w.Close()
			_, timeout = w.Wait(10 * time.Millisecond)
			Go(func() { _ = os.WriteFile(path, []byte("x"), 0o600) })
			evs, err := w.Wait(10 * time.Second)
			werr = err
			for _, ev := range evs {
				mask |= ev.Mask
			}
			_, missing = NewWatch(path+".missing", unix.IN_MODIFY)
		})
		if err != nil || werr != nil || mask&unix.IN_MODIFY == 0 || !errors.Is(timeout, ErrTimeout) || !errors.Is(missing, os.ErrNotExist) {
			t.Fatalf("Run = %v; wait %v mask %#x; idle wait %v (want ErrTimeout); missing %v", err, werr, mask, timeout, missing)
		}
	})
}

// TestResolver: localhost resolves (hosts file, through Go's resolver on a
// pool thread); a name under .invalid does not: NotFound, or a timeout when
// the system's resolver is unreachable; either is a *net.DNSError.
func TestResolver(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var addrs int
		var lerr, bad error
		err := s.Run(func() {
			r := NewResolver()
			defer r.Close()
			a, err := r.Lookup("localhost", 5*time.Second)
			addrs, lerr = len(a), err
			_, bad = r.Lookup("no-such-name.invalid.", 200*time.Millisecond)
		})
		var de *net.DNSError
		if err != nil || lerr != nil || addrs == 0 || !errors.As(bad, &de) {
			t.Fatalf("Run = %v; localhost: %d addrs, %v; unknown name %v (want *net.DNSError)", err, addrs, lerr, bad)
		}
	})
}

// TestTTY: bytes written on the pty's slave side come out of the master TTY,
// and the master reads io.EOF once the slave is closed; a pipe is refused.
func TestTTY(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var got string
		var rerr, eof, notTTY error
		err := s.Run(func() {
			m, slave, err := OpenPTY()
			if err != nil {
				rerr = err
				return
			}
			defer m.Close()
			if err := m.T.SetSize(80, 24); err != nil {
				rerr = err
				return
			}
			Go(func() { _, _ = slave.Write([]byte("hi\n")) })
			p := make([]byte, 16)
			n, err := m.Read(p)
			got, rerr = string(p[:n]), err
			_ = slave.Close()
			for eof == nil {
				_, eof = m.Read(p)
			}
			var fds [2]int
			if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err == nil {
				_, notTTY = NewTTY(fds[0])
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
		})
		if err != nil || rerr != nil || !strings.HasPrefix(got, "hi") || eof != io.EOF || notTTY == nil {
			t.Fatalf("Run = %v; read %q %v; after close %v (want EOF); pipe as TTY %v", err, got, rerr, eof, notTTY)
		}
	})
}

// TestReactorOptions: Options.Reactor reaches the scheduler's loop (with a
// pool of one thread, three jobs offloaded at once never run two at a
// time; the default pool of four would run them together), and the fields
// the scheduler owns are refused by name. The jobs end by themselves, so
// no interleaving of the pool's thread with the loop can hang the test.
func TestReactorOptions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s, err := New(Options{Backend: b, Reactor: reactor.Options{PoolThreads: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var running, peak atomic.Int32
		job := func() {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(10 * time.Millisecond)
			running.Add(-1)
		}
		errs := make([]error, 3)
		err = s.Run(func() {
			for i := range errs {
				Go(func() { errs[i] = Offload(job, -1) })
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if p := peak.Load(); p != 1 {
			t.Fatalf("a pool of Options.Reactor.PoolThreads=1 ran %d jobs at once, want 1", p)
		}
		for _, o := range []reactor.Options{{OwnThread: true}, {Clock: func() int64 { return 0 }}} {
			_, err := New(Options{Backend: b, Reactor: o})
			if err == nil || !strings.Contains(err.Error(), "Options.Reactor") {
				t.Errorf("New with Reactor %+v: got %v, want an error naming Options.Reactor", o, err)
			}
		}
	})
}
