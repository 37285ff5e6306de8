package reactor

import (
	"math"
	"math/bits"
	"slices"
	"time"
	"unsafe"
)

// TimerHandler is told that a TimerNode's deadline has passed. A runtime
// implements it on the struct that embeds the node (its waker or task), so
// firing is one interface call on a pointer: nothing is allocated, per timer
// or per firing.
type TimerHandler interface {
	// OnTimer runs inside Tick, in a timer phase, with the node already idle:
	// it may Start the node again (the new deadline fires in a later phase,
	// never in the running one), Stop or Start any other node, and wake its
	// coroutine.
	OnTimer()
}

// TimerNode is an intrusive timer: a deadline and a heap position that live
// inside the caller's own struct, typically a coroutine's waker, so arming a
// timeout costs no separate object and no closure, and firing touches the
// waiter's memory only. It is the loop's one timer mechanism; Timer is a
// node plus a callback. See docs/design.md §4 (the reactor).
//
// The zero value is uninitialised: call Init once with the loop and the
// handler, then Start/StartAt and Stop as often as needed. A node must not be
// copied after Init: the loop's heap points at it while it is armed. That
// pointer also keeps a node in Go memory (and the struct around it) alive
// until it fires or stops. A node placed in memory the GC does not scan (a
// fiber stack) keeps nothing alive: its handler must then be reachable from
// ordinary Go memory as well.
//
// Deadlines are nanoseconds on the loop's clock (Loop.Now). Nodes with equal
// deadlines fire in the order they were started.
type TimerNode struct {
	deadline int64
	// index is the node's position in loop.timers while it waits there; -1
	// when idle; -2-i while it is entry i of the running timer phase's
	// batch (taken out of the heap, due, not fired yet: still active);
	// pendingBase+j while it is entry j of loop.pending (started by
	// StartFromNextReading, waiting for the loop's next clock reading);
	// a ring mark (farMark) while it waits in loop.far; a run mark
	// (timerRun.mark) while it waits in loop.run.
	index int
	loop  *Loop
	h     TimerHandler
}

// Init binds the node to a loop and the handler its firing calls. It may be
// called again on an idle node to rebind it (a pooled waker reused by another
// coroutine); on an armed node it panics.
func (n *TimerNode) Init(l *Loop, h TimerHandler) {
	if l == nil || h == nil {
		panic("reactor: TimerNode.Init needs a loop and a non-nil TimerHandler")
	}
	if n.loop != nil && n.index != -1 {
		panic("reactor: TimerNode.Init on an armed node: Stop it first")
	}
	n.loop, n.h, n.index = l, h, -1
}

// Start arms the node to fire d after Now(), the loop's cached time (see
// Loop.Now for when it is refreshed; this never reads the clock). A negative
// d counts as zero. Starting an armed node re-arms it behind the nodes
// already due at the new deadline.
func (n *TimerNode) Start(d time.Duration) {
	if n.loop == nil {
		panic("reactor: TimerNode.Start before Init")
	}
	if d < 0 {
		d = 0
	}
	n.StartAt(n.loop.now + int64(d))
}

// StartFresh reads the clock and arms the node to fire d after that
// reading: UpdateTime followed by Start, in one call. It is the base both
// runtimes give a relative sleep or timeout (one fresh reading per timed
// wait, taken at the call, so the wait never ends less than d after it;
// the cached time may be a whole tick old). Like UpdateTime it refreshes
// Now() for the caller and the loop. A negative d counts as zero.
//
// The idle node, every sleep's case, is armed here without the calls of
// Start: StartAt's steps for an idle node, written out (its twin).
func (n *TimerNode) StartFresh(d time.Duration) {
	l := n.loop
	if l == nil {
		panic("reactor: TimerNode.Start before Init")
	}
	// UpdateTime, its twin, written out: one call less on every sleep.
	old := l.now
	if l.injected == nil {
		l.now = nanotime()
	} else {
		l.now = l.injected()
	}
	if len(l.pending) > 0 {
		l.commitPending(l.now - old)
	}
	if n.index != -1 || l.closed {
		n.Start(d) // re-arm, or the closed-loop panic
		return
	}
	l.active++
	deadline := l.now + int64(max(d, 0))
	n.deadline = deadline
	l.seq++
	l.insertTimer(timerEntry{deadline: deadline, seq: l.seq, t: n})
}

