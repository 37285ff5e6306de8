package stackful

// backend is the switch: the one part the Asm and Coro rows do not share.
type backend interface {
	// symmetric reports whether switchTo may go from one coroutine context
	// straight to another (else every switch has the scheduler at one end).
	symmetric() bool
	// begin prepares a Run and returns the scheduler's own context (asm:
	// takes the GC fence).
	begin() (*execContext, error)
	// end finishes a Run (asm: releases the fence and reports a GC cycle
	// that happened anyway).
	end() error
	// newContext returns a context whose first entry runs
	// Scheduler.contextMain on it.
	newContext() (*execContext, error)
	// switchTo saves the running context into from and resumes to.
	switchTo(from, to *execContext)
	// park keeps a context whose coroutine finished for reuse and reports
	// whether it did; a context not parked (asm) is given up by
	// Scheduler.contextMain itself, before its last switch.
	park(ctx *execContext) bool
	// close frees everything the backend holds.
	close()
}

// execContext is an execution context: a stack plus saved registers (asm),
// or a Go runtime coroutine (coro). Between coroutines it is reused.
//
// On asm it is one object per context, the fiber state inline and no
// closure (the entry function is the backend's, asmBackend.entry): one
// heap object per suspended coroutine besides its record, not three.
type execContext struct {
	// fiber comes first: an asm context lives at the top of its stack, on
	// a cache line (asmBackend.newPooledContext), and so does its
	// fiber.Context then, whose hot part is one line (fiber.Context;
	// TestContextOnALine).
	fiber asmContext // asm backend; zero (unused) on coro

	co *coroutine // the coroutine running on it; nil when parked or dead

	// The stack the context runs on, [lo, lo+span), for the cheap
	// foreign-goroutine check in self (asm); span is 0 for coro, whose
	// stacks move, so the check goes to Scheduler.checkGoroutine.
	lo, span uintptr

	*coroContext // coro backend; nil on asm
}

// coroContext is the coro backend's part of an execution context.
type coroContext struct {
	resume func() (struct{}, bool) // iter.Pull next: run it until it yields
	stop   func()                  // iter.Pull stop
	yield  func(struct{}) bool     // the seq's yield: back to the scheduler
	g      uintptr                 // fiber.Goroutine of the Pull coroutine's goroutine (0 where unknown)
}
