// Package ring is a growable ring-buffer deque, the run queue and microtask
// queue of corobench's coroutine runtimes. The TrueAsync design (docs/design.md §1)
// uses the simplest queue that does the job: a ring buffer where a normal
// priority entry is pushed at the tail, a high priority one at the head, and
// the next entry is always taken from the head.
//
// A Queue is not safe for concurrent use. Push and Pop never allocate once the
// buffer has grown to the queue's peak length.
package ring

// Queue is a FIFO with head insertion. The zero value is an empty queue.
type Queue[T any] struct {
	buf  []T // len(buf) is zero or a power of two
	head int // index of the first element
	n    int // number of elements
}

// Len returns the number of queued elements.
func (q *Queue[T]) Len() int { return q.n }

// PushBack appends v at the tail.
func (q *Queue[T]) PushBack(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// PushFront inserts v at the head, so the next PopFront returns it.
func (q *Queue[T]) PushFront(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = v
	q.n++
}

// PopFront removes and returns the head; ok is false if the queue is empty.
func (q *Queue[T]) PopFront() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	var zero T
	v = q.buf[q.head]
	q.buf[q.head] = zero // drop the reference for the collector
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v, true
}

// Peek returns the head without removing it.
func (q *Queue[T]) Peek() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	return q.buf[q.head], true
}

// At returns the i-th element from the head (0 ≤ i < Len()).
func (q *Queue[T]) At(i int) T {
	if i < 0 || i >= q.n {
		panic("ring: index out of range")
	}
	return q.buf[(q.head+i)&(len(q.buf)-1)]
}

// Clear empties the queue, keeping its buffer.
func (q *Queue[T]) Clear() {
	var zero T
	for q.n > 0 {
		q.buf[q.head] = zero
		q.head = (q.head + 1) & (len(q.buf) - 1)
		q.n--
	}
	q.head = 0
}

// grow doubles the buffer (minimum 16), unrolling the ring to start at 0.
func (q *Queue[T]) grow() {
	size := max(16, 2*len(q.buf))
	nb := make([]T, size)
	if q.n > 0 {
		k := copy(nb, q.buf[q.head:])
		copy(nb[k:], q.buf[:q.head])
	}
	q.buf = nb
	q.head = 0
}