// StartFromNextReading arms the node to fire d after the loop's next clock
// reading: the next UpdateTime, or the start of the next Tick, whichever
// comes first. A negative d counts as zero. The deadline's base is taken
// after this call, so the node never fires less than d after it, as with
// UpdateTime followed by Start, but the call reads no clock: a runtime
// whose coroutines sleep one after another shares one reading among the
// sleeps begun before it (each is late by the time until that reading).
// Until then the node is active, Stop and Start work on it as on any armed
// node, and Deadline reports Now()+d; at the reading the deadline moves up
// by the time the reading adds to Now(). Nodes armed this way count as
// started at that reading, in the order of their calls.
func (n *TimerNode) StartFromNextReading(d time.Duration) {
	l := n.start()
	n.deadline = l.now + int64(max(d, 0))
	n.index = pendingBase + len(l.pending)
	l.pending = append(l.pending, n)
}

// pendingCap is the room a new loop makes in its pending list, so that a
// runtime's sleeps allocate nothing once the loop exists: the stackless
// runtime arms at most 8 per reading (impl/stackless sleepsPerReading).
const pendingCap = 64

// pendingBase marks a node waiting in loop.pending (see TimerNode.index):
// far below any batch mark.
const pendingBase = math.MinInt64

// pendingLimit separates the pending marks (below it) from the batch marks.
const pendingLimit = math.MinInt64 / 2

// start is StartAt's and StartFromNextReading's first half: the checks,
// and taking the node out of wherever it is armed (it stays counted
// active) or counting it active.
func (n *TimerNode) start() *Loop {
	l := n.loop
	if l == nil {
		panic("reactor: TimerNode.Start before Init")
	}
	if l.closed {
		panic("reactor: TimerNode.Start after Loop.Close")
	}
	switch {
	case n.index >= 0:
		l.timers.remove(n.index)
	case n.index == -1:
		l.active++
	case n.index < pendingLimit:
		l.pending[n.index-pendingBase] = nil
	case n.index < farLimit:
		l.farRemove(n.index)
	case n.index < runLimit:
		l.run.remove(n.index)
	}
	// else the node is due in the running phase's batch: the index the
	// caller sets voids its batch entry.
	return l
}

// commitPending arms the nodes of l.pending, whose deadlines were taken
// from the cached time before the reading that just moved it by shift.
func (l *Loop) commitPending(shift int64) {
	for j, n := range l.pending {
		if n == nil {
			continue // stopped or re-armed since
		}
		l.pending[j] = nil
		n.deadline += shift
		l.seq++
		l.insertTimer(timerEntry{deadline: n.deadline, seq: l.seq, t: n})
	}
	l.pending = l.pending[:0]
}

// StartAt arms the node for an absolute deadline on the loop's clock. A
// deadline before Now() is treated as Now(): the node fires in the next
// timer phase, after the nodes that were already due.
func (n *TimerNode) StartAt(deadline int64) {
	l := n.start()
	if deadline < l.now {
		deadline = l.now
	}
	n.deadline = deadline
	l.seq++
	l.insertTimer(timerEntry{deadline: deadline, seq: l.seq, t: n})
}

// Stop disarms the node; it is a no-op on an idle or uninitialised node.
// Safe inside any OnTimer, including that of another node due at the same
// time: a stopped node never fires.
func (n *TimerNode) Stop() {
	if n.loop == nil {
		return
	}
	switch {
	case n.index >= 0:
		n.loop.timers.remove(n.index)
		n.loop.active--
	case n.index == -1:
	case n.index < pendingLimit:
		n.loop.pending[n.index-pendingBase] = nil
		n.index = -1
		n.loop.active--
	case n.index < farLimit:
		n.loop.farRemove(n.index)
		n.index = -1
		n.loop.active--
	case n.index < runLimit:
		n.loop.run.remove(n.index)
		n.loop.active--
	default: // due in the running phase's batch: voids its entry
		n.index = -1
		n.loop.active--
	}
}

