package reactor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A non-blocking Tick skips its epoll wait only when the kernel can hold no
// event for the loop: no fd of the caller's is registered and no wake-up
// (trigger, signal, pool completion) is pending. These tests pin both
// halves: the skip happens (no syscall) with only timers active, and every
// kind of source is still delivered by non-blocking Ticks alone, which it
// would not be if the skip ignored it (a lost event is worse than a
// syscall).

// pollsOf returns the syscalls one non-blocking Tick made.
func pollsOf(t *testing.T, l *Loop) uint64 {
	t.Helper()
	before := l.Stats().Syscalls
	tick(t, l, true)
	return l.Stats().Syscalls - before
}

// noWaitUntil ticks without blocking until cond holds, sleeping a little
// between ticks for another thread (a pool job, a signal's forwarder, the
// kernel) to do its part; it fails after 10 s.
func noWaitUntil(t *testing.T, l *Loop, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not delivered by non-blocking ticks within 10 s (fds counted %d, wake pending %d)",
				what, l.userFDs, l.wakePending.Load())
		}
		tick(t, l, true)
		time.Sleep(time.Millisecond)
	}
}

func TestNonBlockingTickSkipsThePollWithOnlyTimers(t *testing.T) {
	for _, o := range []Options{{}, {UseTimerfd: true}} {
		l := newLoop(t, o)
		tm := l.NewTimer(func() {})
		tm.Start(time.Hour)
		// An idle trigger and a started one that nobody signals: the
		// eventfd they share has nothing to report.
		woke := false
		tr := l.NewTrigger(func() { woke = true })
		tr.Start()
		l.NewTrigger(func() {})
		for i := range 3 {
			if s := pollsOf(t, l); s != 0 {
				t.Fatalf("%s: non-blocking tick %d with only timers and unsignalled triggers made %d syscalls, want 0", l.WaitMethod(), i, s)
			}
		}
		// A blocking Tick still waits in the kernel. Not a timer due in
		// 1 ms to end the wait, as until 2026-12-07: under qemu-user on a
		// loaded machine the millisecond had passed before the tick, which
		// then fired the timer without waiting. The timer stays an hour
		// away and another goroutine signals the trigger, so the tick
		// waits whatever the machine's speed.
		before := l.Stats().Syscalls
		go func() {
			time.Sleep(time.Millisecond)
			tr.Signal()
		}()
		tickUntil(t, l, func() bool { return woke })
		if l.Stats().Syscalls == before {
			t.Fatalf("%s: a blocking tick made no syscall", l.WaitMethod())
		}
	}
}

func TestNonBlockingTickPollsForRegisteredFDs(t *testing.T) {
	l := newLoop(t, Options{})
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	r, err := l.NewFD(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	p := r.NewPoll(Readable, func() { fired++ })
	p.Start()
	if s := pollsOf(t, l); s != 1 {
		t.Fatalf("non-blocking tick with an FD registered made %d syscalls, want 1 (the poll)", s)
	}
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	tick(t, l, true)
	if fired != 1 {
		t.Fatalf("readable FD: one non-blocking tick fired %d polls, want 1", fired)
	}
	// Closing the last FD brings the count back to zero.
	r.Close()
	tick(t, l, true) // delivers the poll's ErrClosed
	if s := pollsOf(t, l); s != 0 {
		t.Fatalf("after FD.Close of the only FD a non-blocking tick made %d syscalls, want 0", s)
	}

	// An fd closed behind the loop's back and its number registered again:
	// the new FD takes the old one's place, counted once.
	a, b := pipeFDs(t)
	unix.Close(b)
	old, err := l.NewFD(a)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(a) // close(2), not FD.Close
	c, d := pipeFDs(t)
	defer unix.Close(d)
	if c != a {
		unix.Close(c)
		t.Skipf("the kernel did not reuse fd %d (got %d)", a, c)
	}
	nw, err := l.NewFD(c)
	if err != nil {
		t.Fatal(err)
	}
	if l.userFDs != 1 {
		t.Fatalf("one FD registered (the other replaced behind the loop's back): counted %d", l.userFDs)
	}
	old.Close() // a no-op on the table: the slot holds nw
	if s := pollsOf(t, l); s != 1 {
		t.Fatalf("closing the replaced FD stopped the polls for the live one: %d syscalls, want 1", s)
	}
	nw.Close()
	if s := pollsOf(t, l); s != 0 {
		t.Fatalf("all FDs closed: a non-blocking tick made %d syscalls, want 0", s)
	}
}

// pipeFDs returns a non-blocking pipe's read and write ends.
func pipeFDs(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

func TestNonBlockingTickPollsForWakeUps(t *testing.T) {
	t.Run("trigger", func(t *testing.T) {
		l := newLoop(t, Options{})
		fired := 0
		tr := l.NewTrigger(func() { fired++ })
		tr.Start()
		done := make(chan struct{})
		go func() { tr.Signal(); close(done) }()
		<-done
		tick(t, l, true)
		if fired != 1 {
			t.Fatalf("a trigger signalled from another goroutine: one non-blocking tick fired %d, want 1", fired)
		}
	})
	t.Run("pool", func(t *testing.T) {
		l := newLoop(t, Options{})
		fired := 0
		w := l.NewWork(func() { fired++ })
		if err := w.Start(JobFunc(func() {})); err != nil {
			t.Fatal(err)
		}
		noWaitUntil(t, l, "a pool completion", func() bool { return fired == 1 })
	})
	t.Run("signal", func(t *testing.T) {
		l := newLoop(t, Options{})
		fired := 0
		s, err := l.NewSignal(unix.SIGUSR2, func() { fired++ })
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Start()
		if err := unix.Kill(unix.Getpid(), unix.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		noWaitUntil(t, l, "a signal", func() bool { return fired == 1 })
	})
}

func TestNonBlockingTickPollsForProcessesAndWatches(t *testing.T) {
	t.Run("process", func(t *testing.T) {
		l := newLoop(t, Options{})
		fired := 0
		cmd, p := startShellExit(t, l, 0, &fired)
		p.Start()
		noWaitUntil(t, l, "a process exit", func() bool { return fired == 1 })
		cmd.Wait()
	})
	t.Run("watch", func(t *testing.T) {
		l := newLoop(t, Options{})
		dir := t.TempDir()
		fired := 0
		w, err := l.NewWatch(dir, unix.IN_CREATE, func() { fired++ })
		if err != nil {
			t.Fatal(err)
		}
		w.Start()
		if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		noWaitUntil(t, l, "a watch event", func() bool { return fired == 1 })
	})
}
