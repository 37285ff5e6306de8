package stackless

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// pipeEcho: a writer task writes n one-byte messages into a pipe, a reader
// task reads them, both suspending on readiness through the reactor.
type pipeWriter struct {
	Coro
	f     *FD
	n, i  int
	state int
}

func (t *pipeWriter) Resume(c *Context) Step {
	for t.i < t.n {
		if t.state == 1 { // woken: writable again
			t.state = 0
			if err := c.Err(); err != nil {
				return c.Fail(err)
			}
		}
		_, err := t.f.TryWrite([]byte{byte(t.i)})
		if errors.Is(err, reactor.ErrWouldBlock) {
			t.state = 1
			return c.AwaitWritable(t.f)
		}
		if err != nil {
			return c.Fail(err)
		}
		t.i++
		if t.i%16 == 0 {
			return c.Yield() // let the reader drain, so it really waits
		}
	}
	return c.Done()
}

type pipeReader struct {
	Coro
	f     *FD
	n     int
	got   []byte
	waits int
}

func (t *pipeReader) Resume(c *Context) Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	buf := make([]byte, 64)
	for len(t.got) < t.n {
		k, err := t.f.TryRead(buf)
		if errors.Is(err, reactor.ErrWouldBlock) {
			t.waits++
			return c.AwaitReadable(t.f)
		}
		if err != nil {
			return c.Fail(err)
		}
		t.got = append(t.got, buf[:k]...)
	}
	return c.Done()
}

func TestFDReadiness(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	// Tick at (nearly) every suspend point, so the reader wakes between writes.
	s, _ := NewWithOptions(Options{TickInterval: 1})
	defer s.Close()
	rf, err := s.NewFD(p[0])
	if err != nil {
		t.Fatal(err)
	}
	wf, err := s.NewFD(p[1])
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	r := &pipeReader{f: rf, n: n}
	_ = s.Spawn(r)
	_ = s.Spawn(&pipeWriter{f: wf, n: n})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if len(r.got) != n {
		t.Fatalf("read %d bytes, want %d", len(r.got), n)
	}
	for i, b := range r.got {
		if b != byte(i) {
			t.Fatalf("byte %d = %d, want %d", i, b, byte(i))
		}
	}
	if r.waits < 2 {
		t.Fatalf("reader waited for readability %d times, want several", r.waits)
	}
	_ = rf.Close()
	_ = wf.Close()
}

func TestFDOneWaiterPerDirection(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	s := New()
	defer s.Close()
	rf, _ := s.NewFD(p[0])
	defer rf.Close()
	a := &fdWaiter{f: rf}
	var bErr error
	b := &funcTask{f: func(c *Context) Step {
		if c.Err() == nil && bErr == nil {
			return c.AwaitReadable(rf) // a already waits: refused at once
		}
		bErr = c.Err()
		unix.Close(p[1]) // EOF wakes a
		return c.Done()
	}}
	_ = s.Spawn(a)
	_ = s.Spawn(b)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if bErr == nil || !strings.Contains(bErr.Error(), "one waiter per source") {
		t.Fatalf("second waiter got %v, want the one-waiter error", bErr)
	}
	if a.err != nil {
		t.Fatalf("first waiter got %v, want readiness (EOF)", a.err)
	}
}

type fdWaiter struct {
	Coro
	f     *FD
	state int
	err   error
}

func (t *fdWaiter) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.AwaitReadable(t.f)
	}
	t.err = c.Err()
	return c.Done()
}