// Active reports whether the node is armed and has not fired since.
func (n *TimerNode) Active() bool { return n.index != -1 && n.loop != nil }

// Deadline returns the deadline of the last Start.
func (n *TimerNode) Deadline() int64 { return n.deadline }

// Loop returns the loop of the last Init, nil before it.
func (n *TimerNode) Loop() *Loop { return n.loop }

// Timer fires its callback once when the monotonic clock reaches its
// deadline: a TimerNode whose handler runs a callback stored at creation.
// Deadlines are nanoseconds on the loop's clock (see Loop.Now). Timers with
// equal deadlines fire in the order they were started.
type Timer struct {
	event // state (only stateClosed is used: activity is the node's) and cb
	node  TimerNode
}

// timerFire is Timer's TimerHandler. A separate named type keeps OnTimer out
// of Timer's method set, so the public API stays Start/Stop/Close.
type timerFire Timer

// OnTimer runs the Timer's callback; the node has already counted the
// firing in Stats.Fired and Active.
func (f *timerFire) OnTimer() { f.cb() }

// NewTimer creates an idle timer that will run cb when it fires.
func (l *Loop) NewTimer(cb func()) *Timer {
	t := &Timer{event: newEvent(l, cb, "Timer")}
	t.node.Init(l, (*timerFire)(t))
	return t
}

// Start arms the timer to fire d after Now() (the cached loop time; call
// UpdateTime first for a fresh base). A negative d counts as zero. Starting
// an active timer re-arms it: it moves behind timers already due at the new
// deadline.
func (t *Timer) Start(d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.StartAt(t.loop.now + int64(d))
}

// StartAt arms the timer for an absolute deadline on the loop's clock. A
// deadline before Now() is treated as Now(): the timer fires in the next timer
// phase, after the timers that were already due.
func (t *Timer) StartAt(deadline int64) {
	switch {
	case t.state == stateClosed:
		panic("reactor: Timer.Start after Close: create a new event instead")
	case t.loop.closed:
		panic("reactor: Timer.Start after Loop.Close")
	}
	t.node.StartAt(deadline)
}

// Stop disarms the timer; it is a no-op on an idle timer. Safe inside any
// callback, including the callback of another timer due at the same time.
func (t *Timer) Stop() { t.node.Stop() }

// Close stops the timer and releases it; it must not be started again.
func (t *Timer) Close() {
	t.node.Stop()
	t.state = stateClosed
}

// Active reports whether the timer is started and has not fired since.
func (t *Timer) Active() bool { return t.node.Active() }

// Deadline returns the deadline of the last Start.
func (t *Timer) Deadline() int64 { return t.node.deadline }

