package stackless

// ringQueue is the minimal double-ended ring buffer the scheduler needs: push
// at either end, pop from the head. It stands in for internal/ring until that
// shared leaf lands; the scheduler uses only these four methods.
type ringQueue[T any] struct {
	buf  []T // len(buf) is a power of two (or 0)
	head int // index of the first element
	n    int // number of elements
}

func (q *ringQueue[T]) Len() int { return q.n }

func (q *ringQueue[T]) PushBack(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

func (q *ringQueue[T]) PushFront(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = v
	q.n++
}

func (q *ringQueue[T]) PopFront() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero // drop the reference for the GC
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v, true
}

func (q *ringQueue[T]) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]T, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