// TestMicrotaskRefcount: each run drops the reference its Enqueue took; a
// cancelled one is skipped but still released; the destructor runs when the
// creator's reference, the last, is released.
func TestMicrotaskRefcount(t *testing.T) {
	s := New()
	runs, dtors := 0, 0
	m := NewMicrotask(func() error { runs++; return nil }, func() { dtors++ })
	for i := 0; i < 3; i++ {
		if err := s.EnqueueMicrotask(m); err != nil {
			t.Fatal(err)
		}
	}
	if m.Refs() != 4 {
		t.Fatalf("refs = %d after 3 enqueues + Retain, want 4", m.Refs())
	}
	_ = s.Spawn(&yielder{n: 1})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if runs != 3 || m.Refs() != 1 || dtors != 0 {
		t.Fatalf("runs %d refs %d dtors %d, want 3 1 0", runs, m.Refs(), dtors)
	}
	_ = s.EnqueueMicrotask(m)
	m.Cancel()
	_ = s.Spawn(&yielder{n: 1})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if runs != 3 || m.Refs() != 1 {
		t.Fatalf("cancelled microtask: runs %d refs %d, want 3 1", runs, m.Refs())
	}
	m.Release()
	if dtors != 1 {
		t.Fatalf("dtors = %d after the last Release, want 1", dtors)
	}
	if err := s.EnqueueMicrotask(m); err == nil {
		t.Fatal("EnqueueMicrotask of a released microtask succeeded")
	}
	if err := s.EnqueueMicrotask(&Microtask{}); err == nil {
		t.Fatal("EnqueueMicrotask without a run function succeeded")
	}
}

func TestEventAPI(t *testing.T) {
	var e Event
	if e.Fired() {
		t.Fatal("zero Event has fired")
	}
	if !e.Resolve(1) {
		t.Fatal("first Resolve returned false")
	}
	if e.Resolve(2) || e.Reject(errors.New("x")) {
		t.Fatal("Resolve/Reject of a fired event returned true")
	}
	if v, err := e.Outcome(); v != 1 || err != nil {
		t.Fatalf("Outcome = %v, %v, want 1, nil", v, err)
	}
	e.Reset()
	if e.Fired() {
		t.Fatal("Reset event has fired")
	}
	if e.Reject(nil) || e.Fired() {
		t.Fatal("Reject(nil) fired the event")
	}
}

// TestAwaitWithCancelEvent: a cancellation event wakes the waiter with
// ErrCancelled; the first trigger wins over a later resolve.
func TestAwaitWithCancelEvent(t *testing.T) {
	s := New()
	ev, cancel := new(Event), new(Event)
	w := &withTask{ev: ev, cancel: cancel}
	_ = s.Spawn(w)
	_ = s.Spawn(&funcTask{f: func(c *Context) Step {
		_ = cancel.Resolve(nil)
		_ = ev.Resolve(7) // too late: the waker is already Queued
		return c.Done()
	}})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(w.err, ErrCancelled) || w.trig != cancel {
		t.Fatalf("err %v triggered %p, want ErrCancelled from %p", w.err, w.trig, cancel)
	}
}

type withTask struct {
	Coro
	ev, cancel *Event
	state      int
	err        error
	trig       *Event
}

func (t *withTask) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.AwaitWith(t.ev, t.cancel, time.Hour)
	}
	t.err, t.trig = c.Err(), c.Triggered()
	return c.Done()
}

type funcTask struct {
	Coro
	f func(c *Context) Step
}

func (t *funcTask) Resume(c *Context) Step { return t.f(c) }

// TestTaskFailure: a failing task's error is Run's, as a *TaskError naming
// it, and the others are cancelled so their cleanup runs.
func TestTaskFailure(t *testing.T) {
	s := New()
	boom := errors.New("boom")
	victim := &forever{}
	_ = s.Spawn(victim)
	_ = s.Spawn(&funcTask{f: func(c *Context) Step { return c.Fail(boom) }})
	err := s.Run()
	var te *TaskError
	if !errors.As(err, &te) || !errors.Is(err, boom) || te.Task != "funcTask#2" {
		t.Fatalf("Run = %v, want a *TaskError for funcTask#2 wrapping boom", err)
	}
	if !errors.Is(victim.err, ErrCancelled) {
		t.Fatalf("the other task saw %v, want ErrCancelled", victim.err)
	}
}

type forever struct {
	Coro
	state int
	never Event
	err   error
}

func (t *forever) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.Await(&t.never)
	}
	t.err = c.Err()
	return c.Done()
}

