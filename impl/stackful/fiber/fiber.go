package fiber

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"unsafe"
)

// Context is one point of execution that can be suspended and resumed: a
// fiber, or the goroutine's own (root) stack.
//
// The zero Context is a valid "from" argument to Switch and then represents
// the root stack. A Context must stay at one address from Init (or its first
// Switch) until it has finished: a started fiber keeps a pointer to its own
// Context, so keep Contexts in heap-allocated structs, never by value in a
// slice that may grow. go vet's copylocks check reports copies.
type Context struct {
	_ noCopy

	// The first seven words and state are what a switch reads and writes
	// (switch_*.s, through the go_asm.h offsets Context_sp, ...): 57
	// bytes, so a Context that starts on a cache line (stackful puts its
	// contexts there) is one line for amd64's switch to miss on, not two
	// (TestContextHotLine). The frame pointer is not among them on amd64:
	// its switch saves it on the suspended stack, below the resume PC (see
	// switch_amd64.s); arm64 keeps it in bp, in the second line. lo and
	// hi, and panicp and deferp, stay adjacent: arm64 moves those pairs
	// with LDP/STP. They are uintptrs, not pointers, because the assembly
	// writes them without write barriers and because the collector must
	// not follow them (it never runs while a fiber exists; see HoldGC).
	sp       uintptr // saved stack pointer (amd64: the address of the saved frame pointer, right below the return address into Switch's caller; arm64: that caller's SP)
	pc       uintptr // amd64: the trampoline while fresh, a trap once finished, else 0 (the resume PC is then at 8(sp)); arm64: the resume PC (Switch's return address, the trampoline, or the trap)
	stktopsp uintptr // saved g.stktopsp: the SP the unwinder must reach at the top frame
	lo       uintptr // saved g.stack.lo
	hi       uintptr // saved g.stack.hi
	//lint:ignore U1000 read and written by switch_*.s
	panicp uintptr // saved g._panic
	//lint:ignore U1000 read and written by switch_*.s
	deferp uintptr // saved g._defer
	state  state   // checked and set by Switch
	// ownGoexit: the entry function reports runtime.Goexit itself
	// (EntryReportsGoexit), so fiberMain defers no check of its own. In
	// the padding after state: the asm's offsets do not move.
	ownGoexit bool

	// arm64: the saved frame pointer (R29). amd64 keeps it on the stack
	// (0(sp)) and never uses this word.
	//lint:ignore U1000 read and written by switch_arm64.s
	bp uintptr
	// amd64: the resume PC of the context that started this fiber, the
	// return predictor's top entry when the fiber was entered by a jump;
	// the fiber's exit resumes by RET only a context resuming there
	// (switch_amd64.s). Unused on arm64.
	//lint:ignore U1000 read and written by switch_amd64.s
	startRet uintptr
	// amd64: the address of the Context that started this fiber (written
	// with startRet; a uintptr, compared only, never followed).
	//lint:ignore U1000 written by switch_amd64.s
	starter uintptr

	entry func() *Context // fresh fibers only; cleared when the fiber finishes
}

// noCopy makes go vet's copylocks check report copies of a Context.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// state tracks a Context's life so that Switch can refuse a resumption that
// would jump to garbage.
type state uint8

