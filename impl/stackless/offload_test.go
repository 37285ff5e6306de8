package stackless

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

// script is a task written as a list of steps: step i returns the wait (or
// Done); step i+1 runs when it resumes and reads c.Err() / c.Result(). A
// step returning a zero Step runs the next one at once.
type script struct {
	Coro
	steps []func(c *Context) Step
	i     int
}

func (t *script) Resume(c *Context) Step {
	for t.i < len(t.steps) {
		st := t.steps[t.i](c)
		t.i++
		if st != (Step{}) {
			return st
		}
	}
	return c.Done()
}

func run(t *testing.T, tasks ...*script) {
	t.Helper()
	s := New()
	defer s.Close()
	for _, tk := range tasks {
		if err := s.Spawn(tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func newSched(t *testing.T) *Scheduler {
	s := New()
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAwaitWork: jobs run on pool threads while the tasks wait; their
// checksums are the inline ones.
func TestAwaitWork(t *testing.T) {
	s := newSched(t)
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := crc32.ChecksumIEEE(buf)
	got := make([]uint32, 8)
	errs := make([]error, 8)
	for i := range got {
		var wk *Work
		_ = s.Spawn(&script{steps: []func(*Context) Step{
			func(c *Context) Step {
				var err error
				if wk, err = c.Scheduler().NewWork(); err != nil {
					return c.Fail(err)
				}
				return c.AwaitWork(wk, reactor.JobFunc(func() { got[i] = crc32.ChecksumIEEE(buf) }), 0)
			},
			func(c *Context) Step { errs[i] = c.Err(); wk.Close(); return c.Done() },
		}})
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if errs[i] != nil || got[i] != want {
			t.Fatalf("job %d: %v, sum %x, want %x", i, errs[i], got[i], want)
		}
	}
}

// TestAwaitWorkTimeoutBusyQueueFull: a job outliving its timeout ends the
// wait with ErrTimeout; the Work then refuses a new job (the task resumes at
// once with the error) until the job has returned; a full pool queue is an
// error naming the option.
func TestAwaitWorkTimeoutBusyQueueFull(t *testing.T) {
	l, err := reactor.NewWithOptions(reactor.Options{PoolThreads: 1, PoolQueue: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewWithOptions(Options{Loop: l})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := make(chan struct{})
	var started atomic.Bool
	block := reactor.JobFunc(func() { started.Store(true); <-release })
	var first, second, full, third error
	wk, q1, q2 := mustWork(t, s), mustWork(t, s), mustWork(t, s)
	sc := &script{}
	sc.steps = []func(*Context) Step{
		func(c *Context) Step {
			return c.AwaitWork(wk, block, 20*time.Millisecond) // takes the one thread
		},
		func(c *Context) Step {
			if !started.Load() && !wk.Busy() {
				// The pool thread had not taken the job when the
				// timeout withdrew it (a slow thread start on a loaded
				// machine): try again, so that the timeout below is
				// one of a running job.
				sc.i = -1
				return c.Sleep(time.Millisecond)
			}
			first = c.Err()
			return c.AwaitWork(wk, reactor.JobFunc(func() {}), 0)
		},
		func(c *Context) Step {
			second = c.Err()
			_ = q1.w.Start(reactor.JobFunc(func() {})) // fills the queue of 1
			return c.AwaitWork(q2, reactor.JobFunc(func() {}), 0)
		},
		func(c *Context) Step {
			full = c.Err()
			close(release)
			return c.Sleep(20 * time.Millisecond)
		},
		func(c *Context) Step {
			if wk.Busy() {
				return c.Sleep(20 * time.Millisecond)
			}
			return Step{}
		},
		func(c *Context) Step { return c.AwaitWork(wk, reactor.JobFunc(func() {}), 0) },
		func(c *Context) Step { third = c.Err(); wk.Close(); q1.Close(); q2.Close(); return c.Done() },
	}
	_ = s.Spawn(sc)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(first, ErrTimeout) || second == nil || !strings.Contains(second.Error(), "running") ||
		!errors.Is(full, reactor.ErrPoolQueueFull) || third != nil {
		t.Fatalf("first %v (want ErrTimeout); second %v (want still running); full %v; third %v", first, second, full, third)
	}
}

// mustWork is s.NewWork or the test's end.
func mustWork(t *testing.T, s *Scheduler) *Work {
	t.Helper()
	w, err := s.NewWork()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestAwaitWorkShutdownInFlight: a graceful shutdown cancels a task waiting
// for a job.
func TestAwaitWorkShutdownInFlight(t *testing.T) {
	s := newSched(t)
	release := make(chan struct{})
	defer close(release)
	var werr error
	var wk *Work
	_ = s.Spawn(&script{steps: []func(*Context) Step{
		func(c *Context) Step {
			wk, _ = s.NewWork()
			return c.AwaitWork(wk, reactor.JobFunc(func() { <-release }), 0)
		},
		func(c *Context) Step { werr = c.Err(); wk.Close(); return c.Done() },
	}})
	_ = s.Spawn(&script{steps: []func(*Context) Step{
		func(c *Context) Step { return c.Sleep(5 * time.Millisecond) },
		func(c *Context) Step { c.Shutdown(); return c.Done() },
	}})
	_ = s.Run()
	if !errors.Is(werr, ErrCancelled) {
		t.Fatalf("waiting task got %v, want ErrCancelled", werr)
	}
}

// TestFileIO: open, write, pwrite, sync, pread, read at EOF, fstat, close,
// stat of a missing path, open of a missing file.
func TestFileIO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	var f *File
	p := make([]byte, 5)
	var errs []string
	check := func(c *Context, step string) {
		if c.Err() != nil {
			errs = append(errs, step+": "+c.Err().Error())
		}
	}
	var pread string
	var eofN int
	var size int64
	var missingStat, missingOpen error
	run(t, &script{steps: []func(*Context) Step{
		func(c *Context) Step {
			f, _ = c.Scheduler().NewFile()
			return f.Open(c, path, os.O_RDWR|os.O_CREATE, 0o600)
		},
		func(c *Context) Step { check(c, "open"); return f.Write(c, []byte("hello world")) },
		func(c *Context) Step { check(c, "write"); return f.WriteAt(c, []byte("W"), 6) },
		func(c *Context) Step { check(c, "pwrite"); return f.Sync(c) },
		func(c *Context) Step { check(c, "sync"); return f.ReadAt(c, p, 6) },
		func(c *Context) Step { check(c, "pread"); pread = string(p[:c.Result().(int)]); return f.Read(c, p) },
		func(c *Context) Step { check(c, "read"); eofN = c.Result().(int); return f.Fstat(c) },
		func(c *Context) Step { check(c, "fstat"); size = f.Stat().Size; return f.Close(c) },
		func(c *Context) Step { check(c, "close"); return f.StatPath(c, path+".missing") },
		func(c *Context) Step { missingStat = c.Err(); return f.Open(c, path+".missing", os.O_RDONLY, 0) },
		func(c *Context) Step { missingOpen = c.Err(); f.Release(); return c.Done() },
	}})
	data, _ := os.ReadFile(path)
	if len(errs) > 0 || pread != "World" || eofN != 0 || size != 11 || string(data) != "hello World" {
		t.Fatalf("%v; pread %q, read at EOF %d, size %d, file %q", errs, pread, eofN, size, data)
	}
	if !errors.Is(missingStat, os.ErrNotExist) || !errors.Is(missingOpen, os.ErrNotExist) {
		t.Fatalf("missing: stat %v, open %v; want ErrNotExist", missingStat, missingOpen)
	}
}

// TestFileTimeout: a read of a fifo nobody writes times out; the File takes
// a fresh request and reads once a writer has written.
func TestFileTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	var f *File
	p, q := make([]byte, 8), make([]byte, 8)
	var first, second error
	var got string
	run(t, &script{steps: []func(*Context) Step{
		func(c *Context) Step {
			f, _ = c.Scheduler().NewFile()
			return f.Open(c, path, os.O_RDWR, 0)
		},
		func(c *Context) Step { f.Timeout = 20 * time.Millisecond; return f.Read(c, p) },
		func(c *Context) Step {
			first = c.Err()
			w, _ := os.OpenFile(path, os.O_WRONLY, 0)
			_, _ = w.Write([]byte("abcdefghijklmnop"))
			_ = w.Close()
			f.Timeout = 0
			return f.Read(c, q)
		},
		func(c *Context) Step {
			second = c.Err()
			if second == nil {
				got = string(q[:c.Result().(int)])
			}
			return f.Close(c)
		},
		func(c *Context) Step { f.Release(); return c.Done() },
	}})
	if !errors.Is(first, ErrTimeout) || second != nil || got == "" {
		t.Fatalf("first %v (want ErrTimeout); second %v %q", first, second, got)
	}
}

// TestExec: output through the child's pipe, its exit awaited and reaped;
// a missing binary fails; an exit wait times out and Kill ends the child.
func TestExec(t *testing.T) {
	var ch, sl *Child
	var out []byte
	buf := make([]byte, 64)
	var code int
	var missing, timeout, werr error
	var killed bool
	sc := &script{}
	sc.steps = []func(*Context) Step{
		func(c *Context) Step {
			var err error
			ch, err = c.Scheduler().StartProcess("/bin/sh", []string{"sh", "-c", "echo hello; exit 4"}, reactor.ExecOptions{Stdout: true})
			if err != nil {
				return c.Fail(err)
			}
			return Step{}
		},
		func(c *Context) Step {
			for {
				n, err := ch.Stdout.TryRead(buf)
				out = append(out, buf[:n]...)
				switch {
				case errors.Is(err, reactor.ErrWouldBlock):
					sc.i-- // read again after the wait
					return c.AwaitReadable(ch.Stdout)
				case err == io.EOF:
					return c.AwaitSource(&ch.Source, 10*time.Second)
				case err != nil:
					return c.Fail(err)
				}
			}
		},
		func(c *Context) Step {
			if err := c.Err(); err != nil {
				return c.Fail(err)
			}
			st, err := ch.Wait()
			if err != nil {
				return c.Fail(err)
			}
			code = st.ExitCode()
			ch.Close()
			return Step{}
		},
		func(c *Context) Step {
			_, missing = c.Scheduler().StartProcess("/nonexistent/binary", []string{"x"}, reactor.ExecOptions{})
			var err error
			if sl, err = c.Scheduler().StartProcess("/bin/sleep", []string{"sleep", "10"}, reactor.ExecOptions{}); err != nil {
				return c.Fail(err)
			}
			return c.AwaitSource(&sl.Source, 20*time.Millisecond)
		},
		func(c *Context) Step {
			timeout = c.Err()
			_ = sl.Kill(unix.SIGKILL)
			return c.AwaitSource(&sl.Source, 10*time.Second)
		},
		func(c *Context) Step {
			werr = c.Err()
			st, err := sl.Wait()
			killed = err == nil && !st.Success()
			sl.Close()
			return c.Done()
		},
	}
	run(t, sc)
	if string(out) != "hello\n" || code != 4 || !errors.Is(missing, os.ErrNotExist) ||
		!errors.Is(timeout, ErrTimeout) || werr != nil || !killed {
		t.Fatalf("out %q code %d; missing %v; timeout %v; killed wait %v, %v", out, code, missing, timeout, werr, killed)
	}
}

// TestWatch: an idle wait times out; a write wakes the task with
// IN_MODIFY; a missing path fails.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var w *Watch
	var timeout, werr, missing error
	var mask uint32
	run(t, &script{steps: []func(*Context) Step{
		func(c *Context) Step {
			var err error
			if w, err = c.Scheduler().NewWatch(path, unix.IN_MODIFY); err != nil {
				return c.Fail(err)
			}
			return c.AwaitSource(&w.Source, 10*time.Millisecond)
		},
		func(c *Context) Step {
			timeout = c.Err()
			_ = os.WriteFile(path, []byte("x"), 0o600)
			return c.AwaitSource(&w.Source, 10*time.Second)
		},
		func(c *Context) Step {
			werr = c.Err()
			evs, _ := c.Result().([]reactor.FSEvent)
			for _, ev := range evs {
				mask |= ev.Mask
			}
			w.Close()
			_, missing = c.Scheduler().NewWatch(path+".missing", unix.IN_MODIFY)
			return c.Done()
		},
	}})
	if !errors.Is(timeout, ErrTimeout) || werr != nil || mask&unix.IN_MODIFY == 0 || !errors.Is(missing, os.ErrNotExist) {
		t.Fatalf("idle %v; wait %v mask %#x; missing %v", timeout, werr, mask, missing)
	}
}

// TestResolver: localhost resolves; an unknown name is a *net.DNSError
// (NotFound, or a timeout where the system's resolver is unreachable).
func TestResolver(t *testing.T) {
	var rs *Resolver
	var n int
	var lerr, bad error
	run(t, &script{steps: []func(*Context) Step{
		func(c *Context) Step {
			rs, _ = c.Scheduler().NewResolver()
			return c.AwaitLookup(rs, "localhost", 5*time.Second)
		},
		func(c *Context) Step {
			n, lerr = len(Addrs(c)), c.Err()
			return c.AwaitLookup(rs, "no-such-name.invalid.", 200*time.Millisecond)
		},
		func(c *Context) Step { bad = c.Err(); rs.Close(); return c.Done() },
	}})
	var de *net.DNSError
	if lerr != nil || n == 0 || !errors.As(bad, &de) {
		t.Fatalf("localhost: %d addrs, %v; unknown name %v (want *net.DNSError)", n, lerr, bad)
	}
}

// TestTTY: the slave's bytes come out of the master; EOF after the slave
// closes; a pipe is refused.
func TestTTY(t *testing.T) {
	var m *TTY
	var slave *os.File
	p := make([]byte, 16)
	var got []byte
	var eof, notTTY error
	sc := &script{}
	sc.steps = []func(*Context) Step{
		func(c *Context) Step {
			var err error
			if m, slave, err = c.Scheduler().OpenPTY(); err != nil {
				return c.Fail(err)
			}
			_, _ = slave.Write([]byte("hi\n"))
			return Step{}
		},
		func(c *Context) Step {
			n, err := m.TryRead(p)
			if errors.Is(err, reactor.ErrWouldBlock) {
				sc.i-- // read again after the wait
				return c.AwaitReadable(m.FD)
			}
			got = append(got, p[:n]...)
			_ = slave.Close()
			return Step{}
		},
		func(c *Context) Step {
			_, err := m.TryRead(p)
			if errors.Is(err, reactor.ErrWouldBlock) || err == nil {
				sc.i--
				return c.AwaitReadable(m.FD)
			}
			eof = err
			var fds [2]int
			if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err == nil {
				_, notTTY = c.Scheduler().NewTTY(fds[0])
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			_ = m.Close()
			return c.Done()
		},
	}
	run(t, sc)
	if !strings.HasPrefix(string(got), "hi") || eof != io.EOF || notTTY == nil {
		t.Fatalf("read %q; after close %v (want EOF); pipe as TTY %v", got, eof, notTTY)
	}
}