func TestBadInput(t *testing.T) {
	s := New()
	if err := s.Spawn(nil); err == nil {
		t.Fatal("Spawn(nil) succeeded")
	}
	y := &yielder{n: 1}
	_ = s.Spawn(y)
	if err := s.Spawn(y); err == nil || !strings.Contains(err.Error(), "already spawned") {
		t.Fatalf("double Spawn: %v", err)
	}
	if err := s.SpawnPriority(&yielder{}, Priority(7)); err == nil {
		t.Fatal("invalid priority accepted")
	}
	other := New()
	if err := other.Cancel(y); err == nil {
		t.Fatal("Cancel of a task from another scheduler succeeded")
	}
	_ = s.Spawn(&funcTask{f: func(c *Context) Step { return Step{} }})
	err := s.Run()
	if err == nil || !strings.Contains(err.Error(), "zero Step") {
		t.Fatalf("zero Step: Run = %v", err)
	}
	_ = s.Spawn(&funcTask{f: func(c *Context) Step {
		if c.Err() != nil {
			if !strings.Contains(c.Err().Error(), "wait on nothing") {
				return c.Fail(c.Err())
			}
			return c.Done()
		}
		return c.AwaitWith(nil, nil, 0)
	}})
	if err := s.Run(); err != nil {
		t.Fatalf("wait on nothing: %v", err)
	}
}

// TestTriggerFromAnotherGoroutine: a task blocks in the reactor until another
// goroutine signals its trigger; a signal sent before the wait is remembered.
func TestTriggerFromAnotherGoroutine(t *testing.T) {
	s := New()
	defer s.Close()
	tr, err := s.NewTrigger()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const rounds = 20
	ack := make(chan int)
	w := &triggerWaiter{tr: tr, rounds: rounds, ack: ack}
	_ = s.Spawn(w)
	go func() {
		for i := 0; i < rounds; i++ {
			tr.Signal()
			<-ack
		}
	}()
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if w.woke != rounds || s.Stats().Blocks == 0 {
		t.Fatalf("woke %d times (want %d), blocking ticks %d (want > 0)", w.woke, rounds, s.Stats().Blocks)
	}
}

type triggerWaiter struct {
	Coro
	tr           *Trigger
	state        int
	woke, rounds int
	ack          chan<- int
}

func (t *triggerWaiter) Resume(c *Context) Step {
	if t.state == 1 {
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
		t.woke++
		t.ack <- t.woke // the signaller waits for it before signalling again
		if t.woke == t.rounds {
			return c.Done()
		}
	}
	t.state = 1
	return c.AwaitSource(&t.tr.Source, 0)
}

// sourceWaiter awaits one Source and records the outcome.
type sourceWaiter struct {
	Coro
	src   *Source
	state int
	val   any
	err   error
}

func (t *sourceWaiter) Resume(c *Context) Step {
	if t.state == 0 {
		t.state = 1
		return c.AwaitSource(t.src, 10*time.Second)
	}
	t.val, t.err = c.Result(), c.Err()
	return c.Done()
}

