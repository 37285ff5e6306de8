package stackful

// coQueue is the run queue: a ring buffer of coroutines, FIFO with insertion
// at the head for High priority. It is internal/ring's Queue specialised to
// *coroutine on purpose: the generic Queue's methods compile to a GC-shape
// body with a dictionary argument that exceeds the inliner's budget, so
// every wake-up paid a call for its push (pprof of BenchmarkPingPong: the
// shape PushBack 8% flat). tryPushBack/tryPushFront and PopFront inline;
// growth is out of line.
// Its ring is the twin of internal/ring.Queue and of impl/stackless's
// taskQueue (same algorithm, same invariants); the slot in front of it
// (first) is this queue's own.
//
// first is a slot in front of the ring: a coroutine pushed while the queue
// is empty goes there, not into the ring. Invariant: first, if not nil,
// is the queue's head and the ring holds the rest, in order; if nil, the
// ring holds the whole queue. A hand-off (one coroutine wakes another and
// waits, as in every ping-pong and a child finishing into its awaiting
// parent) queues at most one coroutine at a time, so its push is a store
// to first and its pop a load and a store of nil: none of the ring's
// index arithmetic, bounds check and count (benchrun pingpong
// stackful-asm: the commit that added it gives the figures). The pops
// that are spelled out (Await, Yield, contextMain: their picks) test
// first before the ring; fiber.PrefetchRing's pipeline covers the ring
// only, and a coroutine in first is the one about to run.
type coQueue struct {
	first *coroutine   // the head, when set (see above)
	buf   []*coroutine // len(buf) is zero or a power of two
	head  int          // ring index of the first element in the ring
	n     int          // number of elements in the ring (not counting first)
}

// Len returns the number of queued coroutines.
func (q *coQueue) Len() int {
	if q.first != nil {
		return q.n + 1
	}
	return q.n
}

// PushBack appends co at the tail.
func (q *coQueue) PushBack(co *coroutine) {
	if !q.tryPushBack(co) {
		q.pushBackGrow(co)
	}
}

// PushFront inserts co at the head, so the next PopFront returns it.
func (q *coQueue) PushFront(co *coroutine) {
	if !q.tryPushFront(co) {
		q.pushFrontGrow(co)
	}
}

// tryPushBack appends co at the tail unless the buffer is full. It makes no
// call, so it inlines even into a caller near the budget: the hot paths
// (enqueue, Yield) write `if !q.tryPushBack(co) { q.pushBackGrow(co) }`,
// which is PushBack without the call (PushBack itself, with its call, is
// over the inliner's budget).
func (q *coQueue) tryPushBack(co *coroutine) bool {
	if q.first == nil && q.n == 0 { // an empty queue: the slot (see coQueue)
		q.first = co
		return true
	}
	return q.tryPushBackRing(co)
}

// tryPushBackRing is tryPushBack into the ring, never into the slot: the
// invariant holds either way (an empty queue's slot is nil). Yield pushes
// with it: a round robin of yields keeps the others queued, so the slot
// would seldom take its push and the test for it would cost every yield
// (benchrun yield stackful-asm n=2 read 5.5% slower with it).
func (q *coQueue) tryPushBackRing(co *coroutine) bool {
	b := q.buf
	if q.n == len(b) {
		return false
	}
	b[(q.head+q.n)&(len(b)-1)] = co
	q.n++
	return true
}

// tryPushFront is PushFront unless the buffer is full (see tryPushBack).
// co takes the slot; the coroutine there moves to the ring's head.
func (q *coQueue) tryPushFront(co *coroutine) bool {
	if f := q.first; f != nil {
		b := q.buf
		if q.n == len(b) {
			return false
		}
		q.head = (q.head - 1) & (len(b) - 1)
		b[q.head] = f
		q.n++
	}
	q.first = co
	return true
}

// PopFront removes and returns the head, or nil if the queue is empty.
func (q *coQueue) PopFront() *coroutine {
	if co := q.first; co != nil {
		q.first = nil
		return co
	}
	if q.n == 0 {
		return nil
	}
	b := q.buf
	i := q.head & (len(b) - 1)
	co := b[i]
	b[i] = nil // drop the reference for the collector
	q.head = (i + 1) & (len(b) - 1)
	q.n--
	return co
}

// pushBackGrow is PushBack on a full queue (noinline: inlined, it would push
// PushBack over the inliner's budget).
//
//go:noinline
func (q *coQueue) pushBackGrow(co *coroutine) {
	q.grow()
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = co
	q.n++
}

// pushFrontGrow is PushFront on a full queue (noinline, as pushBackGrow).
//
// tryPushFront failed, so first is set and the ring is full: first moves
// to the ring's head and co takes the slot.
//
//go:noinline
func (q *coQueue) pushFrontGrow(co *coroutine) {
	q.grow()
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = q.first
	q.n++
	q.first = co
}

// grow doubles the buffer (at least 16 slots), unrolling the ring to index 0.
func (q *coQueue) grow() {
	nb := make([]*coroutine, max(16, 2*len(q.buf)))
	if q.n > 0 {
		k := copy(nb, q.buf[q.head:])
		copy(nb[k:], q.buf[:q.head])
	}
	q.buf = nb
	q.head = 0
}
