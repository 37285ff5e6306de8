package reactor

import (
	"math/bits"
	"slices"
)

// timerRun holds the buckets the ring has moved out (farMove), sorted by
// (deadline, seq): firing takes its head, or the heap's minimum when that
// is earlier (popTimers merges the two), so the ring's timers never sift
// through the heap. A bucket is sorted once when it moves (groupSort, or
// sortDue's radix sort when its deadlines crowd), about 500 entries in
// the Timer scenario at n=10000, which costs less than pushing them into
// the heap and popping each through the heap's levels (the pop's
// sift-down was ~25-30 ns of a wake there).
//
// Invariants:
//   - a[:h] are fired or stopped entries, with t == nil; a[h:] is sorted by
//     (deadline, seq), stopped entries (t == nil, the key kept) included.
//   - a[h], when h < len(a), is live (t != nil): the head is the run's
//     earliest timer. An empty run has h == len(a) == 0.
//   - a live entry at position i has t.index == mark(i), runBase + off + i:
//     marks are virtual positions, so that dropping a[:h] (runAppend) moves
//     entries without touching their nodes.
//   - runAppend only appends entries later than a's last deadline, so the
//     run stays sorted; a stopped entry keeps its key for that test.
type timerRun struct {
	a   []timerEntry
	h   int // the head: the first live entry
	off int // the virtual position of a[0]
}

const (
	// runBase marks a node in the run: runBase + virtual position, between
	// the ring marks (below farLimit) and the batch marks (runLimit and up).
	runBase  = farLimit
	runLimit = runBase / 2
)

// mark is the index of a node at run position i (a's slot i - off).
func (r *timerRun) mark(i int) int { return runBase + r.off + i }

// runAppend appends bucket b, sorted, to the run and marks its nodes. The
// caller guarantees that every entry of b is later than the run's last.
func (l *Loop) runAppend(b []timerEntry) {
	r := &l.run
	if r.h > 0 {
		// Drop the fired entries; the live ones keep their virtual marks.
		live := copy(r.a, r.a[r.h:])
		clear(r.a[live:]) // no pointers in a[:h], but the moved tail's old slots
		r.a = r.a[:live]
		r.off += r.h
		r.h = 0
	}
	if len(r.a) == 0 {
		r.off = 0 // no node carries a run mark
	}
	base := len(r.a)
	if len(b) == 0 {
		return
	}
	var ok bool
	if r.a, ok = groupSort(b, r.a, &l.due); !ok {
		// A crowded group (many deadlines within a group's width, or
		// deadlines too far apart for the groups): sortDue's radix sort.
		q := l.due.slots[:0]
		for i := range b {
			q = append(q, int32(i))
		}
		l.due.slots = q
		r.a = sortDue(b, q, r.a, &l.due)
	}
	a, mark := r.a, r.mark(0)
	for i := base; i < len(a); i++ {
		a[i].t.index = mark + i
	}
}

// groupSort appends b's entries to a in (deadline, seq) order and returns
// a and true, or leaves a as it was and returns false when some group
// would hold more than groupMax entries (or the deadlines span more than
// 63 bits). It spreads the entries over about len(b) groups of equal width
// across their deadlines' span by one counting pass and one scatter, then
// an insertion sort puts each group in order: with about one entry per
// group that sort mostly compares an entry with the one before it and
// moves on, where a full radix sort of the bucket's 17-bit offsets makes
// three passes of counting and scattering (sortDue). An entry is out of
// order only against entries of its own group, so the group bound caps
// the insertion sort's work at fewer than groupMax moves per entry,
// whatever the deadlines.
func groupSort(b, a []timerEntry, sc *dueScratch) ([]timerEntry, bool) {
	lo, hi := b[0].deadline, b[0].deadline
	for i := range b {
		lo, hi = min(lo, b[i].deadline), max(hi, b[i].deadline)
	}
	if hi-lo < 0 {
		return a, false // the span overflows
	}
	digit := min(bits.Len(uint(len(b))), groupMaxDigit)
	shift := max(bits.Len64(uint64(hi-lo))-digit, 0)
	if cap(sc.count) < 1<<digit {
		sc.count = make([]int32, 1<<groupMaxDigit)
	}
	count := sc.count[:1<<digit]
	clear(count)
	for i := range b {
		count[uint64(b[i].deadline-lo)>>shift]++
	}
	// Each group's count becomes its first position.
	sum := int32(0)
	crowded := false
	for g, c := range count {
		count[g] = sum
		sum += c
		crowded = crowded || c > groupMax
	}
	if crowded {
		return a, false
	}
	base := len(a)
	a = slices.Grow(a, len(b))[:base+len(b)]
	out := a[base:]
	for i := range b {
		g := uint64(b[i].deadline-lo) >> shift
		out[count[g]] = b[i]
		count[g]++
	}
	for i := 1; i < len(out); i++ {
		if lessBit(&out[i], &out[i-1]) == 0 {
			continue
		}
		e, j := out[i], i
		for ; j > 0 && lessBit(&e, &out[j-1]) != 0; j-- {
			out[j] = out[j-1]
		}
		out[j] = e
	}
	return a, true
}

// groupMax is the most entries groupSort lets a group hold: an insertion
// sort of g entries moves at most g(g-1)/2 of them.
const groupMax = 32

// groupMaxDigit bounds groupSort's groups at 1<<groupMaxDigit.
const groupMaxDigit = 12

// pop removes the run's head, which the caller has checked is there, and
// leaves the node idle.
func (r *timerRun) pop() {
	e := &r.a[r.h]
	e.t.index = -1
	e.t = nil // drop the pointer for the GC
	r.h++
	r.skip()
}

// skip moves the head past stopped entries, and empties the run when none
// is left.
func (r *timerRun) skip() {
	for r.h < len(r.a) && r.a[r.h].t == nil {
		r.h++
	}
	if r.h == len(r.a) {
		r.a, r.h = r.a[:0], 0
	}
}

// remove takes the node with run mark idx out of the run: its entry stays
// as a stopped one (the key kept, see timerRun), and the head moves past it.
func (r *timerRun) remove(idx int) {
	i := idx - runBase - r.off
	r.a[i].t.index = -1
	r.a[i].t = nil
	if i == r.h {
		r.skip()
	}
}

// close leaves every node of the run idle (Loop.Close).
func (r *timerRun) close() {
	for i := r.h; i < len(r.a); i++ {
		if n := r.a[i].t; n != nil {
			n.index = -1
		}
	}
	*r = timerRun{}
}

// nearest returns the earliest armed entry of the heap and the run, nil if
// both are empty (the ring may hold more: see farEnsureMin).
func (l *Loop) nearest() *timerEntry {
	var e *timerEntry
	if len(l.timers.a) > 0 {
		e = &l.timers.a[0]
	}
	if r := &l.run; r.h < len(r.a) && (e == nil || lessBit(&r.a[r.h], e) != 0) {
		e = &r.a[r.h]
	}
	return e
}