func TestProcessExit(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start true:", err)
	}
	s := New()
	defer s.Close()
	p, err := s.NewProcess(cmd.Process.Pid)
	if errors.Is(err, reactor.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	w := &sourceWaiter{src: &p.Source}
	_ = s.Spawn(w)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if w.err != nil {
		t.Fatalf("process wait: %v", w.err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestSignal(t *testing.T) {
	s := New()
	defer s.Close()
	g, err := s.NewSignal(unix.SIGUSR1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	w := &sourceWaiter{src: &g.Source}
	_ = s.Spawn(w)
	_ = s.Spawn(&funcTask{f: func(c *Context) Step {
		_ = unix.Kill(unix.Getpid(), unix.SIGUSR1)
		return c.Done()
	}})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.val.(uint64); w.err != nil || n < 1 {
		t.Fatalf("signal wait: count %v, err %v", w.val, w.err)
	}
}

// TestManyWaitersDeadlockAndShutdown: 100k waiting tasks are reported (the
// message is truncated, the list complete) and all unwind their cleanup.
func TestManyWaitersDeadlockAndShutdown(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 20_000 // the race detector makes each task ~10x slower
	}
	s := New()
	tasks := make([]forever, n)
	for i := range tasks {
		_ = s.Spawn(&tasks[i])
	}
	err := s.Run()
	var de *DeadlockError
	if !errors.As(err, &de) || len(de.Waiting) != n {
		t.Fatalf("Run = %.200v, want a DeadlockError naming %d tasks", err, n)
	}
	if msg := err.Error(); len(msg) > 1000 || !strings.Contains(msg, fmt.Sprintf("and %d more", n-20)) {
		t.Fatalf("deadlock message not truncated: %d bytes", len(msg))
	}
	for i := range tasks {
		if !errors.Is(tasks[i].err, ErrCancelled) {
			t.Fatalf("task %d saw %v, want ErrCancelled", i, tasks[i].err)
		}
	}
	if s.Live() != 0 {
		t.Fatalf("%d tasks still live", s.Live())
	}
}

// TestFDCloseWakesWaiter: closing an FD wakes the task waiting on it with
// reactor.ErrClosed.
func TestFDCloseWakesWaiter(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	s := New()
	defer s.Close()
	rf, err := s.NewFD(p[0])
	if err != nil {
		t.Fatal(err)
	}
	w := &fdWaiter{f: rf}
	_ = s.Spawn(w)
	_ = s.Spawn(&funcTask{f: func(c *Context) Step {
		if err := rf.Close(); err != nil {
			return c.Fail(err)
		}
		return c.Done()
	}})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(w.err, reactor.ErrClosed) {
		t.Fatalf("waiter got %v, want reactor.ErrClosed", w.err)
	}
}

// TestSwitchHandlerBeforeSpawn: a handler installed before Spawn sees the
// task's first Enter; Finish is its last call; returning false removes it.
func TestSwitchHandlerBeforeSpawn(t *testing.T) {
	s := New()
	var got []string
	y := &yielder{n: 2}
	s.AddSwitchHandler(y, func(_ Task, ev SwitchEvent) bool { got = append(got, ev.String()); return true })
	calls := 0
	s.AddSwitchHandler(y, func(Task, SwitchEvent) bool { calls++; return false })
	_ = s.Spawn(y)
	_ = s.Spawn(&yielder{n: 2}) // a partner, so that the yields really switch
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if want := "enter leave enter leave enter finish"; strings.Join(got, " ") != want {
		t.Fatalf("handler saw %q, want %q", strings.Join(got, " "), want)
	}
	if calls != 1 {
		t.Fatalf("the handler returning false was called %d times, want 1", calls)
	}
}

// TestStubbornUnwinding: a task that keeps waiting while unwinding is
// abandoned with an error instead of hanging Run.
func TestStubbornUnwinding(t *testing.T) {
	defer func(n int) { maxUnwindSpins = n }(maxUnwindSpins)
	maxUnwindSpins = 1000
	s := New()
	never := new(Event)
	_ = s.Spawn(&funcTask{f: func(c *Context) Step { return c.Await(never) }}) // ignores every outcome
	err := s.Run()
	var te *TaskError
	if !errors.As(err, &te) || !strings.Contains(te.Err.Error(), "did not finish while unwinding") {
		t.Fatalf("Run = %v, want a deadlock and a TaskError for the stubborn task", err)
	}
	if s.Live() != 0 {
		t.Fatalf("%d tasks live after Run", s.Live())
	}
}

// TestTryAwait: inline fast path on a fired event; false (and no change) on
// a pending one; a pending cancellation is delivered by it, once.
func TestTryAwait(t *testing.T) {
	s := New()
	fired, pending := NewEvent(), NewEvent()
	fired.Resolve(5)
	var got []string
	tk := &funcTask{}
	tk.f = func(c *Context) Step {
		if !c.TryAwait(fired) || c.Result() != 5 || c.Err() != nil || c.Triggered() != fired {
			return c.Fail(errors.New("TryAwait on a fired event"))
		}
		got = append(got, "fired")
		if c.TryAwait(pending) {
			return c.Fail(errors.New("TryAwait on a pending event returned true"))
		}
		_ = s.Cancel(tk)
		if !c.TryAwait(pending) || !errors.Is(c.Err(), ErrCancelled) {
			return c.Fail(errors.New("TryAwait did not deliver the pending cancellation"))
		}
		got = append(got, "cancelled")
		if c.TryAwait(pending) {
			return c.Fail(errors.New("the cancellation was delivered twice"))
		}
		return c.Done()
	}
	_ = s.Spawn(tk)
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "fired cancelled" {
		t.Fatalf("got %v", got)
	}
}
