package stackless

// taskQueue is the run queue: a ring buffer of tasks, FIFO with insertion
// at the head for High priority. It is internal/ring's Queue specialised to
// *Coro on purpose: the generic Queue's methods compile to a GC-shape body
// with a dictionary argument that exceeds the inliner's budget, so every
// wake-up paid a call for its push (pprof of benchrun's PingPong stackless:
// the shape PushBack 15.6% flat). tryPushBack/tryPushFront and PopFront
// inline; growth is out of line.
//
// Twin of impl/stackful's coQueue and of internal/ring.Queue (same ring,
// same invariants) but for its indices: head and tail run free (uint,
// wrapping) instead of head and a count. A hand-off pops at the head and
// pushes at the tail, so each touches only its own index: with a count,
// both read and wrote it, and the push waited on the pop's store (pprof
// of PingPong: tryPushBack 20% flat, PopFront 4%).
type taskQueue struct {
	buf  []*Coro // len(buf) is zero or a power of two
	head uint    // index of the first element (mod len(buf))
	tail uint    // index one past the last element (mod len(buf)); tail-head elements are queued
}

// Len returns the number of queued tasks.
func (q *taskQueue) Len() int { return int(q.tail - q.head) }

// PushBack appends co at the tail.
func (q *taskQueue) PushBack(co *Coro) {
	if !q.tryPushBack(co) {
		q.pushBackGrow(co)
	}
}

// PushFront inserts co at the head, so the next PopFront returns it.
func (q *taskQueue) PushFront(co *Coro) {
	if !q.tryPushFront(co) {
		q.pushFrontGrow(co)
	}
}

// tryPushBack appends co at the tail unless the buffer is full. It makes no
// call, so it inlines even into a caller near the budget: the hot paths
// (enqueue, a yield) write `if !q.tryPushBack(co) { q.pushBackGrow(co) }`,
// which is PushBack without the call.
func (q *taskQueue) tryPushBack(co *Coro) bool {
	b := q.buf
	if q.tail-q.head == uint(len(b)) {
		return false
	}
	b[q.tail&uint(len(b)-1)] = co
	q.tail++
	return true
}

// tryPushFront is PushFront unless the buffer is full (see tryPushBack).
func (q *taskQueue) tryPushFront(co *Coro) bool {
	b := q.buf
	if q.tail-q.head == uint(len(b)) {
		return false
	}
	q.head--
	b[q.head&uint(len(b)-1)] = co
	return true
}

// Front returns the head without removing it, or nil if the queue is
// empty (Scheduler.addTimer prefetches it).
func (q *taskQueue) Front() *Coro {
	if q.head == q.tail {
		return nil
	}
	return q.buf[q.head&uint(len(q.buf)-1)]
}

// PopFront removes and returns the head, or nil if the queue is empty.
func (q *taskQueue) PopFront() *Coro {
	if q.head == q.tail {
		return nil
	}
	b := q.buf
	i := q.head & uint(len(b)-1)
	co := b[i]
	b[i] = nil // drop the reference for the collector
	q.head++
	return co
}

// pushBackGrow is PushBack on a full queue (noinline: inlined, it would push
// its callers over the inliner's budget).
//
//go:noinline
func (q *taskQueue) pushBackGrow(co *Coro) {
	q.grow()
	q.buf[q.tail&uint(len(q.buf)-1)] = co
	q.tail++
}

// pushFrontGrow is PushFront on a full queue (noinline, as pushBackGrow).
//
//go:noinline
func (q *taskQueue) pushFrontGrow(co *Coro) {
	q.grow()
	q.head--
	q.buf[q.head&uint(len(q.buf)-1)] = co
}

// grow doubles the buffer (at least 16 slots), unrolling the ring to index 0.
func (q *taskQueue) grow() {
	nb := make([]*Coro, max(16, 2*len(q.buf)))
	n := q.tail - q.head
	if n > 0 {
		h := q.head & uint(len(q.buf)-1)
		k := copy(nb, q.buf[h:])
		if uint(k) < n {
			copy(nb[k:], q.buf[:n-uint(k)])
		}
	}
	q.buf = nb
	q.head, q.tail = 0, n
}
