package stackful

import (
	"fmt"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/impl/stackful/stackpool"
)

// asmContext is a fiber: its saved context and the stack it runs on.
type asmContext struct {
	fc    fiber.Context
	stack stackpool.Stack
}

// asmBackend switches with package fiber between pooled stacks. Switches are
// symmetric. Finished contexts are not parked: a fiber whose coroutine
// finished returns from its entry function, naming the context to continue
// with, and the next context to run gives its stack back to the pool (the
// dying fiber cannot free the stack it is running on). The execContext
// records themselves are kept on a free list for reuse.
type asmBackend struct {
	s      *Scheduler
	stacks *stackpool.Pool
	sched  *execContext
	free   []*execContext
	gc     *fiber.GCHold
	// entry is every fiber's entry function, made once: a fresh fiber
	// starts only when switched to, and every switch to a context sets
	// s.current to the coroutine bound to it first (enter, switchFrom,
	// exitTo), so the context is s.current.ctx (no closure per context).
	entry func() *fiber.Context
}

func newAsmBackend(s *Scheduler) (backend, error) {
	if err := fiber.Supported(); err != nil {
		return nil, &unsupportedError{err}
	}
	stacks, err := stackpool.New(s.opts.Stacks)
	if err != nil {
		return nil, fmt.Errorf("stackful-asm: %w", err)
	}
	b := &asmBackend{s: s, stacks: stacks}
	b.entry = func() *fiber.Context { return &s.contextMain(s.current.ctx).fiber.fc }
	return b, nil
}

func (b *asmBackend) symmetric() bool { return true }

// begin takes the GC fence for the run (no collection may run while any
// fiber exists) and makes a fresh root context for the scheduler.
func (b *asmBackend) begin() (*execContext, error) {
	b.gc = fiber.HoldGC()
	b.sched = &execContext{}
	return b.sched, nil
}

// end releases the GC fence and reports a collection that ran anyway: the
// run is invalid then (objects held only by a suspended fiber may have been
// freed).
func (b *asmBackend) end() error {
	err := b.gc.Release()
	b.gc = nil
	if err != nil {
		return fmt.Errorf("stackful-asm: the run is invalid: %w", err)
	}
	return nil
}

func (b *asmBackend) newContext() (*execContext, error) {
	st, err := b.stacks.Get()
	if err != nil {
		return nil, err
	}
	var ctx *execContext
	if n := len(b.free); n > 0 {
		ctx = b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
	} else {
		ctx = &execContext{}
	}
	ctx.fiber.stack = st
	ctx.lo, ctx.span = st.Lo(), st.Hi()-st.Lo()
	if err := ctx.fiber.fc.Init(st.Lo(), st.Hi(), b.entry); err != nil {
		b.stacks.Put(st)
		ctx.fiber.stack = stackpool.Stack{}
		b.free = append(b.free, ctx)
		return nil, err
	}
	return ctx, nil
}

func (b *asmBackend) switchTo(from, to *execContext) {
	fiber.Switch(&from.fiber.fc, &to.fiber.fc)
}

func (b *asmBackend) park(*execContext) bool { return false }

// release returns a finished fiber's stack to the pool.
func (b *asmBackend) release(ctx *execContext) {
	b.stacks.Put(ctx.fiber.stack)
	ctx.fiber.stack = stackpool.Stack{}
	b.free = append(b.free, ctx)
}

func (b *asmBackend) close() {
	if err := b.stacks.Close(); err != nil {
		panic("stackful-asm: " + err.Error()) // stacks in use after every coroutine finished: a scheduler bug
	}
}

// ExplainCrashes makes the fatal errors that misuse of the Asm backend
// produces (and that Run cannot turn into errors: the runtime kills the
// process) explain themselves on this process's stderr: after the runtime's
// "fatal error: stack size not a power of 2" comes a line naming the cause,
// a collection started by code in a coroutine (runtime.GC,
// debug.FreeOSMemory) or a fiber stack overflow (naming
// Options.Stacks.StackSize). It starts a small monitor process, a copy of
// this executable, once per process (fiber.MonitorCrashes); call it at
// start-up. A harness that runs cells in child processes can explain their
// crashes itself with fiber.ExplainCrash instead.
func ExplainCrashes() error { return fiber.MonitorCrashes() }

// Errors and crash explanations of the fiber and stackpool packages name
// the settings a user of this package changes. A harness with flags of its
// own overrides these after init.
func init() {
	fiber.StackSizeOption = "the fiber stack size (stackful.Options.Stacks.StackSize)"
	stackpool.GuardOption = "stackful.Options.Stacks.Guard"
	stackpool.SlabOption = "stackful.Options.Stacks.SlabStacks"
}
