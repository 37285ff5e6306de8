package reactor

// timerRun holds the buckets the ring has moved out (farMove), sorted by
// (deadline, seq): firing takes its head, or the heap's minimum when that
// is earlier (popTimers merges the two), so the ring's timers never sift
// through the heap. A bucket is radix-sorted once when it moves (sortDue),
// about 500 entries in the Timer scenario at n=10000, which costs less
// than pushing them into the heap and popping each through the heap's
// levels (the pop's sift-down was ~25-30 ns of a wake there).
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
	q := l.due.slots[:0]
	for i := range b {
		q = append(q, int32(i))
	}
	l.due.slots = q
	base := len(r.a)
	r.a = sortDue(b, q, r.a, &l.due)
	for i := base; i < len(r.a); i++ {
		r.a[i].t.index = r.mark(i)
	}
}

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
