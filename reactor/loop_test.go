package reactor

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newLoop(t testing.TB, o Options) *Loop {
	t.Helper()
	l, err := NewWithOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// tickUntil runs blocking ticks until cond holds; a bug that loses a wakeup
// hangs here until the test binary's -timeout reports it.
func tickUntil(t testing.TB, l *Loop, cond func() bool) {
	t.Helper()
	for !cond() {
		if _, err := l.Tick(false); err != nil {
			t.Fatal(err)
		}
	}
}

// waitMethods runs f once per blocking-wait implementation.
func waitMethods(t *testing.T, f func(t *testing.T, o Options)) {
	t.Run("epoll_pwait2", func(t *testing.T) {
		l, err := New()
		if err != nil {
			t.Fatal(err)
		}
		pw := strings.Contains(l.WaitMethod(), "wait=epoll_pwait2")
		l.Close()
		if !pw {
			t.Skip("kernel lacks epoll_pwait2: " + l.WaitMethod())
		}
		f(t, Options{})
	})
	t.Run("timerfd", func(t *testing.T) { f(t, Options{UseTimerfd: true}) })
}

func TestWaitMethod(t *testing.T) {
	def := newLoop(t, Options{})
	if got := def.WaitMethod(); !strings.HasPrefix(got, "clock=CLOCK_MONOTONIC wait=epoll_pwait2 timerslack=") &&
		!strings.HasPrefix(got, "clock=CLOCK_MONOTONIC wait=epoll_wait+timerfd (epoll_pwait2: ") {
		t.Fatalf("default: WaitMethod() = %q", got)
	}
	t.Logf("default: %s", def.WaitMethod())
	l := newLoop(t, Options{UseTimerfd: true})
	if got := l.WaitMethod(); !strings.HasPrefix(got, "clock=CLOCK_MONOTONIC wait=epoll_wait+timerfd") {
		t.Fatalf("forced timerfd: WaitMethod() = %q", got)
	}
	l2, _ := newFakeLoop(t)
	if got := l2.WaitMethod(); !strings.HasPrefix(got, "clock=injected ") {
		t.Fatalf("injected clock: WaitMethod() = %q", got)
	}
	if _, err := NewWithOptions(Options{MaxEvents: -1}); err == nil || !strings.Contains(err.Error(), "MaxEvents") {
		t.Fatalf("negative MaxEvents: err = %v, want one naming MaxEvents", err)
	}
}

// TestTimerBlockingWaitSubMillisecond: a blocking Tick with only a 200 µs
// timer must return having fired it, and never before its deadline.
func TestTimerBlockingWaitSubMillisecond(t *testing.T) {
	waitMethods(t, func(t *testing.T, o Options) {
		l := newLoop(t, o)
		for range 20 {
			fired := false
			tm := l.NewTimer(func() { fired = true })
			l.UpdateTime()
			tm.Start(200 * time.Microsecond)
			tickUntil(t, l, func() bool { return fired })
			if now := nanotime(); now < tm.Deadline() {
				t.Fatalf("timer fired %d ns before its deadline", tm.Deadline()-now)
			}
			tm.Close()
		}
	})
}

func TestBlockingTickWithNothingActiveReturns(t *testing.T) {
	l := newLoop(t, Options{})
	tm := l.NewTimer(func() {})
	tm.Start(time.Hour)
	tm.Stop()
	trig := l.NewTrigger(func() {})
	_ = trig // idle: does not count
	if n := tick(t, l, false); n != 0 || l.Active() != 0 {
		t.Fatalf("Tick(false) with nothing active: fired %d, Active %d", n, l.Active())
	}
}

func TestPipePollAndTryRead(t *testing.T) {
	l := newLoop(t, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := r.TryRead(buf); !errors.Is(err, ErrWouldBlock) || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("TryRead on empty pipe: %v, want EAGAIN", err)
	}
	fired := 0
	p := r.NewPoll(Readable, func() { fired++ })
	p.Start()
	if l.Active() != 1 {
		t.Fatalf("Active() = %d with one started poll", l.Active())
	}
	if n := tick(t, l, true); n != 0 {
		t.Fatalf("poll on empty pipe fired")
	}
	if _, err := w.TryWrite([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	if p.Revents()&Readable == 0 || p.Err() != nil || p.Active() || l.Active() != 0 {
		t.Fatalf("after firing: revents %v err %v active %v loop active %d", p.Revents(), p.Err(), p.Active(), l.Active())
	}
	n, err := r.TryRead(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("TryRead = %q, %v", buf[:n], err)
	}
	// Readiness is cached until EAGAIN: restarting now fires at once (a
	// spurious wakeup, never a lost one) ...
	p.Start()
	tick(t, l, true)
	if fired != 2 {
		t.Fatalf("restart with cached readiness: fired %d, want 2", fired)
	}
	// ... and after EAGAIN it waits again.
	if _, err := r.TryRead(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("second TryRead: %v, want EAGAIN", err)
	}
	p.Start()
	tick(t, l, true)
	if fired != 2 {
		t.Fatalf("poll fired with nothing to read")
	}
	// EOF: the writer closes.
	w.Close()
	tickUntil(t, l, func() bool { return fired == 3 })
	if p.Revents()&Hangup == 0 {
		t.Fatalf("revents %v after writer closed, want hangup", p.Revents())
	}
	if _, err := r.TryRead(buf); err != io.EOF {
		t.Fatalf("TryRead after writer closed: %v, want io.EOF", err)
	}
}

// TestPollRearmCostsNoEpollCtl counts the syscalls of a keep-alive style
// cycle: wait, read, read-until-EAGAIN, restart the poll. It must be exactly
// the wait and the two reads: no epoll_ctl, no re-registration.
func TestPollRearmCostsNoEpollCtl(t *testing.T) {
	l := newLoop(t, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	fired := false
	p := r.NewPoll(Readable, func() { fired = true })
	for i := range 100 {
		if _, err := unix.Write(w.Fd(), []byte("x")); err != nil { // not counted: the peer's write
			t.Fatal(err)
		}
		before := l.Stats().Syscalls
		p.Start()
		fired = false
		tick(t, l, true) // 1: epoll wait
		if !fired {
			t.Fatalf("cycle %d: poll did not fire", i)
		}
		if _, err := r.TryRead(buf); err != nil { // 2
			t.Fatal(err)
		}
		if _, err := r.TryRead(buf); !errors.Is(err, ErrWouldBlock) { // 3
			t.Fatal(err)
		}
		if got := l.Stats().Syscalls - before; got != 3 {
			t.Fatalf("cycle %d: %d syscalls, want 3 (wait + read + read hitting EAGAIN)", i, got)
		}
	}
}

func TestCloseFDWithPendingPoll(t *testing.T) {
	l := newLoop(t, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fired := false
	p := r.NewPoll(Readable, func() { fired = true })
	p.Start()
	tick(t, l, true)
	if fired {
		t.Fatal("poll fired before anything happened")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if fired {
		t.Fatal("FD.Close ran a callback itself; callbacks belong to Tick")
	}
	tick(t, l, true)
	if !fired || !errors.Is(p.Err(), ErrClosed) {
		t.Fatalf("after FD.Close: fired %v, Err %v, want ErrClosed", fired, p.Err())
	}
	if _, err := r.TryRead(make([]byte, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRead on closed FD: %v, want ErrClosed", err)
	}
	// Starting a poll on a closed FD fires with the error instead of hanging.
	fired = false
	p.Start()
	tick(t, l, true)
	if !fired || !errors.Is(p.Err(), ErrClosed) {
		t.Fatalf("Start on closed FD: fired %v err %v", fired, p.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestFDNumberReuse closes an fd behind the loop's back while a dup keeps
// its file alive (so epoll keeps reporting it under the old number), then
// registers a new file that gets the same number. The old waiter learns
// ErrClosedOutside, and the old file's events never reach the new owner.
func TestFDNumberReuse(t *testing.T) {
	l := newLoop(t, Options{})
	r1, w1, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	keep, err := unix.Dup(r1.Fd())
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(keep)
	oldFired := false
	p1 := r1.NewPoll(Readable, func() { oldFired = true })
	p1.Start()
	num := r1.Fd()
	unix.Close(num) // behind the loop's back

	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if p[0] != num {
		unix.Close(p[0])
		unix.Close(p[1])
		t.Skipf("kernel gave fd %d, not the freed %d; cannot provoke reuse", p[0], num)
	}
	r2, err := l.NewFD(p[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer unix.Close(p[1])
	newFired := false
	p2 := r2.NewPoll(Readable, func() { newFired = true })
	p2.Start()

	stale := l.Stats().Stale
	if _, err := unix.Write(w1.Fd(), []byte("old")); err != nil { // readies the OLD file
		t.Fatal(err)
	}
	tick(t, l, true)
	if !oldFired || !errors.Is(p1.Err(), ErrClosedOutside) {
		t.Fatalf("old poll: fired %v err %v, want ErrClosedOutside", oldFired, p1.Err())
	}
	if newFired {
		t.Fatal("the old file's readiness was delivered to the new owner of the fd number")
	}
	if l.Stats().Stale <= stale {
		t.Fatal("stale epoll result not counted")
	}
	if _, err := unix.Write(p[1], []byte("new")); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return newFired })
	if _, err := l.NewFD(p[0]); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("registering an fd twice: %v, want 'already registered'", err)
	}
}

func TestNewFDBadInput(t *testing.T) {
	l := newLoop(t, Options{})
	if _, err := l.NewFD(-1); err == nil {
		t.Fatal("NewFD(-1) succeeded")
	}
	f, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := l.NewFD(f); err == nil || !strings.Contains(err.Error(), "cannot be polled") {
		t.Fatalf("NewFD(regular file): %v, want 'cannot be polled'", err)
	}
}

// tcpPair returns a connected client and server through the loop.
func tcpPair(t *testing.T, l *Loop) (client, server *FD) {
	t.Helper()
	ln, err := l.ListenTCP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr, err := ln.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	client, err = l.DialTCP(addr)
	if err != nil {
		t.Fatal(err)
	}
	connected := false
	cp := client.NewPoll(Writable, func() { connected = true })
	cp.Start()
	tickUntil(t, l, func() bool { return connected })
	if err := client.FinishConnect(); err != nil {
		t.Fatal(err)
	}
	accepted := false
	ap := ln.NewPoll(Readable, func() { accepted = true })
	for server == nil {
		server, _, err = ln.TryAccept()
		if errors.Is(err, ErrWouldBlock) {
			ap.Start()
			tickUntil(t, l, func() bool { return accepted })
			accepted = false
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return client, server
}

func TestTCPEchoAndPeerReset(t *testing.T) {
	l := newLoop(t, Options{})
	client, server := tcpPair(t, l)
	defer server.Close()
	if _, err := client.TryWrite([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	ready := false
	sp := server.NewPoll(Readable, func() { ready = true })
	sp.Start()
	tickUntil(t, l, func() bool { return ready })
	buf := make([]byte, 16)
	n, err := server.TryRead(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("server read %q, %v", buf[:n], err)
	}
	if _, err := server.TryRead(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("server second read: %v, want EAGAIN", err)
	}

	// Peer reset: linger 0 makes close send RST. The waiting reader wakes
	// with Error in Revents, and the read delivers ECONNRESET.
	ready = false
	sp.Start()
	if err := unix.SetsockoptLinger(client.Fd(), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		t.Fatal(err)
	}
	client.Close()
	tickUntil(t, l, func() bool { return ready })
	if sp.Revents()&Error == 0 || sp.Err() != nil {
		t.Fatalf("after peer reset: revents %v err %v, want error set and Err nil", sp.Revents(), sp.Err())
	}
	if _, err := server.TryRead(buf); !errors.Is(err, unix.ECONNRESET) {
		t.Fatalf("read after peer reset: %v, want ECONNRESET", err)
	}
}

func TestDialRefused(t *testing.T) {
	l := newLoop(t, Options{})
	ln, err := l.ListenTCP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := ln.LocalAddr()
	ln.Close() // nobody listens there now
	c, err := l.DialTCP(addr)
	if err != nil {
		if errors.Is(err, unix.ECONNREFUSED) {
			return // refused synchronously: fine too
		}
		t.Fatal(err)
	}
	defer c.Close()
	done := false
	p := c.NewPoll(Writable, func() { done = true })
	p.Start()
	tickUntil(t, l, func() bool { return done })
	if err := c.FinishConnect(); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("FinishConnect: %v, want ECONNREFUSED", err)
	}
}

func TestUDP(t *testing.T) {
	l := newLoop(t, Options{})
	a, err := l.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	aAddr, _ := a.LocalAddr()
	bAddr, _ := b.LocalAddr()
	ready := false
	p := b.NewPoll(Readable, func() { ready = true })
	p.Start()
	if err := a.TrySendto([]byte("dgram"), sockaddr(bAddr)); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return ready })
	buf := make([]byte, 64)
	n, from, err := b.TryRecvfrom(buf)
	if err != nil || string(buf[:n]) != "dgram" {
		t.Fatalf("recvfrom %q %v", buf[:n], err)
	}
	if got, _ := addrPort(from); got != aAddr {
		t.Fatalf("sender %v, want %v", got, aAddr)
	}
	// Connected UDP: TryRead/TryWrite, and an empty datagram is not EOF.
	if err := a.Connect(bAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TryWrite(nil); err != nil {
		t.Fatal(err)
	}
	ready = false
	p.Start()
	tickUntil(t, l, func() bool { return ready })
	if n, err := b.TryRead(buf); n != 0 || err != nil {
		t.Fatalf("empty datagram read as %d, %v; want 0, nil", n, err)
	}
}

// TestUDPErrorDoesNotStick: an ICMP "port unreachable" raises EPOLLERR once;
// after the read has returned the error and then EAGAIN, a new poll must
// wait, not fire again on the stale error.
func TestUDPErrorDoesNotStick(t *testing.T) {
	l := newLoop(t, Options{})
	gone, err := l.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	goneAddr, _ := gone.LocalAddr()
	gone.Close()
	a, err := l.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(goneAddr); err != nil {
		t.Fatal(err)
	}
	fired := 0
	p := a.NewPoll(Readable, func() { fired++ })
	p.Start()
	if _, err := a.TryWrite([]byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	if p.Revents()&Error == 0 {
		t.Fatalf("revents %v, want error", p.Revents())
	}
	buf := make([]byte, 16)
	if _, err := a.TryRead(buf); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("read after ICMP unreachable: %v, want ECONNREFUSED", err)
	}
	if _, err := a.TryRead(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("second read: %v, want EAGAIN", err)
	}
	p.Start()
	tick(t, l, true)
	tick(t, l, true)
	if fired != 1 {
		t.Fatalf("poll fired again on a consumed error (fired %d)", fired)
	}
}

// TestWriterIgnoresReadHangup: a peer that shut down its write side raises
// EPOLLRDHUP; a writer waiting for buffer space must not wake from it.
func TestWriterIgnoresReadHangup(t *testing.T) {
	l := newLoop(t, Options{})
	client, server := tcpPair(t, l)
	defer client.Close()
	defer server.Close()
	// Fill the server's send path until EAGAIN.
	chunk := make([]byte, 64<<10)
	for {
		_, err := server.TryWrite(chunk)
		if errors.Is(err, ErrWouldBlock) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fired := 0
	p := server.NewPoll(Writable, func() { fired++ })
	p.Start()
	if err := unix.Shutdown(client.Fd(), unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	r := server.NewPoll(Readable, func() {})
	r.Start()
	tickUntil(t, l, func() bool { return !r.Active() }) // the hangup has been seen
	if server.Ready()&Hangup == 0 {
		t.Fatalf("server readiness %v, want hangup", server.Ready())
	}
	tick(t, l, true)
	if fired != 0 {
		t.Fatalf("writer woke from the peer's read-side hangup (revents %v)", p.Revents())
	}
}

// TestTriggerFromOtherGoroutine: another goroutine signals while the loop
// blocks; every round must wake the loop. Run with -race.
func TestTriggerFromOtherGoroutine(t *testing.T) {
	l := newLoop(t, Options{})
	var fired atomic.Int64 // read by the test goroutine only, but keep -race honest
	trig := l.NewTrigger(func() { fired.Add(1) })
	const rounds = 200
	next := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range next {
			trig.Signal()
		}
	}()
	for i := range rounds {
		trig.Start()
		next <- struct{}{}
		tickUntil(t, l, func() bool { return fired.Load() == int64(i+1) })
	}
	close(next)
	wg.Wait()
	if s := l.Stats(); s.Wakeups != rounds {
		t.Fatalf("Wakeups = %d, want %d (one eventfd write per round)", s.Wakeups, rounds)
	}
}

// TestTriggerNoLostWakeups: several goroutines each ping-pong with the loop
// through their own trigger, concurrently, so that signals race with the
// loop draining the shared eventfd. A lost wakeup hangs the test.
func TestTriggerNoLostWakeups(t *testing.T) {
	l := newLoop(t, Options{})
	const senders, rounds = 4, 2000
	acks := make([]atomic.Int64, senders)
	trigs := make([]*Trigger, senders)
	for i := range trigs {
		trigs[i] = l.NewTrigger(func() {
			acks[i].Add(1)
			trigs[i].Start() // keep listening
		})
		trigs[i].Start()
	}
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := int64(1); r <= rounds; r++ {
				trigs[i].Signal()
				for acks[i].Load() < r {
					runtime.Gosched()
				}
			}
		}()
	}
	total := func() (n int64) {
		for i := range acks {
			n += acks[i].Load()
		}
		return n
	}
	tickUntil(t, l, func() bool { return total() == senders*rounds })
	wg.Wait()
	for i := range acks {
		if got := acks[i].Load(); got != rounds {
			t.Errorf("trigger %d fired %d times for %d acknowledged signals", i, got, rounds)
		}
	}
}

func TestTriggerCoalescesAndRemembersWhileIdle(t *testing.T) {
	l := newLoop(t, Options{})
	fired := 0
	trig := l.NewTrigger(func() { fired++ })
	for range 5 {
		trig.Signal() // idle: remembered, coalesced
	}
	tick(t, l, true)
	if fired != 0 {
		t.Fatal("idle trigger fired")
	}
	trig.Start()
	tick(t, l, true)
	if fired != 1 {
		t.Fatalf("fired %d times for 5 coalesced signals, want 1", fired)
	}
	if w := l.Stats().Wakeups; w != 1 {
		t.Fatalf("Wakeups = %d for 5 coalesced signals, want 1", w)
	}
	trig.Start()
	tick(t, l, true)
	if fired != 1 {
		t.Fatal("trigger fired again without a new Signal")
	}
	trig.Close()
}

// TestTriggerSignalDuringClose hammers Signal from other goroutines while the
// loop closes: no write may hit a closed (or reused) eventfd number.
func TestTriggerSignalDuringClose(t *testing.T) {
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	trigs := []*Trigger{l.NewTrigger(func() {}), l.NewTrigger(func() {})}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				trigs[i%2].Signal()
				// Keep the flags cycling so Signal keeps reaching the write.
				trigs[i%2].pending.Store(0)
				l.wakePending.Store(0)
			}
		}()
	}
	time.Sleep(2 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	stop.Store(true)
	wg.Wait()
	trigs[0].Signal() // after Close: no-op
	if _, err := l.Tick(true); !errors.Is(err, ErrLoopClosed) {
		t.Fatalf("Tick after Close: %v, want ErrLoopClosed", err)
	}
}

func TestSignalEvent(t *testing.T) {
	l := newLoop(t, Options{})
	fired := 0
	s, err := l.NewSignal(unix.SIGUSR1, func() { fired++ })
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if err := unix.Kill(unix.Getpid(), unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	if s.Count() < 1 || s.Signum() != unix.SIGUSR1 {
		t.Fatalf("Count %d Signum %v", s.Count(), s.Signum())
	}
	// A delivery while idle fires after the next Start.
	if err := unix.Kill(unix.Getpid(), unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for l.signals.counts[unix.SIGUSR1].Load() < 2 {
		runtime.Gosched() // wait for the forwarder; the loop is not needed for counting
	}
	s.Start()
	tick(t, l, true)
	if fired != 2 {
		t.Fatalf("signal delivered while idle: fired %d, want 2", fired)
	}
	s.Close()
	if l.signals.subs[unix.SIGUSR1] != nil {
		t.Fatal("closing the last SIGUSR1 event left the os/signal subscription in place")
	}
	for _, bad := range []unix.Signal{0, 65, unix.SIGKILL, unix.SIGSTOP, unix.SIGSEGV} {
		if _, err := l.NewSignal(bad, func() {}); err == nil {
			t.Errorf("NewSignal(%d) succeeded", int(bad))
		}
	}
}

func TestProcessExit(t *testing.T) {
	l := newLoop(t, Options{})
	fired := 0
	cmd, p := startShellExit(t, l, 3, &fired)
	p.Start()
	tickUntil(t, l, func() bool { return fired == 1 })
	if !p.Exited() || l.Active() != 0 {
		t.Fatalf("Exited %v Active %d", p.Exited(), l.Active())
	}
	// Exit is a state: a later Start fires again.
	p.Start()
	tick(t, l, true)
	if fired != 2 {
		t.Fatalf("Start after exit: fired %d, want 2", fired)
	}
	p.Close()
	// The loop did not reap the child: Wait still gets the status.
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("cmd.Wait after the exit event: %v, want exit status 3", err)
	}
	if _, err := l.NewProcess(0, func() {}); err == nil {
		t.Fatal("NewProcess(0) succeeded")
	}
}

// TestEINTR interrupts the blocking wait with signals aimed at the loop's
// thread; the wait must be retried and the timer still fire on time.
func TestEINTR(t *testing.T) {
	waitMethods(t, func(t *testing.T, o Options) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		l := newLoop(t, o)
		// Catch SIGUSR2 so its default action does not kill the test.
		s, err := l.NewSignal(unix.SIGUSR2, func() {})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tid, pid := unix.Gettid(), unix.Getpid()
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				unix.Tgkill(pid, tid, unix.SIGUSR2)
				time.Sleep(time.Millisecond)
			}
		}()
		fired := false
		tm := l.NewTimer(func() { fired = true })
		l.UpdateTime()
		tm.Start(30 * time.Millisecond)
		for !fired && l.Stats().Interrupted == 0 {
			tick(t, l, false)
		}
		tickUntil(t, l, func() bool { return fired })
		stop.Store(true)
		wg.Wait()
		if nanotime() < tm.Deadline() {
			t.Fatal("timer fired before its deadline")
		}
		if l.Stats().Interrupted == 0 {
			t.Fatal("no EINTR observed although the loop thread was signalled every millisecond")
		}
	})
}

func TestCountersAndActive(t *testing.T) {
	l, c := newFakeLoop(t)
	a := l.NewTimer(func() {})
	b := l.NewTimer(func() {})
	a.Start(1)
	b.Start(2)
	if l.Active() != 2 {
		t.Fatalf("Active() = %d, want 2", l.Active())
	}
	before := l.Stats()
	c.t += 5
	n := tick(t, l, true)
	after := l.Stats()
	if n != 2 || after.Fired-before.Fired != 2 || after.Ticks-before.Ticks != 1 {
		t.Fatalf("tick fired %d; stats delta fired %d ticks %d", n, after.Fired-before.Fired, after.Ticks-before.Ticks)
	}
	if after.Syscalls-before.Syscalls != 0 {
		t.Fatalf("a non-blocking tick with only timers made %d syscalls, want 0 (nothing to poll for)", after.Syscalls-before.Syscalls)
	}
	if l.Now() != c.t {
		t.Fatalf("Now() = %d, want the clock %d", l.Now(), c.t)
	}
	c.t += 7
	if l.Now() == c.t {
		t.Fatal("Now() changed without a tick or UpdateTime")
	}
	l.UpdateTime()
	if l.Now() != c.t {
		t.Fatal("UpdateTime did not refresh Now()")
	}
}

// raiseNofile raises the soft RLIMIT_NOFILE to the hard limit and returns it.
func raiseNofile(t *testing.T) uint64 {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	old := rl
	rl.Cur = rl.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
	return rl.Max
}

// manyFDs registers n eventfds, readies every third, and checks that exactly
// those polls fire.
func manyFDs(t *testing.T, n int) {
	l := newLoop(t, Options{})
	fds := make([]*FD, n)
	fired := make([]bool, n)
	for i := range fds {
		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatalf("eventfd #%d: %v", i, err)
		}
		if fds[i], err = l.NewFD(efd); err != nil {
			t.Fatal(err)
		}
		i := i
		fds[i].NewPoll(Readable, func() { fired[i] = true }).Start()
	}
	tick(t, l, true)
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	want := 0
	for i := 0; i < n; i += 3 {
		if _, err := unix.Write(fds[i].Fd(), one); err != nil {
			t.Fatal(err)
		}
		want++
	}
	got := 0
	for got < want {
		m := tick(t, l, false)
		if m == 0 {
			t.Fatalf("blocking tick fired nothing with %d of %d polls still due", want-got, want)
		}
		got += m
	}
	for i := range fired {
		if fired[i] != (i%3 == 0) {
			t.Fatalf("fd #%d fired=%v, want %v", i, fired[i], i%3 == 0)
		}
	}
	if l.Active() != n-want {
		t.Fatalf("Active() = %d, want %d", l.Active(), n-want)
	}
	for _, f := range fds {
		f.Close()
	}
}

func TestManyFDs100k(t *testing.T) {
	const n = 100_000
	if hard := raiseNofile(t); hard < n+100 {
		t.Skipf("RLIMIT_NOFILE hard limit is %d, below the %d fds this test needs; raising it needs CAP_SYS_RESOURCE (ulimit -Hn %d as root). TestManyFDsToLimit covers as many as the limit allows", hard, n+100, n+100)
	}
	manyFDs(t, n)
}

// TestManyFDsToLimit registers as many fds as RLIMIT_NOFILE allows (up to
// 100k), so the large-table path runs even where 100k is out of reach.
func TestManyFDsToLimit(t *testing.T) {
	hard := raiseNofile(t)
	n := int(min(hard, 100_100)) - 100
	if n < 1000 {
		t.Skipf("RLIMIT_NOFILE hard limit %d is too low for a meaningful test", hard)
	}
	t.Logf("registering %d fds (RLIMIT_NOFILE hard limit %d)", n, hard)
	manyFDs(t, n)
}

// TestHotPathDoesNotAllocate: start, stop, fire and tick allocate nothing
// once the loop's buffers have grown.
func TestHotPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; allocation counts need a normal build")
	}
	l := newLoop(t, Options{})
	fired := 0
	cb := func() { fired++ }
	tm := l.NewTimer(cb)
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := r.NewPoll(Readable, cb)
	trig := l.NewTrigger(cb)
	buf, msg := make([]byte, 8), []byte("x")
	cases := []struct {
		name string
		f    func()
	}{
		{"empty Tick", func() { l.Tick(true) }},
		{"Timer Start+Stop", func() { tm.Start(time.Second); tm.Stop() }},
		{"Timer Start+fire", func() { tm.Start(0); l.Tick(true) }},
		{"Poll Start+fire+TryRead", func() {
			w.TryWrite(msg)
			p.Start()
			l.Tick(true)
			r.TryRead(buf)
			r.TryRead(buf)
		}},
		{"Trigger Signal+fire", func() { trig.Start(); trig.Signal(); l.Tick(true) }},
	}
	for _, c := range cases {
		c.f() // grow buffers
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", c.name, n)
		}
	}
	if fired == 0 {
		t.Fatal("nothing fired")
	}
}

func TestCloseLoopInsideCallback(t *testing.T) {
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ran := []string{}
	a := l.NewTimer(func() { ran = append(ran, "a"); l.Close() })
	b := l.NewTimer(func() { ran = append(ran, "b") })
	trig := l.NewTrigger(func() { ran = append(ran, "trigger") })
	a.Start(0)
	b.Start(0)
	trig.Start()
	trig.Signal()
	if _, err := l.Tick(true); err != nil {
		t.Fatalf("Tick that closed the loop: %v", err)
	}
	if len(ran) != 1 || ran[0] != "a" {
		t.Fatalf("ran %v after the loop closed in a's callback, want [a]", ran)
	}
	if _, err := l.Tick(false); !errors.Is(err, ErrLoopClosed) {
		t.Fatalf("Tick after Close: %v", err)
	}
}

func TestLoopCloseClosesFDs(t *testing.T) {
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rfd := r.Fd()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryRead(make([]byte, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRead after Loop.Close: %v, want ErrClosed", err)
	}
	if _, err := w.TryWrite([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryWrite after Loop.Close: %v, want ErrClosed", err)
	}
	if _, err := unix.FcntlInt(uintptr(rfd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("fd %d still open after Loop.Close (fcntl: %v)", rfd, err)
	}
	if _, _, err := l.Pipe(); !errors.Is(err, ErrLoopClosed) {
		t.Fatalf("Pipe after Close: %v, want ErrLoopClosed", err)
	}
}

// TestFallbacksWhenSyscallsAreMissing simulates a kernel without
// epoll_pwait2 and without pidfd_open.
func TestFallbacksWhenSyscallsAreMissing(t *testing.T) {
	newLoop(t, Options{}) // make sure the once-per-process probe has run
	saved := pwait2Probe.err
	pwait2Probe.err = unix.ENOSYS
	defer func() { pwait2Probe.err = saved }()
	l := newLoop(t, Options{})
	if got, want := l.WaitMethod(), "clock=CLOCK_MONOTONIC wait=epoll_wait+timerfd (epoll_pwait2: function not implemented) coalesce=50000ns"; got != want {
		t.Fatalf("WaitMethod() = %q, want %q", got, want)
	}
	fired := false
	tm := l.NewTimer(func() { fired = true })
	l.UpdateTime()
	tm.Start(100 * time.Microsecond)
	tickUntil(t, l, func() bool { return fired })
	if nanotime() < tm.Deadline() {
		t.Fatal("fallback timer fired early")
	}

	savedOpen := pidfdOpen
	pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
	defer func() { pidfdOpen = savedOpen }()
	_, err := l.NewProcess(unix.Getpid(), func() {})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "not supported: pidfd_open") {
		t.Fatalf("NewProcess without pidfd_open: %v, want a 'not supported: pidfd_open ...' error", err)
	}
	t.Log(err)
}

// TestEventsAfterLoopClose: owners stop and close their events after the
// loop is gone (a scheduler's cleanup); that must be a quiet no-op.
func TestEventsAfterLoopClose(t *testing.T) {
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cb := func() { t.Error("callback ran after Loop.Close") }
	tm := l.NewTimer(cb)
	tm2 := l.NewTimer(cb)
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := r.NewPoll(Readable, cb)
	trig := l.NewTrigger(cb)
	sig, err := l.NewSignal(unix.SIGUSR1, cb)
	if err != nil {
		t.Fatal(err)
	}
	tm.Start(time.Hour)
	tm2.Start(time.Hour)
	p.Start()
	trig.Start()
	sig.Start()
	if l.Active() != 5 {
		t.Fatalf("Active() = %d, want 5", l.Active())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	tm2.Close()
	p.Stop()
	p.Close()
	trig.Stop()
	trig.Close()
	sig.Close()
	r.Close()
	w.Close()
	if l.Active() != 0 {
		t.Fatalf("Active() = %d after Loop.Close and stops, want 0", l.Active())
	}
	if tm.Active() || p.Active() || trig.Active() {
		t.Fatal("an event is still active after Loop.Close")
	}
}

// TestWriteToClosedPipe: the reader goes away while a writer waits for
// space; the writer wakes (Error) and the write reports EPIPE. Go's runtime
// ignores the SIGPIPE for fds other than 1 and 2, so the process lives on.
func TestWriteToClosedPipe(t *testing.T) {
	l := newLoop(t, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := w.TryWrite(chunk); errors.Is(err, ErrWouldBlock) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	fired := false
	p := w.NewPoll(Writable, func() { fired = true })
	p.Start()
	r.Close()
	tickUntil(t, l, func() bool { return fired })
	if p.Revents()&Error == 0 {
		t.Fatalf("revents %v, want error", p.Revents())
	}
	if _, err := w.TryWrite([]byte("x")); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write after the reader closed: %v, want EPIPE", err)
	}
}

func threadSlack(t *testing.T) int64 {
	t.Helper()
	s, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
	if errno != 0 {
		t.Skip("PR_GET_TIMERSLACK: ", errno)
	}
	return int64(s)
}

// TestOwnThreadLowersTimerSlack: with Options.OwnThread the loop sets its
// thread's slack to 1 ns under epoll_pwait2, says so, and Close restores it;
// without it the slack is reported and left alone; under timerfd it is 0.
func TestOwnThreadLowersTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const prev = 40_000
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, prev, 0, 0, 0); err != nil {
		t.Skip("PR_SET_TIMERSLACK: ", err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)

	plain, err := New()
	if err != nil {
		t.Fatal(err)
	}
	wi := plain.WaitInfo()
	plain.Close()
	if wi.Wait != "epoll_pwait2" {
		t.Skip("kernel lacks epoll_pwait2: " + plain.WaitMethod())
	}
	if wi.Slack != prev || wi.SlackSet || wi.Clock != "CLOCK_MONOTONIC" {
		t.Fatalf("default loop: WaitInfo %+v, want Slack %d, SlackSet false", wi, prev)
	}
	if got := threadSlack(t); got != prev {
		t.Fatalf("a loop without OwnThread changed the slack to %d", got)
	}

	l, err := NewWithOptions(Options{OwnThread: true})
	if err != nil {
		t.Fatal(err)
	}
	wi = l.WaitInfo()
	if wi.Slack != 1 || !wi.SlackSet {
		t.Fatalf("OwnThread loop: WaitInfo %+v, want Slack 1ns, SlackSet", wi)
	}
	if got := threadSlack(t); got != 1 {
		t.Fatalf("OwnThread loop: thread slack %d, want 1", got)
	}
	if want := "wait=epoll_pwait2 timerslack=1ns (set by the loop: Options.OwnThread)"; !strings.Contains(l.WaitMethod(), want) {
		t.Fatalf("WaitMethod() = %q, want it to contain %q", l.WaitMethod(), want)
	}
	l.Close()
	if got := threadSlack(t); got != prev {
		t.Fatalf("after Close: thread slack %d, want %d restored", got, prev)
	}

	tl, err := NewWithOptions(Options{OwnThread: true, UseTimerfd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if wi := tl.WaitInfo(); wi.Wait != "epoll_wait+timerfd" || wi.Slack != 0 || wi.SlackSet || wi.Reason != "chosen by Options.UseTimerfd" {
		t.Fatalf("timerfd loop: WaitInfo %+v", wi)
	}
	if got := threadSlack(t); got != prev {
		t.Fatalf("a timerfd loop changed the slack to %d", got)
	}
}

// TestTickDoesNotBlockAfterFiringTimers: a timer due when a Tick starts
// fires in its timer phase, and its callback may have made work for the
// caller (a coroutine made runnable). The same Tick must then not block,
// even with another event active: it used to wait for that event or the
// next timer, and with nothing else to come it waited forever (a sleeper's
// wake lost behind an idle pool job, seen under qemu-user).
func TestTickDoesNotBlockAfterFiringTimers(t *testing.T) {
	l := newLoop(t, Options{})
	r, _, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	idle := r.NewPoll(Readable, func() { t.Error("the empty pipe's poll fired") })
	idle.Start()     // active, and never ready: a blocking wait would last
	tick(t, l, true) // consume the registration's first edges (the write end's EPOLLOUT)
	due := l.NewTimer(func() {})
	due.StartAt(l.Now()) // due at the Tick's first clock reading
	later := l.NewTimer(func() { t.Error("the later timer fired: the Tick blocked after firing the due one") })
	later.Start(2 * time.Second) // ends a wrong blocking wait, so the test fails rather than hangs
	if n := tick(t, l, false); n != 1 || due.Active() || !later.Active() {
		t.Fatalf("Tick(false) fired %d (want 1, the due timer), due active %v, later active %v", n, due.Active(), later.Active())
	}
}

// startShellExit starts /bin/sh exiting with code and a Process event on l
// that counts its exit in *fired; the test is skipped where either cannot
// be made (no /bin/sh, no pidfd).
func startShellExit(t *testing.T, l *Loop, code int, fired *int) (*exec.Cmd, *Process) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("exit %d", code))
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start /bin/sh: ", err)
	}
	p, err := l.NewProcess(cmd.Process.Pid, func() { *fired++ })
	if errors.Is(err, ErrNotSupported) {
		cmd.Wait()
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cmd, p
}
