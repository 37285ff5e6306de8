package reactor

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeClock is an injectable clock for model tests.
type fakeClock struct{ t int64 }

func (c *fakeClock) now() int64 { return c.t }

func newFakeLoop(t testing.TB) (*Loop, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: 1000}
	l, err := NewWithOptions(Options{Clock: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, c
}

func tick(t testing.TB, l *Loop, noWait bool) int {
	t.Helper()
	n, err := l.Tick(noWait)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkHeap verifies the 4-ary heap order and the index back-pointers.
func checkHeap(t testing.TB, h *timerHeap) {
	t.Helper()
	for i := range h.a {
		e := &h.a[i]
		if e.t.index != i {
			t.Fatalf("heap slot %d holds a timer whose index is %d", i, e.t.index)
		}
		if e.t.deadline != e.deadline {
			t.Fatalf("heap slot %d: entry deadline %d, timer deadline %d", i, e.deadline, e.t.deadline)
		}
		if i > 0 && e.less(&h.a[(i-1)/4]) {
			t.Fatalf("heap order broken at slot %d", i)
		}
	}
}

// checkFar verifies the ring of far timers (farTimers' invariants): each
// entry in the bucket its deadline names, within the ring's span, its node
// marked with its place, and the count.
func checkFar(t testing.TB, l *Loop) {
	t.Helper()
	f := &l.far
	n := 0
	for k, b := range f.b {
		for pos, e := range b {
			n++
			if e.t.index != farMark(k, pos) {
				t.Fatalf("ring bucket %d position %d holds a timer whose index is %d", k, pos, e.t.index)
			}
			if e.deadline != e.t.deadline || e.deadline < f.start || uint64(e.deadline-f.start)>>farShift >= farBuckets ||
				int(e.deadline>>farShift)&(farBuckets-1) != k {
				t.Fatalf("ring bucket %d holds deadline %d (node %d), start %d", k, e.deadline, e.t.deadline, f.start)
			}
		}
	}
	if n != f.n {
		t.Fatalf("ring count %d, holds %d", f.n, n)
	}
}

// checkRun verifies the sorted run (timerRun's invariants): fired entries
// cleared, the rest in (deadline, seq) order, the head live, and each live
// node marked with its place.
func checkRun(t testing.TB, l *Loop) {
	t.Helper()
	r := &l.run
	if r.h > len(r.a) || (r.h == len(r.a) && r.h != 0) {
		t.Fatalf("run head %d of %d entries", r.h, len(r.a))
	}
	if r.h < len(r.a) && r.a[r.h].t == nil {
		t.Fatalf("run head %d is a stopped entry", r.h)
	}
	for i, e := range r.a {
		if i < r.h {
			if e.t != nil {
				t.Fatalf("run slot %d before the head %d still holds a timer", i, r.h)
			}
			continue
		}
		if i > r.h && e.less(&r.a[i-1]) {
			t.Fatalf("run order broken at slot %d", i)
		}
		if e.t != nil && (e.t.index != r.mark(i) || e.t.deadline != e.deadline) {
			t.Fatalf("run slot %d: timer index %d (want %d), deadline %d (entry %d)", i, e.t.index, r.mark(i), e.t.deadline, e.deadline)
		}
	}
}

func TestTimersEqualDeadlinesFireInStartOrder(t *testing.T) {
	l, c := newFakeLoop(t)
	var got []int
	var timers []*Timer
	// Start in a scrambled deadline order; within a deadline, start order
	// must win, even for a timer re-started (it moves to the back).
	deadlines := []int64{30, 10, 30, 20, 10, 30, 10}
	for i, d := range deadlines {
		i := i
		tm := l.NewTimer(func() { got = append(got, i) })
		tm.StartAt(c.t + d)
		timers = append(timers, tm)
	}
	timers[1].StartAt(c.t + 10) // re-start: now after 4 and 6
	c.t += 30
	if n := tick(t, l, true); n != len(deadlines) {
		t.Fatalf("fired %d timers, want %d", n, len(deadlines))
	}
	want := []int{4, 6, 1, 3, 0, 2, 5}
	if !slices.Equal(got, want) {
		t.Fatalf("fire order %v, want %v", got, want)
	}
	if l.Active() != 0 {
		t.Fatalf("Active() = %d after all timers fired, want 0", l.Active())
	}
}

func TestTimerCancelInsideAnotherTimersCallback(t *testing.T) {
	l, c := newFakeLoop(t)
	var fired []string
	var b, d *Timer
	a := l.NewTimer(func() {
		fired = append(fired, "a")
		b.Stop()  // due in this very phase: must not fire
		d.Close() // closing works too
	})
	b = l.NewTimer(func() { fired = append(fired, "b") })
	cTimer := l.NewTimer(func() { fired = append(fired, "c") })
	d = l.NewTimer(func() { fired = append(fired, "d") })
	a.Start(5)
	b.Start(5)
	cTimer.Start(5)
	d.Start(7)
	c.t += 10
	tick(t, l, true)
	if !slices.Equal(fired, []string{"a", "c"}) {
		t.Fatalf("fired %v, want [a c]", fired)
	}
	if b.Active() || l.Active() != 0 {
		t.Fatalf("b.Active()=%v Active()=%d, want false, 0", b.Active(), l.Active())
	}
	// The stopped timer is reusable.
	b.Start(1)
	c.t += 1
	tick(t, l, true)
	if !slices.Equal(fired, []string{"a", "c", "b"}) {
		t.Fatalf("fired %v after restarting b", fired)
	}
}

func TestTimerStopSelfAndRestartInCallback(t *testing.T) {
	l, c := newFakeLoop(t)
	count := 0
	var tm *Timer
	tm = l.NewTimer(func() {
		count++
		tm.Stop()   // already idle: no-op
		tm.Start(0) // zero delay: must wait for a later phase, not spin here
	})
	tm.Start(0)
	tick(t, l, true)
	// A tick has two timer phases (before and after the wait); each may fire
	// the timer at most once. That the tick returned at all is the main point.
	if count < 1 || count > 2 {
		t.Fatalf("self-restarting zero-delay timer fired %d times in one tick, want 1 or 2", count)
	}
	before := count
	c.t++
	tick(t, l, true)
	if count-before < 1 || count-before > 2 {
		t.Fatalf("fired %d times in the second tick, want 1 or 2", count-before)
	}
	if !tm.Active() || l.Active() != 1 {
		t.Fatalf("timer should still be armed: Active()=%v loop Active()=%d", tm.Active(), l.Active())
	}
	tm.Close()
	if l.Active() != 0 {
		t.Fatalf("Active() = %d after Close, want 0", l.Active())
	}
}

func TestTimerPastDeadlineAndNegativeDuration(t *testing.T) {
	l, c := newFakeLoop(t)
	var got []string
	early := l.NewTimer(func() { got = append(got, "early") })
	past := l.NewTimer(func() { got = append(got, "past") })
	neg := l.NewTimer(func() { got = append(got, "neg") })
	early.StartAt(c.t)
	past.StartAt(c.t - 500)
	if past.Deadline() != c.t {
		t.Fatalf("past deadline clamped to %d, want Now() %d", past.Deadline(), c.t)
	}
	neg.Start(-time.Second)
	tick(t, l, true)
	if !slices.Equal(got, []string{"early", "past", "neg"}) {
		t.Fatalf("fired %v, want [early past neg]", got)
	}
}

func TestTimerStartAfterClosePanics(t *testing.T) {
	l, _ := newFakeLoop(t)
	tm := l.NewTimer(func() {})
	tm.Close()
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Start after Close did not panic")
		}
	}()
	tm.Start(1)
}

