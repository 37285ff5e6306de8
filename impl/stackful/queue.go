package stackful

// coQueue is the run queue: a ring buffer of coroutines, FIFO with insertion
// at the head for High priority. It is internal/ring's Queue specialised to
// *coroutine on purpose: the generic Queue's methods compile to a GC-shape
// body with a dictionary argument that exceeds the inliner's budget, so
// every wake-up paid a call for its push (pprof of BenchmarkPingPong: the
// shape PushBack 8% flat). tryPushBack/tryPushFront and PopFront inline;
// growth is out of line.
// Twin of internal/ring.Queue and of impl/stackless's taskQueue (same
// algorithm, same invariants).
type coQueue struct {
	buf  []*coroutine // len(buf) is zero or a power of two
	head int          // index of the first element
	n    int          // number of elements
}

// Len returns the number of queued coroutines.
func (q *coQueue) Len() int { return q.n }

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
	b := q.buf
	if q.n == len(b) {
		return false
	}
	b[(q.head+q.n)&(len(b)-1)] = co
	q.n++
	return true
}

// tryPushFront is PushFront unless the buffer is full (see tryPushBack).
func (q *coQueue) tryPushFront(co *coroutine) bool {
	b := q.buf
	if q.n == len(b) {
		return false
	}
	q.head = (q.head - 1) & (len(b) - 1)
	b[q.head] = co
	q.n++
	return true
}

// PopFront removes and returns the head, or nil if the queue is empty.
func (q *coQueue) PopFront() *coroutine {
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
//go:noinline
func (q *coQueue) pushFrontGrow(co *coroutine) {
	q.grow()
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = co
	q.n++
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