// runTimers fires the nodes due at the cached time, in (deadline, seq)
// order, and returns how many fired. Only nodes started before the phase
// began may fire: a handler that starts a node with a zero delay gets it in
// the next phase, not in an endless loop here.
//
// Every due node fires in this one loop: no syscall and no clock read
// between firings, however many are due. The due nodes leave the heap
// together before the first fires (timerHeap.takeDue): they form a subtree
// at the root, and refilling those holes costs each hole only the levels
// below it, where popping them one by one would cost each the heap's whole
// depth (a pop moves the last entry, one of the latest deadlines, to the
// root, and it sinks back to the bottom). Taken before any handler runs,
// the batch holds only nodes started before the phase, which is the rule
// above. A handler may still stop or re-arm a node of the batch that has
// not fired yet: either changes its index from the batch's mark (-2-i), and
// an entry whose node no longer carries its mark is skipped.
func (l *Loop) runTimers() int {
	if l.far.n > 0 {
		l.farSync(l.now)
	}
	h, r := &l.timers, &l.run
	runDue := r.h < len(r.a) && r.a[r.h].deadline <= l.now
	if !runDue && (len(h.a) == 0 || h.a[0].deadline > l.now) {
		return 0
	}
	// The batch is the heap's only: with the run's head due as well, the
	// phase pops, merging the two (popTimers).
	if runDue || len(h.a) < batchHeapMin || h.findDue(l.now, &l.due) < batchMin {
		return l.popTimers()
	}
	// The buffer is held by this call only: a Tick from inside a handler
	// (not a documented use, but not forbidden) takes a fresh one, and every
	// node of its batch has fired or been voided before it returns, so no
	// mark of its batch is left for this loop to misread.
	b := h.takeDue(l.now, l.batch[:0], &l.due)
	l.batch = nil
	fired := 0
	for i := range b {
		n := b[i].t
		if n.index != -2-i {
			continue // stopped or re-armed by an earlier handler
		}
		n.index = -1
		l.active--
		fired++
		l.stats.Fired++
		n.h.OnTimer()
		if l.closed { // by this handler: nothing more fires
			for j := i + 1; j < len(b); j++ {
				if n := b[j].t; n.index == -2-j {
					n.index = -1
				}
			}
			break
		}
	}
	clear(b) // drop the node pointers for the GC
	if cap(b) <= batchKeep {
		l.batch = b[:0]
	}
	return fired
}

// popTimers is runTimers for a phase with few due nodes in the heap, or
// any due in the run: each is popped and fired in turn, the earlier of the
// heap's minimum and the run's head (a merge of two sorted sequences, so
// (deadline, seq) order holds across them), stopping at the first that is
// not due or was started in this phase (started after limit). Such a
// node's deadline is >= now and its seq is above the limit, while every
// older due node sorts before it (earlier deadline, or equal deadline and
// smaller seq), so stopping at the first new one skips no old one.
func (l *Loop) popTimers() int {
	limit := l.seq
	fired := 0
	h, r := &l.timers, &l.run
	for {
		// nearest, written out: which of the two the entry came from
		// decides how it leaves.
		var top *timerEntry
		if len(h.a) > 0 {
			top = &h.a[0]
		}
		fromRun := r.h < len(r.a) && (top == nil || lessBit(&r.a[r.h], top) != 0)
		if fromRun {
			top = &r.a[r.h]
		}
		if top == nil || top.deadline > l.now || top.seq > limit {
			break
		}
		n := top.t
		if fromRun {
			// The run is sorted, so the nodes that fire next are known:
			// start the misses on the record of the one
			// timerPrefetchAhead entries on, which would otherwise wait
			// one by one for each OnTimer (a stopped entry's t is nil).
			if j := r.h + timerPrefetchAhead; j < len(r.a) {
				if m := r.a[j].t; m != nil {
					prefetchTimerNode(uintptr(unsafe.Pointer(m)))
				}
			}
			r.pop()
		} else {
			h.pop()
		}
		l.active--
		fired++
		l.stats.Fired++
		n.h.OnTimer()
	}
	return fired
}

// timerPrefetchAhead is how far ahead in the sorted run popTimers
// prefetches a node's record (prefetchTimerNode). Timer n=10000 stackless
// (benchrun cell, pinned, alternated, 6 rounds, four lines fetched): 4, 8
// and 16 read alike (212.8, 213.0 and 213.7 cpu-ns/wake medians); 8 is
// kept. The heap's
// batch (runTimers' takeDue path) has no such prefetch: the same hint
// there did not move BenchmarkTimerWakeRandom (stackless, n=1000 and
// 10000, whose timers fire from that path).
const timerPrefetchAhead = 8

// batchMin is the fewest due nodes runTimers takes out as one batch; fewer
// are popped one by one. The batch saves sift-down levels and pays for
// finding and sorting the due entries, so it wins where the heap is deep
// and many fire per phase. BenchmarkTimerChurnPhase at 10000 timers, the
// batch against pops (4 rounds alternated, cpu-ns/fire): about 8 due per
// phase +24%, 20 even, 40 -13%, 100 -22%, 200 -33%. They are variables only
// so that tests can force either path.
var batchMin = 32

