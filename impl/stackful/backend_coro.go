package stackful

import (
	"iter"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// coroBackend runs each context as a Go runtime coroutine made by iter.Pull.
// The runtime switches between such coroutines directly (coroswitch) and the
// garbage collector sees their stacks, but a Pull coroutine can only yield
// back to the code that resumed it, so every switch has the scheduler at one
// end. Contexts whose coroutine finished are parked (blocked in yield) and
// reused, like the asm backend reuses pooled stacks.
type coroBackend struct {
	s      *Scheduler
	sched  execContext
	parked []*execContext
}

func newCoroBackend(s *Scheduler) *coroBackend { return &coroBackend{s: s} }

func (b *coroBackend) symmetric() bool { return false }

func (b *coroBackend) begin() (*execContext, error) { return &b.sched, nil }

// end stops the parked contexts: their goroutines exit.
func (b *coroBackend) end() error {
	b.close()
	return nil
}

func (b *coroBackend) newContext() (*execContext, error) {
	if n := len(b.parked); n > 0 {
		ctx := b.parked[n-1]
		b.parked[n-1] = nil
		b.parked = b.parked[:n-1]
		return ctx, nil
	}
	ctx := &execContext{coroContext: &coroContext{}}
	ctx.resume, ctx.stop = iter.Pull(func(yield func(struct{}) bool) {
		ctx.yield = yield
		ctx.g = fiber.Goroutine()
		// contextMain returns with ctx.co set only after a body's
		// recovered panic: again, to finish it; with ctx.co nil when the
		// backend closes the parked context.
		for b.s.contextMain(ctx, ctx.co) == nil && ctx.co != nil {
		}
	})
	return ctx, nil
}

func (b *coroBackend) switchTo(from, to *execContext) {
	switch {
	case from == &b.sched:
		to.resume()
	case to == &b.sched:
		from.yield(struct{}{})
	default:
		panic("stackful: coro backend: a switch between two coroutines must go through the scheduler")
	}
}

func (b *coroBackend) park(ctx *execContext) bool {
	b.parked = append(b.parked, ctx)
	return true
}

// close stops every parked context: its yield returns false, contextMain
// sees no coroutine assigned and returns, ending the Pull coroutine.
func (b *coroBackend) close() {
	for i, ctx := range b.parked {
		b.parked[i] = nil
		ctx.stop()
	}
	b.parked = b.parked[:0]
}
