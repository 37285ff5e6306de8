// Package microtask is the microtask queue of the TrueAsync design (docs/design.md §1:
// zend_async_microtask_s), shared by corobench's coroutine runtimes
// (impl/stackful, impl/stackless): small handlers a scheduler runs FIFO at
// each suspend point, in the current context, without switching.
//
// Invariants:
//   - A Microtask is reference counted. New gives the creator one reference,
//     and every queued entry holds one, taken by Queue.Push and dropped when
//     the entry is run, skipped or dropped. Check refuses a microtask with no
//     reference left (or no run function) before it is pushed. The
//     destructor runs exactly once, when the count reaches zero; releasing
//     below zero panics and leaves the count at zero.
//   - A cancelled microtask is skipped when the queue reaches it (its entry's
//     reference is still released); cancelling is permanent.
//   - RunBatch and RunBatchRecover run entries in FIFO order, including
//     entries queued by the batch itself, until the queue is empty or one
//     returns an error; the failing one is released and the entries behind
//     it stay queued, in order, for the caller's next batch.
//
// What an error or a panic means for the run (an error handler, a failed run,
// a shutdown) is the runtime's decision: this package only reports it. Like
// the runtimes, a Queue is not safe for concurrent use.
package microtask

import (
	"errors"
	"fmt"

	"github.com/corobench/corobench/internal/ring"
)

// Microtask is a small refcounted handler. Allocate it once with New and
// enqueue it as often as needed: the queue holds the pointer, so enqueueing
// allocates nothing beyond the amortised growth of the queue.
type Microtask struct {
	run       func() error
	dtor      func() // optional; runs when the last reference is released
	refs      int32
	cancelled bool
}

// New returns a microtask running run, holding the creator's reference; dtor
// (may be nil) runs when the last reference is released. A nil run is
// refused by Queue.Push.
func New(run func() error, dtor func()) *Microtask {
	return &Microtask{run: run, dtor: dtor, refs: 1}
}

// Cancel marks the microtask cancelled: queued entries of it are skipped.
func (m *Microtask) Cancel() { m.cancelled = true }

// Cancelled reports whether Cancel was called.
func (m *Microtask) Cancelled() bool { return m.cancelled }

// Refs returns the number of live references (queued entries plus the
// creator's and Retains).
func (m *Microtask) Refs() int32 { return m.refs }

// Retain takes a reference that keeps the destructor from running.
func (m *Microtask) Retain() { m.refs++ }

// Release drops a reference; the last one runs the destructor. Releasing a
// microtask with no reference left panics. (Split so that the common case,
// references left, inlines into the batch loop.)
func (m *Microtask) Release() {
	m.refs--
	if m.refs <= 0 {
		m.lastReleased()
	}
}

// lastReleased runs the destructor after the last Release, or panics (with
// the count restored to zero) for a Release too many. Not inlined, so that
// Release is.
//
//go:noinline
func (m *Microtask) lastReleased() {
	if m.refs < 0 {
		m.refs = 0
		panic("microtask: Release without a matching reference (New, Retain or a queued entry)")
	}
	if m.dtor != nil {
		m.dtor()
	}
}

// Errors of Check. The runtimes add their own prefix.
var (
	ErrNoRun    = errors.New("the Microtask has no run function: make it with NewMicrotask and a non-nil run function")
	ErrReleased = errors.New("the Microtask was released: keep a reference (Retain) while enqueueing it")
)

// PanicError is RunBatchRecover's error for a microtask that panicked.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("microtask panicked: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Queue is a FIFO of microtask entries. The zero value is an empty queue.
type Queue struct {
	q ring.Queue[*Microtask]
}

// Len returns the number of queued entries (cancelled ones included).
func (q *Queue) Len() int { return q.q.Len() }

// Check reports why m (not nil) cannot be queued: ErrNoRun without a run
// function, ErrReleased with no reference left; nil if it can.
func Check(m *Microtask) error {
	if m.run == nil {
		return ErrNoRun
	}
	if m.refs <= 0 {
		return ErrReleased
	}
	return nil
}

// Push queues an entry of m, taking a reference for it. m must pass Check
// (the runtimes check first and report a refusal their own way); Push and
// Check are split so that both inline into the runtimes' enqueue.
func (q *Queue) Push(m *Microtask) {
	m.refs++
	q.q.PushBack(m)
}

// RunBatch runs entries until the queue is empty or one fails, and returns
// the failure (nil if none). *ran counts the microtasks run (skipped
// cancelled ones are not counted). A panic in a microtask propagates (its
// entry is then not released); see RunBatchRecover.
func (q *Queue) RunBatch(ran *uint64) error {
	var cur *Microtask
	return q.run(ran, &cur)
}

// RunBatchRecover is RunBatch, except that a panicking microtask is released
// and reported as a *PanicError, stopping the batch like any failure. It
// costs one deferred recover per batch, not per microtask: a panic ends the
// batch anyway.
func (q *Queue) RunBatchRecover(ran *uint64) (err error) {
	var cur *Microtask // the entry running: released if it panics
	defer func() {
		if r := recover(); r != nil {
			// cur is nil if the panic came from a destructor run by a
			// Release: that entry's reference is already gone.
			if cur != nil {
				cur.Release()
			}
			err = &PanicError{Value: r}
		}
	}()
	return q.run(ran, &cur)
}

// run is the batch loop; *cur is the entry running, nil between entries.
// (cur lives in the caller's frame, not in the Queue, so that the Queue is
// exactly the ring it wraps: the schedulers embed it next to hot fields.)
func (q *Queue) run(ran *uint64, cur **Microtask) error {
	for {
		m, ok := q.q.PopFront()
		if !ok {
			return nil
		}
		if m.cancelled {
			m.Release()
			continue
		}
		*ran++
		*cur = m
		err := m.run()
		*cur = nil
		m.Release()
		if err != nil {
			return err
		}
	}
}

// Drop releases every queued entry without running it (final cleanup).
func (q *Queue) Drop() {
	for {
		m, ok := q.q.PopFront()
		if !ok {
			return
		}
		m.Release()
	}
}
