package reactor

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readAll reads f to EOF through Polls, ticking the loop.
func readAll(t *testing.T, l *Loop, f *FD) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 256)
	woke := false
	p := f.NewPoll(Readable, func() { woke = true })
	defer p.Close()
	for {
		n, err := f.TryRead(buf)
		out = append(out, buf[:n]...)
		switch err {
		case nil:
			continue
		case io.EOF:
			return out
		case ErrWouldBlock:
			woke = false
			p.Start()
			tickUntil(t, l, func() bool { return woke })
		default:
			t.Fatal(err)
		}
	}
}

func spawnShell(t *testing.T, l *Loop, script string, o ExecOptions, onExit func()) *Child {
	t.Helper()
	c, err := l.Spawn("/bin/sh", []string{"sh", "-c", script}, o, onExit)
	if errors.Is(err, ErrNotSupported) || errors.Is(err, fs.ErrNotExist) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestSpawnOutputAndExit(t *testing.T) {
	l := newLoop(t, Options{})
	exited := false
	c := spawnShell(t, l, "read x; echo out:$x; echo err:$x >&2; exit 5", ExecOptions{Stdin: true, Stdout: true, Stderr: true}, func() { exited = true })
	if _, err := c.Wait(); err == nil {
		t.Fatal("Wait before the exit event did not refuse")
	}
	c.Exit.Start()
	if n, err := c.Stdin.TryWrite([]byte("ping\n")); err != nil || n != 5 {
		t.Fatalf("write stdin: %d %v", n, err)
	}
	c.Stdin.Close()
	if out := string(readAll(t, l, c.Stdout)); out != "out:ping\n" {
		t.Fatalf("stdout %q", out)
	}
	if out := string(readAll(t, l, c.Stderr)); out != "err:ping\n" {
		t.Fatalf("stderr %q", out)
	}
	tickUntil(t, l, func() bool { return exited })
	st, err := c.Wait()
	if err != nil || st.ExitCode() != 5 {
		t.Fatalf("exit: %v %v, want status 5", st, err)
	}
}

// TestSpawnTimeoutKill: a child that would run for a minute is killed by a
// timer; the exit event fires with the signal as the status.
func TestSpawnTimeoutKill(t *testing.T) {
	l := newLoop(t, Options{})
	exited := false
	c := spawnShell(t, l, "exec sleep 60", ExecOptions{}, func() { exited = true })
	c.Exit.Start()
	timer := l.NewTimer(func() { c.Kill(unix.SIGKILL) })
	timer.Start(20 * time.Millisecond)
	tickUntil(t, l, func() bool { return exited })
	st, err := c.Wait()
	if err != nil || st.Success() || st.String() != "signal: killed" {
		t.Fatalf("after the timeout: %v %v, want signal: killed", st, err)
	}
	if err := c.Kill(unix.SIGKILL); err == nil {
		t.Fatal("Kill after Wait succeeded")
	}
}

// TestSpawnCancelAndClose: Stop on the exit event cancels the wait; Close of
// a running child kills and reaps it.
func TestSpawnCancelAndClose(t *testing.T) {
	l := newLoop(t, Options{})
	c := spawnShell(t, l, "exec sleep 60", ExecOptions{Stdout: true}, func() { t.Error("stopped exit event fired") })
	c.Exit.Start()
	c.Exit.Stop()
	if l.Active() != 0 {
		t.Fatalf("Active %d after Stop", l.Active())
	}
	pid := c.Pid()
	c.Close()
	if err := unix.Kill(pid, 0); err != unix.ESRCH {
		t.Fatalf("child %d after Close: kill(0) = %v, want ESRCH (killed and reaped)", pid, err)
	}
}

func TestSpawnFailedExec(t *testing.T) {
	l := newLoop(t, Options{})
	before := openFDs(t)
	_, err := l.Spawn("/nonexistent/prog", []string{"prog"}, ExecOptions{Stdin: true, Stdout: true, Stderr: true}, func() {})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Spawn of a missing binary: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Fatalf("fds %d before, %d after a failed Spawn", before, after)
	}
}

// TestSpawnOnPTY: a child in its own session with a pseudo-terminal as its
// stdio and controlling terminal; its output arrives on the master TTY.
func TestSpawnOnPTY(t *testing.T) {
	l := newLoop(t, Options{})
	m, s := openPTY(t, l)
	exited := false
	c := spawnShell(t, l, "test -t 1 && echo on-a-tty", ExecOptions{Files: [3]*os.File{s, s, s}, Setsid: true, Setctty: true}, func() { exited = true })
	c.Exit.Start()
	got, err := ttyRead(t, l, m, len("on-a-tty\r\n"))
	if err != nil || string(got) != "on-a-tty\r\n" {
		t.Fatalf("master read %q, %v", got, err)
	}
	tickUntil(t, l, func() bool { return exited })
	if st, err := c.Wait(); err != nil || st.ExitCode() != 0 {
		t.Fatalf("exit %v %v", st, err)
	}
	if _, err := l.Spawn("/bin/sh", []string{"sh"}, ExecOptions{Stdout: true, Files: [3]*os.File{nil, s, nil}}, func() {}); err == nil {
		t.Fatal("Spawn with both a pipe and a file for stdout succeeded")
	}
}
