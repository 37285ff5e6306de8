// Package runqueue is the run queue of the TrueAsync scheduler (seed 000),
// shared by corobench's coroutine runtimes (impl/stackful, impl/stackless):
// a ring buffer (internal/ring) with two priorities.
//
// Invariants: the next coroutine is always taken from the head; a coroutine
// spawned or woken (by an event, a timeout or a cancellation) is enqueued by
// its priority, High at the head and Normal at the tail; a coroutine that
// yields goes to the tail whatever its priority. Entries are never reordered
// or dropped by the queue itself (a runtime skips the ones it must drop as it
// takes them). Enqueue and Next never allocate once the buffer has grown to
// the queue's peak length.
//
// The methods are small enough to be inlined into the runtimes' hot paths:
// the wrapper costs nothing over calling internal/ring directly.
package runqueue

import "github.com/corobench/corobench/internal/ring"

// Queue is a run queue of T (the runtime's coroutine pointer). The zero value
// is an empty queue. It is not safe for concurrent use.
type Queue[T any] struct {
	r ring.Queue[T]
}

// Len returns the number of queued entries.
func (q *Queue[T]) Len() int { return q.r.Len() }

// Enqueue queues a spawned or woken coroutine by its priority: at the head if
// high, else at the tail.
func (q *Queue[T]) Enqueue(v T, high bool) {
	if high {
		q.r.PushFront(v)
	} else {
		q.r.PushBack(v)
	}
}

// Yield queues a coroutine that yields: at the tail, whatever its priority.
func (q *Queue[T]) Yield(v T) { q.r.PushBack(v) }

// Next removes and returns the head; ok is false if the queue is empty.
func (q *Queue[T]) Next() (v T, ok bool) { return q.r.PopFront() }