// batchHeapMin is the smallest heap runTimers looks for a batch in: a
// smaller one sits in L1 or close, where a pop's levels are cheap and
// finding the batch is not (BenchmarkTimerChurn timers=1000: about 40 due
// per phase, the batch +15%).
var batchHeapMin = 4096

// batchKeep bounds the batch buffer a loop keeps between phases, in
// entries (24 B each): a burst of more due timers allocates its own.
const batchKeep = 1 << 14

// timerEntry is one heap slot. The key (deadline, seq) lives in the slot, so
// sifting compares without touching the node.
type timerEntry struct {
	deadline int64
	seq      uint64
	t        *TimerNode
}

func (a *timerEntry) less(b *timerEntry) bool {
	return lessBit(a, b) != 0
}

// lessBit is less as 0 or 1, computed without a branch: (deadline, seq) is
// compared as one 128-bit unsigned number (the deadline's sign bit flipped,
// so that int64 order is uint64 order) by a subtraction whose final borrow
// is the answer. down picks the least of four children with it: the
// children's deadlines are random, so a branch per comparison mispredicts
// about every other time (pprof of the Timer scenario at n=10000: the
// comparisons and the taken "m = j" held about 70% of down's samples).
func lessBit(a, b *timerEntry) uint64 {
	const sign = 1 << 63
	_, borrow := bits.Sub64(a.seq, b.seq, 0)
	_, borrow = bits.Sub64(uint64(a.deadline)^sign, uint64(b.deadline)^sign, borrow)
	return borrow
}

// timerHeap is a 4-ary min-heap: half the depth of a binary heap, and the
// four children of a node share two or three cache lines. Every node in it
// knows its index, so removal of any node is O(log n). A phase with many
// due nodes takes them out together (takeDue). BenchmarkTimerWheel and
// BenchmarkTimerWheelChurn measure it against a timing wheel (the wheel won
// at 10000 random sleeps and lost at 100000), and BenchmarkTimerRadixChurn
// against a radix heap (the same pattern: -19% at 10000, +13% at 100000,
// both against the heap before takeDue); an 8-ary heap lost to it in
// BenchmarkTimerChurn, with the tournament too.
type timerHeap struct{ a []timerEntry }

func (h *timerHeap) len() int { return len(h.a) }
func (h *timerHeap) set(i int, e timerEntry) {
	h.a[i] = e
	e.t.index = i
}

func (h *timerHeap) push(e timerEntry) {
	h.a = append(h.a, e)
	h.up(len(h.a)-1, e)
}

// pop removes the minimum: remove(0) without the sift-up test, since the
// last entry moved into the root can only go down.
func (h *timerHeap) pop() {
	h.a[0].t.index = -1
	last := len(h.a) - 1
	e := h.a[last]
	h.a[last] = timerEntry{} // drop the pointer for the GC
	h.a = h.a[:last]
	if last > 0 {
		h.down(0, e)
	}
}

// remove deletes slot i, moving the last entry into the hole.
func (h *timerHeap) remove(i int) {
	h.a[i].t.index = -1
	last := len(h.a) - 1
	e := h.a[last]
	h.a[last] = timerEntry{} // drop the pointer for the GC
	h.a = h.a[:last]
	if i == last {
		return
	}
	if i > 0 && e.less(&h.a[(i-1)/4]) {
		h.up(i, e)
	} else {
		h.down(i, e)
	}
}

// up places e at slot i or above.
func (h *timerHeap) up(i int, e timerEntry) {
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h.a[p]) {
			break
		}
		h.set(i, h.a[p])
		i = p
	}
	h.set(i, e)
}

