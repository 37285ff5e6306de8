// Package sched is a small cooperative runtime with a LIFO wake-up policy,
// built on goroutines: the example row of corobench's public row contract
// (the repository README, "Add your runtime").
//
// Exactly one coroutine runs at a time: it holds the baton. A coroutine
// that blocks (Wait, Sleep, Yield, or returning) picks the next runnable
// coroutine and hands it the baton over that coroutine's wake channel, then
// waits on its own. Each coroutine is a goroutine, so a hand-off is a
// channel send and receive, and the Go scheduler does the switch.
//
// The policy is what differs from corobench's own runtimes, which run
// coroutines FIFO: here a coroutine that is woken (a Fire, an Open, a
// Resolve) or spawned goes to the FRONT of the run queue, so the most
// recently readied coroutine runs next, while its data is still in cache
// (Go's runnext slot and Tokio's LIFO slot make the same bet). Yield goes
// to the BACK, so every other ready coroutine runs before the yielder
// resumes, as the scenarios' Blocking contract requires. Expired timers
// join at the back, in deadline order, whenever a coroutine blocks.
//
// Invariants: every field of Runtime, and of the primitives made from it,
// is touched only by the baton holder (or, before Run starts and after it
// returns, by the caller of Run); the wake channels carry the
// happens-before edges between holders. A coroutine's wake channel has
// room for one token, and at most one is ever outstanding.
package sched

import (
	"container/heap"
	"fmt"
	"time"
)

// Runtime is one scheduler. The zero value is not usable: use New.
type Runtime struct {
	runq   deque
	timers timerHeap
	live   int // coroutines started and not yet returned
	cur    *co
	done   chan struct{}
	// Stats, for tests and curious readers.
	Switches int64 // baton hand-offs to a different coroutine
}

// co is one coroutine: a goroutine that runs only while it holds the baton.
type co struct{ wake chan struct{} }

// New returns a runtime with no coroutines.
func New() *Runtime { return &Runtime{done: make(chan struct{})} }

// Run runs main as the first coroutine and returns when every coroutine
// has returned. It panics, naming the problem, if the coroutines deadlock
// (all blocked, no timer pending) or if Run is called twice.
func (r *Runtime) Run(main func()) {
	if r.live != 0 || r.cur != nil {
		panic("sched: Run called on a runtime that is already running")
	}
	c := r.spawn(main)
	c.wake <- struct{}{}
	<-r.done
}

// Go starts fn as a new coroutine, at the front of the run queue: it runs
// as soon as the caller blocks. Only a coroutine of r may call it.
func (r *Runtime) Go(fn func()) {
	r.mustHold("Go")
	r.runq.pushFront(r.spawn(fn))
}

func (r *Runtime) spawn(fn func()) *co {
	c := &co{wake: make(chan struct{}, 1)}
	r.live++
	go func() {
		<-c.wake
		r.cur = c
		fn()
		r.exit()
	}()
	return c
}

// exit ends the current coroutine: the baton goes to the next runnable
// one, or, when none is left, back to Run.
func (r *Runtime) exit() {
	r.live--
	next := r.pick()
	if next == nil {
		if r.live > 0 {
			panic(fmt.Sprintf("sched: deadlock: %d coroutines blocked and no timer pending", r.live))
		}
		r.cur = nil
		close(r.done)
		return
	}
	r.Switches++
	next.wake <- struct{}{}
}

// Yield lets every other ready coroutine run before the caller resumes.
func (r *Runtime) Yield() {
	r.mustHold("Yield")
	r.runq.pushBack(r.cur)
	r.block()
}

// Sleep suspends the caller for at least d.
func (r *Runtime) Sleep(d time.Duration) {
	r.mustHold("Sleep")
	heap.Push(&r.timers, timer{when: time.Now().Add(d), c: r.cur, seq: r.timers.seq})
	r.timers.seq++
	r.block()
}

// block hands the baton to the next runnable coroutine and waits for it to
// come back. The caller has already queued itself somewhere (a run queue,
// a timer, a waiter list) or it never runs again.
func (r *Runtime) block() {
	self := r.cur
	next := r.pick()
	if next == nil {
		panic(fmt.Sprintf("sched: deadlock: every coroutine (%d) is blocked and no timer is pending", r.live))
	}
	if next == self {
		return
	}
	r.Switches++
	next.wake <- struct{}{}
	<-self.wake
	r.cur = self
}

// pick returns the next coroutine to run, waiting for the earliest timer
// when nothing is runnable; nil when nothing is runnable and no timer is
// pending.
func (r *Runtime) pick() *co {
	for {
		r.expireTimers(time.Time{})
		if c := r.runq.popFront(); c != nil {
			return c
		}
		if r.timers.Len() == 0 {
			return nil
		}
		time.Sleep(time.Until(r.timers.items[0].when))
		r.expireTimers(time.Now())
	}
}

