package stackless

import "errors"

// Microtask is a small handler run by the scheduler before the next resume,
// in FIFO order, without a task of its own (seed: zend_async_microtask_s).
//
// It is reference counted: each Enqueue takes a reference and each run (or
// skip, when cancelled) drops one; when the count reaches zero the optional
// Dtor runs. A cancelled microtask still in the queue is skipped. A handler
// error stops the batch (the rest stays queued for the next suspend point) and
// goes to the scheduler's microtask error handler, or, without one, starts a
// graceful shutdown and becomes Run's error (a *MicrotaskError).
//
// Allocate a Microtask once and enqueue it as often as needed: the run queue
// holds the pointer, so enqueueing allocates nothing beyond the amortised
// growth of the queue.
type Microtask struct {
	Handler   func() error
	Dtor      func() // optional; runs when the last reference is released
	cancelled bool
	refs      uint32
}

// NewMicrotask returns a microtask running h.
func NewMicrotask(h func() error) *Microtask { return &Microtask{Handler: h} }

// Cancel marks the microtask cancelled: queued runs of it are skipped.
func (m *Microtask) Cancel() { m.cancelled = true }

// Cancelled reports whether Cancel was called.
func (m *Microtask) Cancelled() bool { return m.cancelled }

// Refs returns the number of live references (queued runs plus Retains).
func (m *Microtask) Refs() uint32 { return m.refs }

// Retain takes a reference that keeps the Dtor from running.
func (m *Microtask) Retain() { m.refs++ }

// Release drops a reference; the last one runs the Dtor.
func (m *Microtask) Release() {
	if m.refs == 0 {
		panic("stackless: Microtask.Release without a matching reference")
	}
	m.refs--
	if m.refs == 0 && m.Dtor != nil {
		m.Dtor()
	}
}

// EnqueueMicrotask queues m to run before the next resume.
func (s *Scheduler) EnqueueMicrotask(m *Microtask) error {
	if m == nil || m.Handler == nil {
		return errors.New("stackless: EnqueueMicrotask needs a Microtask with a Handler")
	}
	m.refs++
	s.micro.PushBack(m)
	return nil
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
		err := m.Handler()
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