// branchlessLimit bounds the part of the heap down sifts through without
// branches: children at slots below it (the top 16384 entries, 384 KiB,
// which stay in a core's L2 cache) are chosen by the branch-free
// tournament, deeper ones by the branchy scan. Where the children miss the
// cache, the branchy scan is the faster of the two: a predicted branch lets
// the CPU start loading the next level before the comparisons are done,
// while the tournament's next address waits for them. BenchmarkTimerChurn,
// 8 rounds alternated: timers=1000 -32%, 10000 -23%, 100000 unchanged
// (the tournament at every level was up to +40% there).
const branchlessLimit = 16384

// down places e at slot i or below. A node with four children at slots
// below branchlessLimit picks the least of them by a branch-free
// tournament (lessBit): two pairs, then their winners. The order is total
// (seqs are unique), so the tournament finds the same child as the
// sequential scan the other nodes use.
func (h *timerHeap) down(i int, e timerEntry) {
	a := h.a
	n := len(a)
	for {
		c := 4*i + 1
		var m int
		switch {
		case c+3 < n && c < branchlessLimit:
			m01 := c + int(lessBit(&a[c+1], &a[c]))
			m23 := c + 2 + int(lessBit(&a[c+3], &a[c+2]))
			// m = m23 if a[m23] < a[m01], else m01, as arithmetic.
			d := m23 - m01
			m = m01 + d*int(lessBit(&a[m23], &a[m01]))
		case c < n:
			m = c
			end := min(c+4, n)
			for j := c + 1; j < end; j++ {
				if a[j].less(&a[m]) {
					m = j
				}
			}
		default:
			h.set(i, e)
			return
		}
		if lessBit(&a[m], &e) == 0 {
			break
		}
		h.set(i, a[m])
		i = m
	}
	h.set(i, e)
}

// takeDue removes every entry whose deadline is <= now, whose slots findDue
// has listed in sc.slots, appends them to b in (deadline, seq) order, marks
// entry i's node with index -2-i, and returns b.
//
// Their slots below the
// new length are holes; the entries that are not due in the slots past it
// (as many as there are holes) move into them, and the holes are then sifted
// down deepest first, as Floyd's heap construction does: every ancestor of a
// hole is a hole, so when a hole is sifted its children's subtrees are
// heaps already.
func (h *timerHeap) takeDue(now int64, b []timerEntry, sc *dueScratch) []timerEntry {
	a := h.a
	n := len(a)
	q := sc.slots
	b = sortDue(a, q, b, sc)
	for i := range b {
		b[i].t.index = -2 - i
	}
	// Fill the holes below the new length with the tail's entries that are
	// not due, in any order: the sift-downs below put them in place.
	m := n - len(b)
	tail := m
	for _, p := range q {
		if int(p) >= m {
			break // ascending: the rest are past the new length too
		}
		for a[tail].deadline <= now {
			tail++
		}
		a[p] = a[tail]
		tail++
	}
	clear(a[m:]) // drop the pointers for the GC
	a = a[:m]
	h.a = a
	for k := len(q) - 1; k >= 0; k-- {
		if p := int(q[k]); p < m {
			h.down(p, a[p])
		}
	}
	return b
}

// findDue lists the slots of the entries whose deadline is <= now in
// sc.slots, ascending, and returns how many there are (at least one: the
// caller has checked the root). The due entries form a subtree at the root
// (no child is earlier than its parent), so a breadth-first walk that stops
// at each branch's first later entry finds them, visiting at most four
// times as many others; in a 4-ary heap breadth-first order is ascending
// slot order.
func (h *timerHeap) findDue(now int64, sc *dueScratch) int {
	a := h.a
	n := len(a)
	q := append(sc.slots[:0], 0)
	for k := 0; k < len(q); k++ {
		i := int(q[k])
		for c, end := 4*i+1, min(4*i+5, n); c < end; c++ {
			if a[c].deadline <= now {
				q = append(q, int32(c))
			}
		}
	}
	sc.slots = q
	return len(q)
}

// dueScratch is takeDue's scratch space, kept by the loop between phases.
type dueScratch struct {
	slots []int32  // the due entries' heap slots, ascending
	keys  []uint64 // sortDue's keys
	tmp   []uint64 // radixSort's second buffer
	count []int32  // groupSort's group counts (timerrun.go)
}

