package stackless

import "errors"

// Microtask is a small handler run by the scheduler before the next resume,
// in FIFO order, without a task of its own (seed: zend_async_microtask_s).
//
// It is reference counted: the creator holds one reference (NewMicrotask)
// and every queued entry holds one, dropped when the entry runs or, if the
// microtask was cancelled, is skipped; when the last reference is released
// the destructor runs. A cancelled microtask still in the queue is skipped. A handler
// error stops the batch (the rest stays queued for the next suspend point) and
// goes to the scheduler's microtask error handler, or, without one, starts a
// graceful shutdown and becomes Run's error (a *MicrotaskError).
//
// Allocate a Microtask once and enqueue it as often as needed: the queue
// holds the pointer, so enqueueing allocates nothing beyond the amortised
// growth of the queue. QueueMicrotask is the one-off form.
type Microtask struct {
	run       func() error
	dtor      func() // optional; runs when the last reference is released
	cancelled bool
	refs      int32
}

// NewMicrotask returns a microtask running run, holding the creator's
// reference; dtor (may be nil) runs when the last reference is released.
func NewMicrotask(run func() error, dtor func()) *Microtask {
	return &Microtask{run: run, dtor: dtor, refs: 1}
}

// Cancel marks the microtask cancelled: queued runs of it are skipped.
func (m *Microtask) Cancel() { m.cancelled = true }

// Cancelled reports whether Cancel was called.
func (m *Microtask) Cancelled() bool { return m.cancelled }

// Refs returns the number of live references (queued runs plus Retains).
func (m *Microtask) Refs() int32 { return m.refs }

// Retain takes a reference that keeps the destructor from running.
func (m *Microtask) Retain() { m.refs++ }

// Release drops a reference; the last one runs the destructor.
func (m *Microtask) Release() {
	if m.refs <= 0 {
		panic("stackless: Microtask.Release without a matching reference")
	}
	m.refs--
	if m.refs == 0 && m.dtor != nil {
		m.dtor()
	}
}

// EnqueueMicrotask queues m to run before the next resume.
func (s *Scheduler) EnqueueMicrotask(m *Microtask) error {
	if m == nil || m.run == nil {
		return errors.New("stackless: EnqueueMicrotask needs a Microtask made by NewMicrotask with a non-nil run function")
	}
	if m.refs <= 0 {
		return errors.New("stackless: EnqueueMicrotask on a released Microtask: keep a reference (Retain) while enqueueing it")
	}
	m.refs++
	s.micro.PushBack(m)
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
	for {
		m, ok := s.micro.PopFront()
		if !ok {
			return
		}
		if m.cancelled {
			m.Release()
			continue
		}
		s.stats.Microtasks++
		err := m.run()
		m.Release()
		if err != nil {
			err = &MicrotaskError{Err: err}
			if s.microErr != nil {
				s.microErr(err)
			} else {
				s.fail(err)
			}
			return
		}
	}
}

// MicrotaskError is a microtask handler's error as the run reports it.
type MicrotaskError struct{ Err error }

func (e *MicrotaskError) Error() string { return "stackless: microtask failed: " + e.Err.Error() }
func (e *MicrotaskError) Unwrap() error { return e.Err }
