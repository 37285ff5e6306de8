package stackful

import "github.com/corobench/corobench/internal/microtask"

// Microtask is a small handler the scheduler runs before its next switch, in
// the current context, without switching (docs/design.md §1). Microtasks run FIFO. A
// microtask is refcounted: the creator holds one reference and every queued
// entry holds one; the destructor runs when the last is released. A cancelled
// microtask is skipped (and released) when the queue reaches it. The type is
// internal/microtask's, which impl/stackless uses too; its methods are
// Cancel, Cancelled, Retain, Release and Refs.
//
// A microtask must not block (no Await, Yield, Sleep). If it returns an error
// or panics the batch stops; the microtasks behind it stay queued and run at
// the next suspend point. The error (a panic's is "microtask panicked: <value>")
// goes to Options.OnMicrotaskError, or, without a handler, becomes Run's error
// (*MicrotaskError) and starts a graceful shutdown (during a shutdown: final
// cleanup). Microtasks still queued at final cleanup are released without
// running.
type Microtask = microtask.Microtask

// NewMicrotask returns a microtask holding one reference for the caller.
// dtor, if not nil, runs when the last reference is released.
func NewMicrotask(run func() error, dtor func()) *Microtask {
	if run == nil {
		panic("stackful: NewMicrotask(nil, ...): pass the function the microtask runs")
	}
	return microtask.New(run, dtor)
}