// radixSort sorts keys by their bits above slotBits, of which the lowest
// width can be set, with a stable least-significant-digit radix sort, and
// returns the scratch buffer (tmp, grown if needed). No comparison
// branches: pdqsort mispredicts about half of its comparisons on these
// random deadlines, which cost a due timer ~35 ns in BenchmarkTimerChurn
// at 10000 timers. Keys with equal digits keep their order (the caller
// orders equal deadlines afterwards).
//
// The digit width is chosen per call (radixDigit): a pass costs its
// buckets twice (clearing, prefix sums) and its keys twice (counting,
// scattering), so a small batch (the Timer scenario below its knee fires
// about 64 per phase) sorts faster with more passes over fewer buckets
// than with two or three passes over 256.
func radixSort(keys, tmp []uint64, width int) []uint64 {
	if cap(tmp) < len(keys) {
		tmp = make([]uint64, len(keys), cap(keys))
	}
	tmp = tmp[:len(keys)]
	src, dst := keys, tmp
	digit := radixDigit(width, len(keys))
	mask := uint64(1)<<digit - 1
	var count [1<<radixMaxDigit + 1]int32
	for shift := slotBits; shift < slotBits+width; shift += digit {
		c := count[:mask+2]
		clear(c)
		for _, k := range src {
			c[(k>>shift)&mask+1]++
		}
		for i := 1; i < len(c); i++ {
			c[i] += c[i-1]
		}
		for _, k := range src {
			d := (k >> shift) & mask
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	return tmp
}

// radixMaxDigit is the widest digit radixSort uses: 256 buckets.
const radixMaxDigit = 8

// radixDigit returns the digit width in bits (1 to radixMaxDigit) that
// sorts n keys of width bits in the fewest steps by radixSort's cost
// model: passes × (2 × buckets + 2 × n).
func radixDigit(width, n int) int {
	best, bestCost := radixMaxDigit, math.MaxInt
	for d := 1; d <= radixMaxDigit; d++ {
		passes := (width + d - 1) / d
		if cost := passes * (2<<d + 2*n); cost < bestCost {
			best, bestCost = d, cost
		}
	}
	return best
}

// Sort keys pack a due entry's deadline, as an offset from the earliest
// one, above its heap slot, so that plain integers sort by deadline with no
// comparison function.
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
)

// sortDue appends the entries at the slots q of a to b in (deadline, seq)
// order. The common case sorts packed integer keys (deadline offset, slot)
// and then puts runs of equal deadlines in seq order, which the keys do not
// know; a batch whose deadlines span more than the keys hold, or a heap past
// the slot bits, sorts the entries themselves.
func sortDue(a []timerEntry, q []int32, b []timerEntry, sc *dueScratch) []timerEntry {
	lo, hi := a[q[0]].deadline, a[q[0]].deadline
	for _, p := range q {
		lo, hi = min(lo, a[p].deadline), max(hi, a[p].deadline)
	}
	base := len(b)
	if len(a) > slotMask || uint64(hi-lo) >= 1<<(64-slotBits) {
		for _, p := range q {
			b = append(b, a[p])
		}
		slices.SortFunc(b[base:], func(x, y timerEntry) int {
			return int(lessBit(&y, &x)) - int(lessBit(&x, &y))
		})
		return b
	}
	keys := sc.keys[:0]
	for _, p := range q {
		keys = append(keys, uint64(a[p].deadline-lo)<<slotBits|uint64(p))
	}
	sc.keys = keys
	sc.tmp = radixSort(keys, sc.tmp, bits.Len64(uint64(hi-lo)))
	for _, k := range keys {
		b = append(b, a[k&slotMask])
	}
	// Equal deadlines: insertion sort by seq within each run (rare, short).
	for i := base + 1; i < len(b); i++ {
		for j := i; j > base && b[j].deadline == b[j-1].deadline && b[j].seq < b[j-1].seq; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
	return b
}
