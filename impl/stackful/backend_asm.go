package stackful

import (
	"fmt"
	"unsafe"

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
// finished gives its stack back to the pool (putDying) or keeps its
// context as the spare, then returns from its entry function, naming the
// context to continue with. Each execContext lives in its stack's top
// (newContext), so it is pooled with the stack.
type asmBackend struct {
	s      *Scheduler
	stacks *stackpool.Pool
	sched  *execContext
	gc     *fiber.GCHold
	// spare is a finished context kept whole: its stack, and the context
	// in the stack's top with its finished fiber. A dying context becomes
	// it when there is none (Scheduler.contextMain). The next newContext
	// restarts it (fiber.Context.Restart) instead of a pool Get, a clear
	// and an Init (and the dying context skips the Put), so a coroutine
	// lifecycle (spawn, run, finish, one at a time) makes no pool
	// operation and re-checks nothing Init checked. One, not a cache:
	// the pool keeps the rest. end gives it back, so between Runs the pool
	// holds every stack and no context exists.
	spare *execContext
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
	b.entry = func() *fiber.Context {
		co := s.current
		ctx := co.ctx
		for {
			if to := s.contextMain(ctx, co); to != nil {
				return &to.fiber.fc
			}
			// nil only after a body's recovered panic: again, to finish
			// it (see contextMain). Not co: the context may have taken
			// over another coroutine since (contextMain's takeover).
			co = ctx.co
		}
	}
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
	if c := b.spare; c != nil {
		b.spare = nil
		b.putContext(c) // no context outlives a Run (see newContext)
	}
	err := b.gc.Release()
	b.gc = nil
	if err != nil {
		return fmt.Errorf("stackful-asm: the run is invalid: %w", err)
	}
	return nil
}

// ctxReserve is the top of every fiber stack, where the fiber's execContext
// lives (newContext): a whole number of cache lines above the fiber's own
// stack, which ends below it.
var ctxReserve = (unsafe.Sizeof(execContext{}) + 63) &^ 63

// newContext takes a pooled stack and makes its execution context in the
// stack's top ctxReserve bytes, not on the heap: a suspended coroutine then
// keeps no heap object besides its record (the context's bytes lie in the
// stack page its frames touch anyway), and the saved SP, the context and
// the frames a resume returns into are neighbours (fewer distinct lines to
// miss once thousands are alive). The context lives as long as the stack
// is taken. A stack given back with its finished context still in its top
// (putDying) is restarted as it stands when a Get hands it out again, as
// the spare is (newPooledContext says when); any other stack's context is
// made afresh here (a pooled stack may have been trimmed, which zeroes its
// memory, or given back cleared: putContext).
//
// Safe with the collector: the context's pointers (its coroutine, the
// pool's slab, the backend's entry function) are written while a Run holds
// the collector off, and each of those objects is also reachable from the
// heap (the live list or run queue, the pool, the backend), so the
// collector, which does not scan stack-pool memory, never needs to find
// them through a context; between Runs no context exists.
//
// The spare (a finished context kept whole) is reused whole: what it holds
// is what this function made for it, with co nil and its fiber finished,
// so only the fiber is restarted.
//
// Scheduler.newContextFor spells out the spare case (its twin) and calls
// newPooledContext itself; this method serves the backend interface.
func (b *asmBackend) newContext() (*execContext, error) {
	if c := b.spare; c != nil {
		b.spare = nil
		if err := c.fiber.fc.Restart(b.entry); err != nil {
			spareBroken(err)
		}
		return c, nil
	}
	return b.newPooledContext()
}

// spareBroken reports a spare context whose fiber cannot be restarted: it
// is not finished, so contextMain kept a context whose fiber is still
// alive, a scheduler bug; its stack is not safe to reuse.
func spareBroken(err error) {
	panic("stackful-asm: the spare context cannot be restarted: " + err.Error())
}

// newPooledContext is newContext with a stack from the pool.
func (b *asmBackend) newPooledContext() (*execContext, error) {
	st, err := b.stacks.Get()
	if err != nil {
		return nil, err
	}
	if h := b.stacks.PeekHi(startAhead - 1); h != 0 {
		prefetchStart(h)
	}
	top := st.Hi() - ctxReserve
	// The uintptr top as a pointer, through memory: the address is not a
	// Go heap object, so none of the unsafe.Pointer rules about deriving a
	// pointer from one apply (go vet only sees a conversion it cannot
	// check in the direct form).
	// The first touch of the stack's top must be a store: the restart test
	// below reads the context first, as do the clear's nil-check probe
	// and fc.Init; a load of a never-touched page maps
	// the shared zero page, and the first store then faults a second time
	// to get a page of its own (2 minor faults per cold start instead of
	// 1: TestColdStartFaultsOnce). The store goes through its own pointer,
	// loaded like ctx's, so the compiler cannot drop it as overwritten.
	*(*(**uintptr)(unsafe.Pointer(&top))) = 0
	ctx := *(**execContext)(unsafe.Pointer(&top))
	// A stack whose last fiber finished on it and gave it back (putDying)
	// still holds that fiber's context, whole and finished, as a spare
	// does: restart it (fiber.Context.Restart; its bounds, stack and the
	// rest are what this function made for this stack). Only then: the
	// context must name this very stack (a trimmed stack reads zero, a
	// cleared one, putContext, reads empty) and be finished (a stack is
	// given back only by a finished fiber or cleared, so this never sees
	// a live fiber's context). Why: thousands of starts in a row (Spawn
	// alive=10000) then skip the clear, Init's checks and its call of
	// fiber.Supported, stores and a frame on cold lines each; in
	// BenchmarkSpawnAlive, 6 runs alternated, medians 208.5 -> 180.2
	// cpu-ns/spawn (5 of 6 pairs lower).
	if ctx.fiber.stack == st && ctx.fiber.fc.Finished() {
		if err := ctx.fiber.fc.Restart(b.entry); err != nil {
			spareBroken(err) // not reached: finished, and entry is set
		}
		return ctx, nil
	}
	*ctx = execContext{}
	ctx.fiber.stack = st
	ctx.lo, ctx.span = st.Lo(), top-st.Lo()
	if err := ctx.fiber.fc.Init(st.Lo(), top, b.entry); err != nil {
		*ctx = execContext{}
		b.stacks.Put(st)
		return nil, err
	}
	ctx.fiber.fc.EntryReportsGoexit() // contextMain's deferred call does (kept by Restart)
	return ctx, nil
}

// startAhead is how many pooled starts ahead newPooledContext prefetches
// the stack a start will take (prefetchStart): the stack the second Get
// from now hands out. When thousands start in a row one start takes a few
// hundred ns, longer than a line's miss: one, two and three starts ahead
// read alike (BenchmarkSpawnAlive, 9 runs each in alternation, medians
// 167, 164 and 158 cpu-ns/spawn); two leaves room for a slow fill.
const startAhead = 2

// prefetchStart fetches the lines a fiber's first run writes and reads on
// the stack whose top is hi, before its start: the execution context in
// its top ctxReserve bytes (cleared and Init'ed by newPooledContext, read
// by the switch in), and the 18 lines below it (1152 bytes), where the
// fiber's first frames go: the trampoline, fiberMain, the entry,
// contextMain, the body and a suspend (in the Spawn scenario, Yield's frame
// ends ~900 bytes below the top, under the rows adapter's two frames),
// and under that suspend the frames that make the next coroutine's
// context when it has not started either (newContextFor,
// newPooledContext, Get, Init: to ~1300 bytes below the top).
//
// Why: when thousands of coroutines start in a row (Spawn alive=10000:
// each yields once, so all are alive together and every start takes a
// pooled stack), each start wrote these lines cold: a pooled stack was
// last used a round ago, 10000 stacks back, so its lines are long out of
// the caches and its page out of the TLB. perf (cpu-clock at 2 kHz) of
// `benchrun profile -scenario spawn -impl stackful-asm -param alive=10000
// -param pool=warm -benchtime 3s` put 21 % of the timed samples in
// fiberMain's ABI wrapper, on the instruction after its first load from
// the new stack, and more on the returns of the deep frames under the
// yield (fiber.Supported, stackpool's countOp); with this prefetch 0.4 %
// there, and 8.6 samples per timed round against 10.9. The deep lines
// matter: the top six lines and the twelve below the context alone read
// 188 cpu-ns/spawn in BenchmarkSpawnAlive against 167 with them (medians
// of 9 runs in alternation).
//
// Three calls of package fiber's prefetches, overlapping by four lines,
// together lines hi-1344 to hi (the context starts on a line, and so hi
// and the lines below it). A hint: nothing faults, whatever is or is not
// mapped there (a fresh slab's slots are not).
func prefetchStart(hi uintptr) {
	c := hi - ctxReserve
	fiber.PrefetchStack(hi - 6*64) // the top 6 lines: the context's (3) and 3 below
	// The context's first line and PrefetchTopLines below it.
	fiber.PrefetchTop(*(**fiber.Context)(unsafe.Pointer(&c)))
	fiber.PrefetchStack(c - (fiber.PrefetchTopLines+6)*64) // the 6 lines below those
}

func (b *asmBackend) switchTo(from, to *execContext) {
	fiber.Switch(&from.fiber.fc, &to.fiber.fc)
}

func (b *asmBackend) park(*execContext) bool { return false }

// putDying gives the stack of ctx back to the pool while ctx's fiber still
// runs on it: the fiber's last act, between Scheduler.contextMain choosing
// the context to continue with and fiberMain's switch there. Safe because
// nothing in between takes a stack (contextMain has already made next's
// context), so no Get can hand this one out before the fiber has left it,
// and because a Put never releases the memory of the stack it is given
// (stackpool.Pool.Put; TestPutNeverReleasesItsStack): a trimming window
// closing in this Put keeps the most recently returned stack. The context
// is not cleared here: fiberMain still uses it (its state, the starter it
// may return to) until the switch, and the next Get of this stack
// restarts it (newPooledContext).
//
// Why not after the switch, as the context switched to once did (a dead
// context handed over and put back by the next context): that Put then ran
// on the resumed coroutine's stack, its frames (the release, Put and
// countOp calls) below the resumed Switch frame, on lines that had gone
// cold since the coroutine suspended; in the timed region of a shutdown of
// 1000 blocked coroutines (a perf profile, cpu-clock at 50 kHz, of
// BenchmarkShutdownCycle's region on a 2-core EPYC VM) countOp and Put
// held 28 % of the samples (22.8 and 5.6 %, 97 and 55 % of theirs on their
// returns), and a resumed coroutine paid them on every finish. On the
// dying stack the calls run on lines that are hot: at 20 kHz, 600 cycles
// each, countOp, Put and release went from 34.8 % of the samples to 1.5 %
// and the region's samples from 5139 to 4347 (-15 %). Shutdown
// stackful-asm n=1000 (`benchrun cell -scenario shutdown -impl stackful-asm
// -params n=1000 -core-probe`, pinned, old and new binaries alternated,
// session 16, AMD EPYC Zen 5 VM): on a busy host, the rounds with a clean
// probe 250.5 -> 166.1, 267.8 -> 174.0, 212.9 -> 183.6 ns per coroutine
// (goroutine-single 218-226 in the same rounds); 10 rounds later on a
// quieter one, medians of the cell means 208.4 -> 177.9, paired ratio
// median 0.875, 8 of 10 rounds faster. n=100000 (-benchtime 300ms, 4
// rounds) 231-268 -> 188-204; BenchmarkShutdownCycle, 6 rounds, median 221
// -> 175 cpu-ns per coroutine. PingPong, Yield n=2 and 4096, Spawn alive=1
// and alive=10000 (pool=warm) unchanged within their noise.
//
// ctx.co is already nil (contextMain clears it before the fiber exits).
func (b *asmBackend) putDying(ctx *execContext) {
	b.stacks.Put(ctx.fiber.stack)
}

// putContext clears ctx (in its stack's top) and gives the stack back.
func (b *asmBackend) putContext(ctx *execContext) {
	st := ctx.fiber.stack
	*ctx = execContext{}
	b.stacks.Put(st)
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
