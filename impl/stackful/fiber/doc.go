// Package fiber switches one goroutine between several stacks of its own
// (fibers), with a context switch written in Go assembly, and fences off the
// conditions under which that is unsafe.
//
// It is the lowest layer of corobench's stackful-asm runtime: the scheduler
// (package stackful) decides who runs next; this package only performs the
// switch. It knows nothing of scheduling, and the stacks themselves come from
// package stackpool (or any memory the Go runtime does not manage).
//
// # Model
//
// A [Context] is a suspended point of execution: saved stack pointer, frame
// pointer and resume PC (on amd64 the last two stay on the suspended stack,
// at the saved stack pointer), plus the goroutine's per-stack fields that
// must travel with the stack (g.stack bounds, g._panic, g._defer,
// g.stktopsp; the stack guard is recomputed). [Switch](from, to) saves the running state into
// from and resumes to: it is symmetric, so fiber A can switch straight to
// fiber B without passing through a scheduler. The goroutine's own stack (the
// root) is represented by a zero Context, which the first Switch away from it
// fills in. A fresh fiber is prepared by [Context.Init] and starts, on its
// first resumption, in a TOPFRAME assembly trampoline that calls the entry
// function; when the entry returns a Context, the fiber switches to it and is
// finished (it never returns off the top of its stack).
//
// All fibers of a set run on one goroutine; a Context must only ever be
// resumed on the goroutine that created or last suspended it.
//
// # Safety fence (read this before using the package)
//
// Running Go code on stacks the runtime did not allocate works only under
// conditions measured for one toolchain (docs/design.md §3):
//
//   - The g field offsets are toolchain-specific. The assembly is compiled
//     only for go1.26 on linux/amd64 and linux/arm64 (build tags); elsewhere
//     [Supported] returns a "not supported: …" error and [Switch] panics.
//     [Supported] also runs a start-up self-test (bounds contain a local's
//     address, stackguard0 == lo+StackGuard, g._defer and g._panic sit where
//     expected, and a traceback taken inside a probe fiber ends at the
//     trampoline). Callers must check it and report the row unsupported.
//   - No garbage collection may run while any fiber exists: the collector
//     scans only the stack the goroutine is running on, so objects referenced
//     only from a suspended fiber (or from the root stack while a fiber runs)
//     would be freed. [HoldGC] turns the collector off (GOGC=off and no memory
//     limit), and [GCHold.Release] restores it and reports, via
//     runtime/metrics /gc/cycles/total:gc-cycles, a cycle that ran anyway
//     (for example an explicit runtime.GC): such a run is invalid.
//   - The runtime must never copy or free a fiber stack. Stack bounds whose
//     size is not a power of two make every attempt (growth on overflow, GC
//     shrinking) a clean "fatal error: stack size not a power of 2" instead
//     of memory corruption; [Context.Init] rejects power-of-two sizes.
//     A collection before the fence went up can leave a shrink request on
//     the goroutine (g.preemptShrink), which the runtime acts on at the next
//     synchronous preemption, whatever stack is current: Switch clears it
//     whenever it installs a stack. GODEBUG=gcshrinkstackoff=1
//     ([GODEBUGShrinkOff]) in the child process's environment is defence in
//     depth; [Warnings] notes its absence.
//   - A fiber has a fixed stack: deeper recursion than it allows is fatal
//     (the runtime cannot grow it). The runtime's message cannot be changed
//     from outside; [ExplainCrash] recognises it (and the other fiber-misuse
//     crashes) in a child's stderr and explains it, naming the stack-size
//     option ([StackSizeOption]), and [MonitorCrashes] makes a process
//     explain its own such crash on its stderr (a monitor process fed by
//     runtime/debug.SetCrashOutput). A collection started by code on a
//     fiber (runtime.GC) dies the same way, from runtime.shrinkstack,
//     unless GODEBUG=gcshrinkstackoff=1 is set.
//   - runtime.Goexit inside a fiber (t.FailNow, t.Fatal, t.Skip... call it)
//     would end the goroutine that hosts every fiber and hand the fiber stack
//     to the runtime's stack allocator. It is detected and the process exits
//     with a message naming the cause.
//   - A panic that escapes a fiber's entry function crashes the program, as
//     an unrecovered panic in a goroutine does, with a traceback through the
//     fiber's frames down to the trampoline.
//
// # Cost
//
// BenchmarkSwitch measures one one-way switch (a round trip is two);
// BenchmarkLifecycle a whole fiber life with a pooled stack (stackpool Get,
// Init, switch in, entry returns, switch out, Put):
//
//	go test -run '^$' -bench 'Switch|Lifecycle' -count 10 ./impl/stackful/fiber
package fiber