// TestTimersMillion starts 1M timers with random deadlines (many equal) and
// checks that all fire in (deadline, start order) order.
func TestTimersMillion(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	l, c := newFakeLoop(t)
	base := c.t
	type rec struct {
		deadline int64
		id       int32
	}
	fired := make([]rec, 0, n)
	timers := make([]*Timer, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range timers {
		id := int32(i)
		var tm *Timer
		tm = l.NewTimer(func() { fired = append(fired, rec{tm.Deadline(), id}) })
		timers[i] = tm
		tm.StartAt(base + rng.Int64N(int64(n/4)))
	}
	// Cancel every 7th, to exercise removal from the middle at size.
	cancelled := 0
	for i := 0; i < n; i += 7 {
		timers[i].Stop()
		cancelled++
	}
	if l.Active() != n-cancelled {
		t.Fatalf("Active() = %d, want %d", l.Active(), n-cancelled)
	}
	checkHeap(t, &l.timers)
	for c.t = base; c.t < base+int64(n/4); c.t += int64(n / 64) {
		tick(t, l, true)
	}
	tick(t, l, true)
	if len(fired) != n-cancelled {
		t.Fatalf("fired %d timers, want %d", len(fired), n-cancelled)
	}
	for i := 1; i < len(fired); i++ {
		a, b := fired[i-1], fired[i]
		if a.deadline > b.deadline || (a.deadline == b.deadline && a.id > b.id) {
			t.Fatalf("timer %d (deadline %d) fired before timer %d (deadline %d)", a.id, a.deadline, b.id, b.deadline)
		}
		if b.id%7 == 0 {
			t.Fatalf("cancelled timer %d fired", b.id)
		}
	}
}

// timerModel is the reference for FuzzTimers: a plain list, scanned
// linearly, with the documented semantics.
type timerModel struct {
	now    int64
	seq    uint64
	active map[int]modelTimer // by timer id
}

type modelTimer struct {
	deadline int64
	seq      uint64
}

func (m *timerModel) start(id int, d int64) {
	m.seq++
	m.active[id] = modelTimer{deadline: m.now + d, seq: m.seq}
}

// next returns the timer that fires next at the current time, if any, among
// those started no later than limit.
func (m *timerModel) next(limit uint64) (int, bool) {
	best, ok := -1, false
	for id, t := range m.active {
		if t.deadline > m.now || t.seq > limit {
			continue
		}
		if !ok || t.deadline < m.active[best].deadline ||
			(t.deadline == m.active[best].deadline && t.seq < m.active[best].seq) {
			best, ok = id, true
		}
	}
	return best, ok
}

// wake is what a blocking wait's timer deadline should be under coalescing
// window w (Loop.wakeDeadline): the nearest deadline d, or the last one in
// [d, d+w], or d+w when more than coalesceScanMax others fall in it.
func (m *timerModel) wake(w int64) (int64, bool) {
	if len(m.active) == 0 {
		return 0, false
	}
	d := int64(math.MaxInt64)
	for _, t := range m.active {
		d = min(d, t.deadline)
	}
	if w <= 0 {
		return d, true
	}
	last, in := d, 0
	for _, t := range m.active {
		if t.deadline <= d+w {
			last = max(last, t.deadline)
			in++
		}
	}
	if in-1 > coalesceScanMax {
		return d + w, true
	}
	return last, true
}

// fuzzTimer is what Timer and TimerNode have in common.
type fuzzTimer interface {
	Start(time.Duration)
	StartAt(int64)
	Stop()
	Active() bool
	Deadline() int64
}

// nodeWaiter stands for a runtime's waker: a struct embedding a TimerNode
// and handling its firing.
type nodeWaiter struct {
	node  TimerNode
	cb    func()
	fired int
}

func (w *nodeWaiter) OnTimer() {
	w.fired++
	if w.cb != nil {
		w.cb()
	}
}

// FuzzTimers drives random start / stop / advance sequences, including
// callbacks that stop or start other timers, through the Loop with an
// injected clock, and compares every firing with timerModel.
func FuzzTimers(f *testing.F) {
	f.Add([]byte{0, 3, 0, 3, 0, 1, 2, 5, 1, 0, 2, 9})
	f.Add([]byte{3, 2, 0, 0, 1, 4, 0, 2, 2, 1, 1, 2, 7, 4, 1, 2, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 2, 0, 4, 0, 2, 1})
	// A full heap with scattered deadlines, then removals from the middle.
	var big []byte
	for i := range 40 {
		big = append(big, 0, byte(i), byte(i*7%24))
	}
	for _, i := range []byte{5, 9, 22, 30, 1, 17, 33} {
		big = append(big, 1, i, 0)
	}
	big = append(big, 2, 0, 4, 2, 0, 4, 2, 0, 4, 2, 0, 4, 2, 0, 4, 2, 0, 4)
	f.Add(big)
	f.Fuzz(func(t *testing.T, ops []byte) {
		// Each input runs twice: every phase popping its due timers one by
		// one, then every phase taking them out as one batch (runTimers'
		// two paths; the real thresholds pick by heap size and count).
		// Each also runs with the ring of far timers in use: buckets of
		// 4 ns, so that the input's nanosecond deadlines pass through it.
		for _, batch := range []bool{false, true} {
			for _, shift := range []uint{farShift, 2} {
				restore := setBatchPath(batch)
				defer func(v uint) { farShift = v }(farShift)
				farShift = shift
				fuzzTimersOnce(t, ops)
				restore()
			}
		}
	})
}

// setBatchPath makes runTimers take every phase's due timers as one batch
// (batch) or pop them one by one (!batch), whatever their number and the
// heap's size, and returns the function that restores the thresholds.
func setBatchPath(batch bool) (restore func()) {
	oldMin, oldHeap := batchMin, batchHeapMin
	if batch {
		batchMin, batchHeapMin = 1, 0
	} else {
		batchMin = math.MaxInt
	}
	return func() { batchMin, batchHeapMin = oldMin, oldHeap }
}

// fuzzTimersOnce is FuzzTimers' body for one input.
func fuzzTimersOnce(t *testing.T, ops []byte) {
	{
		// 40 timers make the 4-ary heap three levels deep, deep enough for a
		// removal to need a sift up.
		const nTimers = 40
		clock := &fakeClock{t: 0}
		// midTick, when set, is added to the clock at its second reading in a
		// tick: the refresh after the wait (phase 5), as if the wait took time.
		var midTick int64
		reads := 0
		// A coalescing window of 6 ns against deadlines up to 23 ns out, so
		// that the wait deadline's isolated and batched cases both occur.
		const window = 6
		l, err := NewWithOptions(Options{Coalesce: window, Clock: func() int64 {
			reads++
			if reads == 2 {
				clock.t += midTick
				midTick = 0
			}
			return clock.t
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		m := &timerModel{active: map[int]modelTimer{}}
		var got, want []int
		// Even ids are Timers, odd ids bare TimerNodes embedded in a waiter
		// struct: both must obey the same model, from the same heap.
		timers := make([]fuzzTimer, nTimers)
		// action[i] is what timer i's callback does to another timer:
		// 0 nothing, 1 stop target, 2 start target with delay.
		type action struct{ kind, target, delay int }
		actions := make([]action, nTimers)
		var modelLimit uint64
		runModelAction := func(id int) {
			switch a := actions[id]; a.kind {
			case 1:
				delete(m.active, a.target)
			case 2:
				m.start(a.target, int64(a.delay))
			}
		}
		for i := range timers {
			id := i
			cb := func() {
				got = append(got, id)
				switch a := actions[id]; a.kind {
				case 1:
					timers[a.target].Stop()
				case 2:
					timers[a.target].Start(time.Duration(a.delay))
				}
			}
			if id%2 == 0 {
				timers[i] = l.NewTimer(cb)
			} else {
				w := &nodeWaiter{cb: cb}
				w.node.Init(l, w)
				timers[i] = &w.node
			}
		}
		// modelPhase mirrors runTimers: fire due timers started before the phase.
		modelPhase := func() {
			modelLimit = m.seq
			for {
				id, ok := m.next(modelLimit)
				if !ok {
					return
				}
				delete(m.active, id)
				want = append(want, id)
				runModelAction(id)
			}
		}
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i]%5, int(ops[i+1])%nTimers, int(ops[i+2])
			switch op {
			case 0: // start (or restart) timer a with a small delay: ties are common
				d := int64(b % 24)
				timers[a].Start(time.Duration(d))
				m.start(a, d)
			case 1: // stop
				timers[a].Stop()
				delete(m.active, a)
			case 2: // advance, then tick; every other time the clock also
				// moves during the tick's wait
				clock.t += int64(b % 5)
				m.now = clock.t
				if b&8 != 0 {
					midTick = int64(b>>4) % 4
				}
				during := midTick
				reads = 0
				tick(t, l, true)
				modelPhase() // phase 2
				m.now += during
				modelPhase() // phase 5: timers due by now, and zero-delay restarts
				if clock.t != m.now {
					t.Fatalf("test bug: clock %d, model %d", clock.t, m.now)
				}
			case 3: // give timer a a callback action on another timer
				actions[a] = action{kind: b % 3, target: (b / 3) % nTimers, delay: (b / 24) % 4}
			case 4: // start at an absolute deadline, possibly in the past
				dl := clock.t + int64(b%8) - 3
				timers[a].StartAt(dl)
				m.seq++
				m.active[a] = modelTimer{deadline: max(dl, clock.t), seq: m.seq}
			}
			checkHeap(t, &l.timers)
			checkFar(t, l)
			checkRun(t, l)
			if l.far.n > 0 {
				l.farEnsureMin() // as a blocking Tick does before wakeDeadline
			}
			if mw, ok := m.wake(window); ok != (l.nearest() != nil) || (ok && l.wakeDeadline() != mw) {
				lw := int64(-1)
				if l.nearest() != nil {
					lw = l.wakeDeadline()
				}
				t.Fatalf("after op %d: wait deadline %d, model %d (armed %v)", i/3, lw, mw, ok)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after op %d: fired %v, model fired %v", i/3, got, want)
			}
			if l.Active() != len(m.active) {
				t.Fatalf("after op %d: Active() = %d, model has %d armed", i/3, l.Active(), len(m.active))
			}
			for id, tm := range timers {
				mt, armed := m.active[id]
				if tm.Active() != armed || (armed && tm.Deadline() != mt.deadline) {
					t.Fatalf("after op %d: timer %d active=%v deadline=%d, model armed=%v deadline=%d",
						i/3, id, tm.Active(), tm.Deadline(), armed, mt.deadline)
				}
			}
		}
	}
}

// TestCoalesceWakeDeadline checks the blocking wait's timer deadline
// (Options.Coalesce): exact for an isolated deadline, the last deadline of
// the window when others share it, the window's end when too many do, and
// always the nearest one with coalescing off.
func TestCoalesceWakeDeadline(t *testing.T) {
	c := &fakeClock{t: 0}
	l := newLoop(t, Options{Clock: c.now, Coalesce: 50})
	off := newLoop(t, Options{Clock: c.now, Coalesce: -1})
	if l.WaitInfo().Coalesce != 50 || off.WaitInfo().Coalesce != 0 {
		t.Fatalf("WaitInfo().Coalesce = %v and %v, want 50ns and 0 (off)", l.WaitInfo().Coalesce, off.WaitInfo().Coalesce)
	}
	if !strings.Contains(l.WaitMethod(), "coalesce=50ns") || !strings.Contains(off.WaitMethod(), "coalesce=off") {
		t.Fatalf("WaitMethod() = %q and %q, want coalesce=50ns and coalesce=off", l.WaitMethod(), off.WaitMethod())
	}
	if def := newLoop(t, Options{}); def.WaitInfo().Coalesce != DefaultCoalesce {
		t.Fatalf("default Coalesce %v, want DefaultCoalesce %v", def.WaitInfo().Coalesce, DefaultCoalesce)
	}
	var nodes []*nodeWaiter
	at := func(dl int64) {
		for _, lp := range []*Loop{l, off} {
			w := &nodeWaiter{}
			w.node.Init(lp, w)
			w.node.StartAt(dl)
			nodes = append(nodes, w)
		}
	}
	check := func(what string, want, wantOff int64) {
		t.Helper()
		if got, gotOff := l.wakeDeadline(), off.wakeDeadline(); got != want || gotOff != wantOff {
			t.Fatalf("%s: wait deadline %d (coalescing off: %d), want %d (%d)", what, got, gotOff, want, wantOff)
		}
	}
	at(100)
	at(200)
	check("isolated", 100, 100)
	at(130)
	check("one more in the window", 130, 100)
	at(150)
	check("at the window's edge", 150, 100)
	at(151)
	check("just outside", 150, 100)
	// Fire everything due by 150 and check the next window starts at 151.
	c.t = 150
	if n := tick(t, l, true); n != 3 {
		t.Fatalf("tick at 150 fired %d timers, want 3 (100, 130, 150)", n)
	}
	check("after the batch", 200, 100)
	// More deadlines in one window than the walk looks at: the window's end.
	// The nearest and coalesceScanMax others are still walked.
	for i := range int64(coalesceScanMax + 1) {
		at(1000 + i%40)
	}
	tick(t, l, true) // fire 151
	c.t = 300
	tick(t, l, true) // fire 200
	check("full window", 1039, 100)
	at(1010)
	check("dense window", 1050, 100)
	_ = nodes
}

func TestTimerNodeLifecycle(t *testing.T) {
	l, c := newFakeLoop(t)
	var w nodeWaiter
	mustPanic(t, "Start before Init", "before Init", func() { w.node.Start(1) })
	mustPanic(t, "StartAt before Init", "before Init", func() { w.node.StartAt(1) })
	w.node.Stop() // uninitialised: a no-op
	if w.node.Active() {
		t.Fatal("uninitialised node reports Active")
	}
	mustPanic(t, "Init with a nil handler", "TimerHandler", func() { w.node.Init(l, nil) })
	w.node.Init(l, &w)
	w.node.Start(10)
	if !w.node.Active() || l.Active() != 1 || w.node.Deadline() != c.t+10 {
		t.Fatalf("after Start: Active=%v loop Active=%d deadline=%d", w.node.Active(), l.Active(), w.node.Deadline())
	}
	mustPanic(t, "Init while armed", "armed", func() { w.node.Init(l, &w) })
	w.node.Start(20) // re-arm: still one active
	if l.Active() != 1 {
		t.Fatalf("re-armed node: loop Active=%d, want 1", l.Active())
	}
	c.t += 15
	tick(t, l, true)
	if w.fired != 0 {
		t.Fatal("re-armed node fired at its old deadline")
	}
	c.t += 5
	if n := tick(t, l, true); n != 1 || w.fired != 1 || w.node.Active() || l.Active() != 0 {
		t.Fatalf("at deadline: tick fired %d, handler ran %d times, Active=%v loop Active=%d", n, w.fired, w.node.Active(), l.Active())
	}
	// Rebinding an idle node (a pooled waker) to another handler.
	var other nodeWaiter
	w.node.Init(l, &other)
	w.node.Start(0)
	tick(t, l, true)
	if w.fired != 1 || other.fired != 1 {
		t.Fatalf("after rebinding: old handler %d, new handler %d, want 1, 1", w.fired, other.fired)
	}
	w.node.Start(5)
	l.Close()
	if w.node.Active() {
		t.Fatal("node still Active after Loop.Close")
	}
	w.node.Stop() // no-op after Loop.Close
	mustPanic(t, "Start after Loop.Close", "Loop.Close", func() { w.node.Start(1) })
}

func mustPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("%s did not panic", what)
		}
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Fatalf("%s panicked with %v, want a message containing %q", what, r, want)
		}
	}()
	f()
}