// The values are chosen for the assembly Switch: from is acceptable iff
// state|2 == 2 (empty or running), to iff state|2 == 3 (fresh or suspended).
const (
	stateEmpty     state = 0 // zero value: nothing saved yet (a root not yet switched away from)
	stateFresh     state = 1 // Init done, never run
	stateRunning   state = 2 // currently executing
	stateSuspended state = 3 // saved by Switch, can be resumed
	stateFinished  state = 4 // entry returned; may be Init'ed again
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "empty (never initialised nor suspended)"
	case stateFresh:
		return "fresh (initialised, not started)"
	case stateRunning:
		return "running"
	case stateSuspended:
		return "suspended"
	case stateFinished:
		return "finished"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// topReserve is the number of bytes initFrame reserves at the top of a fiber
// stack for the trampoline's frame. amd64 uses 0(SP) as the argument slot of
// the trampoline's call; arm64 uses 0(RSP) as a zero saved-LR slot and
// 8(RSP) as the argument slot (the trampoline writes them; Init touches no
// stack memory). 32 keeps SP 16-byte aligned, which the arm64 hardware
// requires for SP-relative accesses, and leaves two spare words.
const topReserve = 32

// MinStackSize is the smallest stack Init accepts: one page less the 16 bytes
// stackpool takes off a power-of-two size. It holds the runtime's stack
// guard (928 bytes at the bottom, 1728 under -race, reserved for the
// runtime's NOSPLIT chains), the fiber's start-up frames and a small body;
// real bodies need more.
const MinStackSize = 4096 - 16

// Init prepares c to run entry on the stack [lo, hi) the first time it is
// resumed by Switch. The memory must not be managed by the Go runtime (use
// mmap, e.g. package stackpool), must stay mapped until the fiber has
// finished or been abandoned, and its size hi−lo must not be a power of two
// (so that the runtime's attempts to grow, shrink or free it are clean fatal
// errors; see the package doc).
//
// When entry returns a Context, the fiber finishes and switches to it; entry
// must not return nil. A finished Context may be Init'ed again, with the same
// stack or another; Init on a Context that is running or suspended is an
// error, because that fiber's frames would be lost silently.
func (c *Context) Init(lo, hi uintptr, entry func() *Context) error {
	if err := Supported(); err != nil {
		return err
	}
	if entry == nil {
		return errors.New("fiber: Init with a nil entry function")
	}
	if c.state == stateRunning || c.state == stateSuspended {
		return fmt.Errorf("fiber: Init on a %v context; only an empty, fresh or finished context can be initialised", c.state)
	}
	if lo == 0 || hi <= lo {
		return fmt.Errorf("fiber: stack bounds [%#x, %#x) are empty or inverted", lo, hi)
	}
	if lo%16 != 0 || hi%16 != 0 {
		return fmt.Errorf("fiber: stack bounds [%#x, %#x) must be 16-byte aligned", lo, hi)
	}
	size := hi - lo
	if size < MinStackSize {
		return fmt.Errorf("fiber: stack of %d bytes is smaller than MinStackSize (%d); raise %s", size, MinStackSize, StackSizeOption)
	}
	if size&(size-1) == 0 {
		return fmt.Errorf("fiber: stack size %d is a power of two; the runtime could then copy or free the fiber stack as its own (stack growth, GC shrinking), so use a size that is not, e.g. %d (stackpool does this)", size, size-4096)
	}
	*c = Context{lo: lo, hi: hi, state: stateFresh, entry: entry}
	initFrame(c)
	return nil
}

// Restart prepares a finished context to run entry, on the stack its Init
// gave it, the first time it is resumed by Switch: Init for a context that
// is known to be good, for a scheduler that runs one coroutine after
// another on the same stack (stackful's spare context). Init's checks
// (support, stack bounds, alignment, size) held when c was Init'ed, and a
// context's bounds never change (a fiber's switches save back the bounds
// it was entered with), so Restart checks only what can have changed: c
// must be finished (Restart on a fresh, running or suspended context
// would lose that fiber, as Init refuses to) and entry not nil. A
// finished context has no panics or defers of its own left (its entry
// returned), so those two words are cleared, not kept.
func (c *Context) Restart(entry func() *Context) error {
	if c.state != stateFinished || entry == nil {
		return &restartError{c.state, entry == nil}
	}
	c.state, c.entry = stateFresh, entry
	c.panicp, c.deferp = 0, 0
	initFrame(c)
	return nil
}

// restartError is Restart's refusal: made without a call, so that Restart
// stays within the inliner's budget (a call costs most of it) and a
// pooled start (stackful's spare context) makes no call to restart.
type restartError struct {
	state    state // the context's state when Restart was called
	nilEntry bool  // Restart was given a nil entry function
}

func (e *restartError) Error() string {
	if e.nilEntry {
		return "fiber: Restart with a nil entry function"
	}
	return fmt.Sprintf("fiber: Restart on a %v context; only a finished context can be restarted (Init a new one)", e.state)
}

// EntryReportsGoexit promises that c's entry function reports a
// runtime.Goexit itself: every line of Go it runs is under a deferred call
// that calls ExitOnGoexit when it did not return (a scheduler's context
// loop has one such call anyway, to recover its coroutines' panics). The
// fiber's start then defers no Goexit check of its own: one deferred call
// less per fiber start (package stackful's contexts; its
// BenchmarkSpawnLifecycleSplit measures it). Restart keeps the promise,
// Init clears it.
func (c *Context) EntryReportsGoexit() { c.ownGoexit = true }

// ExitOnGoexit, called by a deferred function that runs because its frame
// is unwinding, ends the process with GoexitMessage if runtime.Goexit is
// what unwinds it (a Goexit on a fiber cannot continue: goexitInFiber), and
// returns if a panic is. It walks the stack (runtime.Callers): call it only
// when the deferred function's frame did not return normally.
func ExitOnGoexit() {
	if calledByGoexit() {
		goexitInFiber()
	}
}

// Running reports whether c is the context currently executing.
func (c *Context) Running() bool { return c.state == stateRunning }

// Finished reports whether c's entry function has returned.
func (c *Context) Finished() bool { return c.state == stateFinished }

// Resumable reports whether Switch may resume c: it is fresh or suspended.
func (c *Context) Resumable() bool { return c.state == stateFresh || c.state == stateSuspended }

// Bounds returns the stack bounds [lo, hi) that c runs on. For the root they
// are known only after the first switch away from it.
func (c *Context) Bounds() (lo, hi uintptr) { return c.lo, c.hi }

// badSwitch panics with a description of a refused Switch. The assembly
// Switch tail-jumps here (same arguments, same return address) before it has
// changed anything.
//
//lint:ignore U1000 jumped to from Switch in switch_*.s
//go:noinline
func badSwitch(from, to *Context) {
	if from == to {
		panic("fiber: Switch from a context to itself")
	}
	if from.state != stateRunning && from.state != stateEmpty {
		panic(fmt.Sprintf("fiber: Switch from a %v context; from must be the running context (or a zero Context for the root)", from.state))
	}
	panic(fmt.Sprintf("fiber: Switch to a %v context; only fresh or suspended contexts can be resumed", to.state))
}

// fiberMain is called by the trampoline (fiberStart in switch_*.s) on the
// fiber's own stack, with the *Context that was just resumed. When the
// fiber has finished and the context to continue with is the one that
// started it (amd64), it returns c, now finished, and that context, which
// the trampoline passes on to switchContext by a jump (not a call: see
// switch_amd64.s on the return-address predictor); to any other context it
// switches from its own frame and never returns. Either way switching is
// the fiber's last act.
//
//lint:ignore U1000 called from fiberStart in switch_*.s
func fiberMain(c *Context) (from, next *Context) {
	// Run c's entry and detect runtime.Goexit (goexitInFiber). A panic is
	// left alone (not recovered here): it unwinds to the trampoline and
	// crashes the program like an unrecovered panic in a goroutine, with
	// the original traceback. This was a function of its own (runEntry);
	// in this frame it is one call and one frame less per fiber start:
	// a pooled lifecycle (stackful's BenchmarkSpawnLifecycleSplit,
	// part=sched, 12 alternated pairs, taskset -c 1) read 58.6 -> 57.5 ns
	// (median; min 56.2 -> 55.6). The deferred call is open-coded (no
	// loop here) and never runs when the fiber switches away from this
	// frame below: nothing is left to run then (the entry returned).
	// An entry that reports Goexit itself (EntryReportsGoexit) has this
	// check made in a deferred call of its own, which also covers the
	// whole entry: the deferred call is then not registered here (a
	// conditional defer stays open-coded: one bit tested at the return).
	returned := false
	if !c.ownGoexit {
		defer func() {
			if !returned {
				ExitOnGoexit()
			}
		}()
	}
	next = c.entry()
	returned = true
	// All of the fiber's defers have run (the entry returned), so g._defer and
	// g._panic hold nothing of this stack: the final switch saves them into
	// c, which is finished and never resumed.
	if next == nil || next == c || !next.Resumable() {
		fatalf("fiber: entry function returned %s as the context to continue with; it must return a fresh or suspended context other than itself", describe(c, next))
	}
	c.state = stateFinished
	c.entry = nil
	c.pc = finishedPC // amd64: a raw resume of c would jump to this trap (finishedResumed)
	next.state = stateRunning
	if c.starter == uintptr(unsafe.Pointer(next)) {
		// The starter is resumed: return to the trampoline, which resumes
		// it by a RET if it resumes where it started this fiber.
		return c, next
	}
	// Any other context: switch from here. Returning to the trampoline
	// would be one more return, mispredicted once the start's predictor
	// entry is gone (a fiber among many), and the switch is a jump anyway.
	switchContext(c, next)
	fatalf("fiber: a finished fiber was resumed; its stack may already be reused")
	return nil, nil
}

// finishedFiberResumed is called by the trap a finished fiber's saved
// resume PC points at (finishedResumed in switch_*.s): only a switch that
// bypassed Switch's state check could get there.
//
//lint:ignore U1000 called from finishedResumed in switch_*.s
func finishedFiberResumed() {
	fatalf("fiber: a finished fiber was resumed; its stack may already be reused")
}

func describe(c, next *Context) string {
	switch {
	case next == nil:
		return "nil"
	case next == c:
		return "its own context"
	}
	return "a " + next.state.String() + " context"
}

// calledByGoexit reports whether the deferred function that calls it was
// invoked by runtime.Goexit (rather than by a panic). Go 1.26 runs deferred
// calls from the frame of runtime.Goexit or runtime.gopanic respectively, so
// the first of those two on the call stack tells which one is unwinding. It
// runs only on the failure path.
func calledByGoexit() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		switch f.Function {
		case "runtime.Goexit":
			return true
		case "runtime.gopanic":
			return false
		}
		if !more {
			return false
		}
	}
}

