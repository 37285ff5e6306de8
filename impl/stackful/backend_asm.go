package stackful

import (
	"fmt"

	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// Guard selects guard pages below fiber stacks (Asm backend).
type Guard uint8

const (
	GuardAuto Guard = iota // guard pages while they fit under vm.max_map_count
	GuardOn                // always (fails when the map limit is reached)
	GuardOff               // never (slab allocation; overflow still hits morestack first)
)

// stackSource hands out fiber stacks: [lo, hi) with hi-lo not a power of
// two, in memory the Go runtime does not manage.
type stackSource interface {
	get() (stack, error)
	put(stack)
	close()
}

// stack is one fiber stack from a stackSource.
type stack struct {
	lo, hi uintptr
}

// asmContext is a fiber: its saved context, the stack it runs on, and its
// entry function (made once per context and reused with every stack).
type asmContext struct {
	fc    fiber.Context
	stack stack
	entry func() *fiber.Context
}

// asmBackend switches with package fiber between pooled stacks. Switches are
// symmetric. Finished contexts are not parked: a fiber whose coroutine
// finished returns from its entry function, naming the context to continue
// with, and the next context to run gives its stack back to the pool (the
// dying fiber cannot free the stack it is running on). The execContext
// records themselves are kept on a free list for reuse.
type asmBackend struct {
	s      *Scheduler
	stacks stackSource
	sched  *execContext
	free   []*execContext
	gc     *fiber.GCHold
}

func newAsmBackend(s *Scheduler) (backend, error) {
	if err := fiber.Supported(); err != nil {
		return nil, fmt.Errorf("stackful-asm: %w", err)
	}
	stacks, err := newStackSource(s.opts)
	if err != nil {
		return nil, err
	}
	return &asmBackend{s: s, stacks: stacks}, nil
}

func (b *asmBackend) symmetric() bool { return true }

// begin takes the GC fence for the run (no collection may run while any
// fiber exists) and makes a fresh root context for the scheduler.
func (b *asmBackend) begin() (*execContext, error) {
	b.gc = fiber.HoldGC()
	b.sched = &execContext{fiber: &asmContext{}}
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
	st, err := b.stacks.get()
	if err != nil {
		return nil, err
	}
	var ctx *execContext
	if n := len(b.free); n > 0 {
		ctx = b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
	} else {
		ctx = &execContext{fiber: &asmContext{}}
		ctx.fiber.entry = func() *fiber.Context { return &b.s.contextMain(ctx).fiber.fc }
	}
	ctx.fiber.stack = st
	if err := ctx.fiber.fc.Init(st.lo, st.hi, ctx.fiber.entry); err != nil {
		b.stacks.put(st)
		ctx.fiber.stack = stack{}
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
	b.stacks.put(ctx.fiber.stack)
	ctx.fiber.stack = stack{}
	b.free = append(b.free, ctx)
}

func (b *asmBackend) close() { b.stacks.close() }

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
