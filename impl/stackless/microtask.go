package stackless

import (
	"fmt"

	"github.com/corobench/corobench/internal/microtask"
)

// Microtask is a small handler run by the scheduler before the next resume,
// in FIFO order, without a task of its own (reference design: zend_async_microtask_s).
// The type is internal/microtask's, which impl/stackful uses too; its
// methods are Cancel, Cancelled, Retain, Release and Refs.
//
// It is reference counted: the creator holds one reference (NewMicrotask)
// and every queued entry holds one, dropped when the entry runs or, if the
// microtask was cancelled, is skipped; when the last reference is released
// the destructor runs. A cancelled microtask still in the queue is skipped. A handler
// error stops the batch (the rest stays queued for the next suspend point) and
// goes to the scheduler's microtask error handler, or, without one, starts a
// graceful shutdown and becomes Run's error (a *MicrotaskError). A panic in a
// microtask is not caught (see the package doc on panics).
//
// Allocate a Microtask once and enqueue it as often as needed: the queue
// holds the pointer, so enqueueing allocates nothing beyond the amortised
// growth of the queue. QueueMicrotask is the one-off form.
type Microtask = microtask.Microtask

// NewMicrotask returns a microtask running run, holding the creator's
// reference; dtor (may be nil) runs when the last reference is released.
func NewMicrotask(run func() error, dtor func()) *Microtask { return microtask.New(run, dtor) }

// EnqueueMicrotask queues m to run before the next resume. It refuses a
// microtask without a run function or with no reference left.
func (s *Scheduler) EnqueueMicrotask(m *Microtask) error {
	if m == nil {
		return fmt.Errorf("stackless: EnqueueMicrotask(nil): %w", microtask.ErrNoRun)
	}
	if err := microtask.Check(m); err != nil {
		return fmt.Errorf("stackless: EnqueueMicrotask: %w", err)
	}
	s.micro.Push(m)
	return nil
}

// QueueMicrotask queues fn as a one-off microtask (it allocates one
// Microtask; reuse a Microtask with EnqueueMicrotask on hot paths).
func (s *Scheduler) QueueMicrotask(fn func() error) error {
	m := NewMicrotask(fn, nil)
	err := s.EnqueueMicrotask(m)
	m.Release() // the queue entry keeps it alive
	return err
}

// runMicrotasks runs the queue until it is empty, including microtasks that
// the batch itself enqueues, or until a handler fails: the failing microtask
// stops the batch, the ones behind it stay queued for the next suspend point,
// and the error goes to the error handler, or else fails the run.
func (s *Scheduler) runMicrotasks() {
	if err := s.micro.RunBatch(&s.stats.Microtasks); err != nil {
		err = &MicrotaskError{Err: err}
		if s.microErr != nil {
			s.microErr(err)
		} else {
			s.fail(err)
		}
	}
}

// MicrotaskError is a microtask handler's error as the run reports it.
type MicrotaskError struct{ Err error }

func (e *MicrotaskError) Error() string { return "stackless: microtask failed: " + e.Err.Error() }
func (e *MicrotaskError) Unwrap() error { return e.Err }
