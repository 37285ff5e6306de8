package stackful

import (
	"errors"
	"fmt"

	"github.com/corobench/corobench/internal/deadlock"
)

var (
	// ErrCancelled is what a blocking call returns in a cancelled coroutine.
	// Errors delivered by a shutdown or a deadlock wrap it.
	ErrCancelled = errors.New("stackful: coroutine cancelled")
	// ErrTimeout is what AwaitTimeout returns when the timeout fires first.
	ErrTimeout = errors.New("stackful: await timed out")
	// ErrDeadlock is wrapped by the *DeadlockError Run returns.
	ErrDeadlock = errors.New("stackful: deadlock")
	// ErrNotSupported wraps every "not supported: <reason>" error.
	ErrNotSupported = errors.New("not supported")
	// ErrGoexit is wrapped by the *PanicError Run returns (Coro backend)
	// when a coroutine called runtime.Goexit.
	ErrGoexit = errors.New("runtime.Goexit called in a coroutine (t.FailNow, t.Fatal and t.Skip call it): " +
		"a coroutine cannot end the goroutine that runs it; report failures with t.Error or a returned error")
)

// Cancellation errors delivered by the scheduler itself. They are static so
// that delivering one does not allocate.
var (
	errShutdownCancel = fmt.Errorf("%w: the scheduler is shutting down", ErrCancelled)
	errDeadlockCancel = fmt.Errorf("%w: the scheduler found a deadlock", ErrCancelled)
	errFinalCleanup   = fmt.Errorf("%w: final cleanup after shutdown", ErrCancelled)
	errCancelEvent    = fmt.Errorf("%w: the cancellation event fired", ErrCancelled)
)

// errNothingToWaitFor is Suspend's error for a wait with no subscription and
// no timeout: nothing could ever end it.
var errNothingToWaitFor = errors.New("stackful: Suspend with nothing to wait for: call ResumeWhen first, or pass a timeout")

// DeadlockError is Run's error when nothing is runnable, the reactor has no
// active event, and coroutines are still waiting.
type DeadlockError struct {
	// Waiting names the waiting coroutines in spawn order: each by its
	// Coroutine.Name, or as Coroutine.String ("#id") if it has none.
	Waiting []string
}

// Error names the first deadlock.MaxNamed (20) waiting coroutines and
// counts the rest; Waiting has them all.
func (e *DeadlockError) Error() string { return deadlock.Message("stackful", "coroutine", e.Waiting) }

// Unwrap makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Unwrap() error { return ErrDeadlock }

// PanicError is Run's error when a coroutine panicked.
type PanicError struct {
	Coroutine string // Coroutine.String of the coroutine that panicked
	Value     any    // the panic value
	Stack     string // the stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("stackful: coroutine %s panicked: %v\n%s", e.Coroutine, e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// MicrotaskError is Run's error when a microtask failed and no
// Options.OnMicrotaskError handler was set.
type MicrotaskError struct{ Err error }

func (e *MicrotaskError) Error() string { return "stackful: microtask failed: " + e.Err.Error() }

// Unwrap returns the microtask's error.
func (e *MicrotaskError) Unwrap() error { return e.Err }

// killSignal is the panic value that unwinds a coroutine left suspended at
// final cleanup, so that its defers run. contextMain recovers it.
type killSignal struct{}

// unsupportedError is New's error when the Asm backend cannot run here: its
// text is the fiber self-test's ("not supported: <why>") and it matches
// both ErrNotSupported and the fiber package's error.
type unsupportedError struct{ err error }

func (e *unsupportedError) Error() string   { return e.err.Error() }
func (e *unsupportedError) Unwrap() []error { return []error{ErrNotSupported, e.err} }