// GoexitMessage is the first line printed when runtime.Goexit is called inside
// a fiber; ExplainCrash and the tests look for it.
const GoexitMessage = "fiber: fatal: runtime.Goexit called inside a fiber"

// goexitInFiber reports runtime.Goexit inside a fiber and ends the process.
// Letting Goexit continue would finish the goroutine that hosts all fibers
// and make the runtime free the fiber stack as its own (its gfput calls
// stackfree on our mmap'd memory); there is no state to continue from.
func goexitInFiber() {
	fmt.Fprintf(os.Stderr, "%s (t.FailNow, t.Fatal, t.Fatalf, t.Skip, t.SkipNow and runtime.Goexit all call it).\n"+
		"Goexit would end the goroutine that hosts every fiber and hand this fiber's stack to the Go runtime's allocator; the process cannot continue.\n"+
		"Report failures from code running in a fiber with t.Error/t.Errorf or by returning an error instead.\n\n%s",
		GoexitMessage, debug.Stack())
	os.Exit(2)
}

// fatalf reports an unrecoverable misuse on a fiber and ends the process. A
// panic would not do: it would unwind into the trampoline and be reported as
// an unrecovered panic, with the misuse buried in the message.
func fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprintf(os.Stderr, "%s\n%s", msg, debug.Stack())
	os.Exit(2)
}
