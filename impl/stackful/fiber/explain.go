package fiber

import "strings"

// StackSizeOption names, in crash explanations and errors, the option that
// sets the fiber stack size. The harness sets it to its own flag (for
// example "benchrun -stack-size") before running cells; the default names the
// pool's configuration field.
var StackSizeOption = "the fiber stack size (stackpool.Config.StackSize)"

// ExplainCrash recognises, in the stderr of a process that died, the fatal
// errors that misuse of fibers produces, and returns an explanation to append
// to the failed cell's log; "" if it recognises none.
//
// The runtime's own message cannot be changed from outside the runtime: it
// throws on its system stack, with no hook, and prints "fatal error: stack
// size not a power of 2" for an overflowing fiber. That message is specific
// enough (every stack the runtime allocates has a power-of-two size; only
// fiber stacks do not), so this is how an overflow comes to name the
// stack-size option in the harness's report.
func ExplainCrash(stderr string) string {
	has := func(s string) bool { return strings.Contains(stderr, s) }
	onFiber := has(fiberStartName) || has(fiberMainName)
	// The crash output a monitor receives (MonitorCrashes) starts after the
	// "fatal error" line, at the traceback: there, the copy that failed is
	// runtime.throw called by stackalloc called by copystack.
	copyFailed := has("fatal error: stack size not a power of 2") ||
		has("runtime.throw(") && has("runtime.stackalloc(") && has("runtime.copystack(")
	switch {
	case has(GoexitMessage):
		return "runtime.Goexit ran inside a fiber (t.FailNow, t.Fatal, t.Skip and runtime.Goexit call it). " +
			"A fiber cannot end its host goroutine; report failures with t.Error or a returned error."
	case copyFailed && has("runtime.shrinkstack"):
		return "The garbage collector tried to shrink a fiber stack, so a collection ran while fibers existed, which the GC fence (fiber.HoldGC) must prevent: " +
			"something called runtime.GC or debug.FreeOSMemory during the run. Run the child with GODEBUG=" + GODEBUGShrinkOff + " as defence in depth, and remove the collection."
	case copyFailed && (has("runtime.newstack") || has("runtime.morestack")),
		has("fatal error: runtime: split stack overflow") && onFiber:
		return "A fiber stack overflowed: code running in a fiber needed more stack than the fiber has, and a fiber stack cannot grow " +
			"(the runtime tried to copy it to a larger stack; fiber stacks have a size that is not a power of two precisely so that this fails cleanly). " +
			"Raise " + StackSizeOption + ", or make the code on the fiber use less stack."
	case copyFailed:
		return "The runtime tried to copy a fiber stack (only fiber stacks have a size that is not a power of two): either a fiber overflowed " +
			"(raise " + StackSizeOption + ") or a garbage collection tried to shrink one (set GODEBUG=" + GODEBUGShrinkOff + " and find the collection). " +
			"Run with GOTRACEBACK=system to see which: runtime.newstack means overflow, runtime.shrinkstack a collection."
	case has("fatal error: stack not a power of 2"):
		return "The runtime tried to free a fiber stack as one of its own (stackfree): a goroutine that was running on a fiber stack ended " +
			"(runtime.Goexit), or a garbage collection shrank it while fibers existed."
	case has("traceback did not unwind completely") && onFiber:
		return "The unwinder did not end at g.stktopsp on a fiber stack: the trampoline's frame layout does not match what this toolchain's unwinder expects. " +
			"This is a bug in package fiber for this Go version; report the row as unsupported."
	}
	return ""
}
