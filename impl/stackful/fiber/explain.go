package fiber

import "strings"

// StackSizeOption names, in crash explanations and errors, the option that
// sets the fiber stack size. The harness sets it to its own flag (for
// example "benchrun -stack-size") before running cells; the default names the
// pool's configuration field.
var StackSizeOption = "the fiber stack size (stackpool.Config.StackSize)"

// ExplainCrash recognises, in the stderr of a process that died, the fatal
// errors that misuse of fibers produces, and returns an explanation to append
// to the failed cell's log; "" if it recognises none. The runtime's own
// message cannot be changed from outside the runtime (it throws on its
// system stack, with no hook), so this is how a fiber stack overflow comes
// to name the stack-size option.
func ExplainCrash(stderr string) string {
	onFiber := strings.Contains(stderr, fiberStartName) || strings.Contains(stderr, fiberMainName)
	var out []string
	switch {
	case strings.Contains(stderr, GoexitMessage):
		out = append(out, "runtime.Goexit ran inside a fiber (t.FailNow, t.Fatal, t.Skip and runtime.Goexit call it). "+
			"A fiber cannot end its host goroutine; report failures with t.Error or a returned error.")
	case (strings.Contains(stderr, "fatal error: stack size not a power of 2") || strings.Contains(stderr, "fatal error: runtime: split stack overflow")) &&
		(strings.Contains(stderr, "runtime.morestack") || strings.Contains(stderr, "runtime.newstack")) && onFiber:
		out = append(out, "A fiber stack overflowed: code running in a fiber needed more stack than the fiber has, and a fiber stack cannot grow "+
			"(the runtime tried to copy it to a larger stack; fiber stacks have a size that is not a power of two precisely so that this fails cleanly). "+
			"Raise "+StackSizeOption+", or make the scenario body use less stack.")
	case strings.Contains(stderr, "fatal error: stack size not a power of 2") && strings.Contains(stderr, "runtime.shrinkstack"):
		out = append(out, "The garbage collector tried to shrink a fiber stack, so a collection ran while fibers existed, which the GC fence must prevent "+
			"(an explicit runtime.GC or debug.FreeOSMemory in the run?). Run the child with GODEBUG="+GODEBUGShrinkOff+" as defence in depth, and find the collection.")
	case strings.Contains(stderr, "fatal error: stack not a power of 2"):
		out = append(out, "The runtime tried to free a fiber stack as one of its own (stackfree): a goroutine that was running on a fiber stack ended, "+
			"for example through runtime.Goexit, or the stack was shrunk by a garbage collection while fibers existed.")
	case strings.Contains(stderr, "fatal error: stack size not a power of 2") && onFiber:
		out = append(out, "The runtime tried to allocate a new stack for a goroutine that was running on a fiber stack (growth on overflow, or shrinking by a collection). "+
			"If the traceback shows runtime.newstack, raise "+StackSizeOption+".")
	case strings.Contains(stderr, "traceback did not unwind completely") && onFiber:
		out = append(out, "The unwinder did not end at g.stktopsp on a fiber stack: the trampoline's frame layout does not match what this toolchain's unwinder expects. "+
			"This is a bug in package fiber for this Go version; report the row as unsupported.")
	}
	return strings.Join(out, " ")
}