// TestTimerNodesAndTimersShareOneOrder: nodes and Timers live in one heap,
// so equal deadlines fire in start order across both kinds.
func TestTimerNodesAndTimersShareOneOrder(t *testing.T) {
	l, c := newFakeLoop(t)
	var got []int
	ws := make([]nodeWaiter, 3)
	for i := range ws {
		i := i
		ws[i].cb = func() { got = append(got, 2*i+1) }
		ws[i].node.Init(l, &ws[i])
	}
	tms := make([]*Timer, 3)
	for i := range tms {
		i := i
		tms[i] = l.NewTimer(func() { got = append(got, 2*i) })
	}
	for i := range 3 {
		tms[i].StartAt(c.t + 5)
		ws[i].node.StartAt(c.t + 5)
	}
	c.t += 5
	tick(t, l, true)
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("fire order %v, want %v", got, want)
	}
}

// TestAllDueTimersFireInOneTickWithOneSyscall: n due timers cost one tick
// and its one (non-blocking) epoll wait, not a syscall or a tick per timer.
// An fd is registered so that the tick has something to poll for (with
// only timers it makes no syscall at all: TestNonBlockingTickSkipsThePollWithOnlyTimers).
func TestAllDueTimersFireInOneTickWithOneSyscall(t *testing.T) {
	l, c := newFakeLoop(t)
	r, w := pipeFDs(t)
	defer unix.Close(w)
	if _, err := l.NewFD(r); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	ws := make([]nodeWaiter, n)
	for i := range ws {
		ws[i].node.Init(l, &ws[i])
		ws[i].node.StartAt(c.t + int64(i%17))
	}
	c.t += 16
	before := l.Stats()
	if got := tick(t, l, true); got != n {
		t.Fatalf("tick fired %d, want %d", got, n)
	}
	after := l.Stats()
	if s := after.Syscalls - before.Syscalls; s != 1 {
		t.Fatalf("firing %d due timers made %d syscalls, want 1 (the tick's poll)", n, s)
	}
	for i := range ws {
		if ws[i].fired != 1 {
			t.Fatalf("waiter %d fired %d times", i, ws[i].fired)
		}
	}
}

func TestTimerNodeDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l, c := newFakeLoop(t)
	var w nodeWaiter
	w.node.Init(l, &w)
	// Grow the heap first: append's growth is the only allocation.
	var warm nodeWaiter
	warm.node.Init(l, &warm)
	warm.node.Start(1 << 40)
	allocs := testing.AllocsPerRun(1000, func() {
		w.node.Start(3)
		w.node.Stop()
		w.node.Start(0)
		c.t++
		if _, err := l.Tick(true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("TimerNode start/stop/fire allocated %.1f times per run", allocs)
	}
	if w.fired < 1000 {
		t.Fatalf("handler ran %d times, want >= 1000", w.fired)
	}
}

// TestCoalescedTimersShareOneWait checks on the real clock that deadlines
// within the coalescing window are fired by one blocking tick: the wait
// sleeps until the later one.
func TestCoalescedTimersShareOneWait(t *testing.T) {
	l := newLoop(t, Options{Coalesce: 50 * time.Microsecond})
	var a, b nodeWaiter
	a.node.Init(l, &a)
	b.node.Init(l, &b)
	l.UpdateTime()
	a.node.Start(time.Millisecond)
	b.node.Start(time.Millisecond + 20*time.Microsecond)
	if n := tick(t, l, false); n != 2 || a.fired != 1 || b.fired != 1 {
		t.Fatalf("one blocking tick fired %d (a %d, b %d), want both timers of the window", n, a.fired, b.fired)
	}
	if now := l.Now(); now < b.node.Deadline() {
		t.Fatalf("woke at %d, before the later deadline %d", now, b.node.Deadline())
	}
}

// TestLessBitMatchesLexicographicOrder checks the branch-free comparison
// against the plain (deadline, seq) order, on edge values (negative
// deadlines from an injected clock, the int64 extremes, equal deadlines,
// the uint64 extremes of seq) and on random pairs.
func TestLessBitMatchesLexicographicOrder(t *testing.T) {
	plain := func(a, b *timerEntry) bool {
		return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq)
	}
	deadlines := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -1, 0, 1, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	seqs := []uint64{0, 1, 2, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
	var es []timerEntry
	for _, d := range deadlines {
		for _, s := range seqs {
			es = append(es, timerEntry{deadline: d, seq: s})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		es = append(es, timerEntry{deadline: rng.Int64N(64) - 32, seq: rng.Uint64N(8)})
	}
	for i := range es {
		for j := range es {
			a, b := &es[i], &es[j]
			if got, want := lessBit(a, b) == 1, plain(a, b); got != want {
				t.Fatalf("lessBit(%+v, %+v) = %v, want %v", *a, *b, got, want)
			}
		}
	}
}

// TestTimerPathReadsTheClockOncePerPhase: starting, stopping and firing
// timers use the loop's cached time and never read the clock; a
// non-blocking Tick reads it twice, at its start and after its poll (as
// libuv updates its loop time at the top of an iteration and again after
// the poll), however many timers it fires or its callbacks start.
func TestTimerPathReadsTheClockOncePerPhase(t *testing.T) {
	c := &fakeClock{t: 1000}
	reads := 0
	l, err := NewWithOptions(Options{Clock: func() int64 { reads++; return c.now() }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 100
	ws := make([]churnWaiter, n)
	delays := []time.Duration{7, 3}
	k := 0
	reads = 0
	for i := range ws {
		ws[i].delays, ws[i].k = delays, &k
		ws[i].node.Init(l, &ws[i])
		ws[i].node.Start(time.Duration(i % 5))
	}
	ws[0].node.Stop()
	ws[0].node.StartAt(c.t + 2)
	if reads != 0 {
		t.Fatalf("%d timer starts and stops read the clock %d times, want 0 (the cached time)", n+2, reads)
	}
	c.t += 10
	fired := tick(t, l, true) // every waiter fires and starts itself again
	if fired != n {
		t.Fatalf("tick fired %d, want %d", fired, n)
	}
	if reads != 2 {
		t.Fatalf("a non-blocking tick that fired %d timers (each starting one) read the clock %d times, want 2", n, reads)
	}
}