// expireTimers moves every timer due by now (time.Now() when now is zero)
// to the back of the run queue, earliest first.
func (r *Runtime) expireTimers(now time.Time) {
	if r.timers.Len() == 0 {
		return
	}
	if now.IsZero() {
		now = time.Now()
	}
	for r.timers.Len() > 0 && !r.timers.items[0].when.After(now) {
		r.runq.pushBack(heap.Pop(&r.timers).(timer).c)
	}
}

func (r *Runtime) mustHold(op string) {
	if r.cur == nil {
		panic("sched: " + op + " called outside a running coroutine of this runtime")
	}
}

// wake readies c at the front of the run queue (the LIFO policy).
func (r *Runtime) wake(c *co) { r.runq.pushFront(c) }

// Signal is a reusable hand-off between two coroutines: Fire wakes the
// coroutine blocked in Wait (it runs next), or lets the next Wait pass.
type Signal struct {
	r       *Runtime
	waiter  *co
	pending bool
}

// NewSignal returns a signal of r.
func (r *Runtime) NewSignal() *Signal { return &Signal{r: r} }

// Fire wakes the waiter, or lets the next Wait pass; it does not switch.
func (s *Signal) Fire() {
	if w := s.waiter; w != nil {
		s.waiter = nil
		s.r.wake(w)
		return
	}
	s.pending = true
}

// Wait returns at once if the signal fired since the last Wait, else
// blocks until it fires. One coroutine at a time may wait.
func (s *Signal) Wait() {
	s.r.mustHold("Signal.Wait")
	if s.pending {
		s.pending = false
		return
	}
	if s.waiter != nil {
		panic("sched: two coroutines wait on one Signal")
	}
	s.waiter = s.r.cur
	s.r.block()
}

// Gate is a broadcast: any number of coroutines wait, Open releases all of
// them (in the order they started waiting, ahead of the run queue) and
// every later Wait passes.
type Gate struct {
	r       *Runtime
	waiters []*co
	open    bool
}

// NewGate returns a closed gate of r.
func (r *Runtime) NewGate() *Gate { return &Gate{r: r} }

// Open releases every waiter; it does not switch.
func (g *Gate) Open() {
	g.open = true
	for i := len(g.waiters) - 1; i >= 0; i-- {
		g.r.wake(g.waiters[i])
	}
	g.waiters = nil
}

// Wait blocks until the gate is open.
func (g *Gate) Wait() {
	g.r.mustHold("Gate.Wait")
	if g.open {
		return
	}
	g.waiters = append(g.waiters, g.r.cur)
	g.r.block()
}

// Future is a one-shot value: Await returns at once when it is resolved
// (the fast path, no switch), else blocks until Resolve.
type Future struct {
	r      *Runtime
	v      uint64
	done   bool
	waiter *co
}

// NewFuture returns a pending future of r.
func (r *Runtime) NewFuture() *Future { return &Future{r: r} }

// Resolve completes the future with v and readies its waiter.
func (f *Future) Resolve(v uint64) {
	if f.done {
		panic("sched: Future resolved twice without a Reset")
	}
	f.v, f.done = v, true
	if w := f.waiter; w != nil {
		f.waiter = nil
		f.r.wake(w)
	}
}

// Await returns the value, blocking until the future is resolved.
func (f *Future) Await() uint64 {
	f.r.mustHold("Future.Await")
	if !f.done {
		if f.waiter != nil {
			panic("sched: two coroutines await one Future")
		}
		f.waiter = f.r.cur
		f.r.block()
	}
	return f.v
}

// Reset makes a resolved future pending again.
func (f *Future) Reset() { f.done = false }

// deque is the run queue: a ring buffer that grows, with both ends open.
type deque struct {
	buf        []*co
	head, size int
}

func (d *deque) grow() {
	n := max(16, 2*len(d.buf))
	buf := make([]*co, n)
	for i := 0; i < d.size; i++ {
		buf[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = buf, 0
}

func (d *deque) pushBack(c *co) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = c
	d.size++
}

func (d *deque) pushFront(c *co) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = c
	d.size++
}

func (d *deque) popFront() *co {
	if d.size == 0 {
		return nil
	}
	c := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return c
}

// timer is a sleeping coroutine; seq breaks ties between equal deadlines
// in the order the sleeps began.
type timer struct {
	when time.Time
	c    *co
	seq  uint64
}

type timerHeap struct {
	items []timer
	seq   uint64
}

func (h *timerHeap) Len() int { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.when.Equal(b.when) {
		return a.seq < b.seq
	}
	return a.when.Before(b.when)
}
func (h *timerHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *timerHeap) Push(x any)    { h.items = append(h.items, x.(timer)) }
func (h *timerHeap) Pop() any {
	n := len(h.items)
	t := h.items[n-1]
	h.items = h.items[:n-1]
	return t
}
