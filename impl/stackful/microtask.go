package stackful

import "fmt"

// Microtask is a small handler the scheduler runs before its next switch, in
// the current context, without switching (seed 000). Microtasks run FIFO. A
// microtask is refcounted: the creator holds one reference and every queued
// entry holds one; the destructor runs when the last is released. A cancelled
// microtask is skipped (and released) when the queue reaches it.
//
// A microtask must not block (no Await, Yield, Sleep). If it returns an error
// the batch stops; the microtasks behind it stay queued and run at the next
// suspend point. The error goes to Options.OnMicrotaskError, or, without a
// handler, becomes Run's error (*MicrotaskError) and starts a graceful
// shutdown (during a shutdown: final cleanup). Microtasks still queued at
// final cleanup are released without running.
type Microtask struct {
	run       func() error
	dtor      func()
	refs      int32
	cancelled bool
}

// NewMicrotask returns a microtask holding one reference for the caller.
// dtor, if not nil, runs when the last reference is released.
func NewMicrotask(run func() error, dtor func()) *Microtask {
	if run == nil {
		panic("stackful: NewMicrotask(nil, ...)")
	}
	return &Microtask{run: run, dtor: dtor, refs: 1}
}

// Cancel marks the microtask cancelled: queued entries will not run it.
func (m *Microtask) Cancel() { m.cancelled = true }

// Cancelled reports whether Cancel was called.
func (m *Microtask) Cancelled() bool { return m.cancelled }

// Retain adds a reference.
func (m *Microtask) Retain() { m.refs++ }

// Release drops a reference, running the destructor at zero.
func (m *Microtask) Release() {
	m.refs--
	switch {
	case m.refs == 0 && m.dtor != nil:
		m.dtor()
	case m.refs < 0:
		panic("stackful: Microtask released more often than retained")
	}
}

// Refs returns the reference count.
func (m *Microtask) Refs() int32 { return m.refs }

// call runs the microtask, turning a panic into an error so that it stops
// the batch like any failure instead of tearing down the context it ran in.
func (m *Microtask) call() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("stackful: microtask panicked: %v", r)
		}
	}()
	return m.run()
}
