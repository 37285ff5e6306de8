// Package wakerstate is the waker status of the TrueAsync design (docs/design.md §1, the waker;
// "Waker-Status"), shared by corobench's coroutine runtimes (impl/stackful,
// impl/stackless) and by the semantic suite internal/semtest, so that all
// three name the same five states with the same values and the same words.
//
// A waker moves NoStatus → Waiting → Queued → Result and back to NoStatus
// (or Queued again) at the coroutine's next blocking call; a coroutine
// cancelled before it ever ran goes Queued → Ignored and is dropped by the
// scheduler without running. The transitions themselves belong to each
// runtime: this package only defines the states.
package wakerstate

import "strconv"

// Status is the state of a coroutine's waker.
type Status uint8

// The values are fixed (0..4, in this order): drivers and logs rely on them.
const (
	// NoStatus: the waker is inactive: the coroutine runs (after its start
	// or a Yield), or it has finished.
	NoStatus Status = iota
	// Waiting: the coroutine is suspended; its events are started.
	Waiting
	// Queued: the coroutine is in the run queue (spawned and not started,
	// woken, or yielded); the outcome of its wait is fixed.
	Queued
	// Ignored: the coroutine is in the run queue but was cancelled before it
	// started: the scheduler drops it when dequeued, without running it.
	Ignored
	// Result: the coroutine resumed from a wait; the outcome is available
	// until its next blocking call.
	Result
)

// names are the reference design's spellings, used in logs and test expectations.
var names = [...]string{"NO_STATUS", "WAITING", "QUEUED", "IGNORED", "RESULT"}

// String returns the reference design's name of s ("NO_STATUS", "WAITING", ...), or
// "WakerStatus(n)" for a value outside the enum.
func (s Status) String() string {
	if int(s) < len(names) {
		return names[s]
	}
	return "WakerStatus(" + strconv.Itoa(int(s)) + ")"
}
