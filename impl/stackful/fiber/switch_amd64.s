// Copyright corobench authors. Context switch between fiber stacks, linux/amd64.

//go:build go1.26 && !go1.27 && linux

#include "go_asm.h"
#include "textflag.h"

// Offsets of the runtime.g fields that travel with a stack: the constants
// are defined once, in goffsets.go, which records how they were verified for
// go1.26; the build tag above limits this file to that toolchain.
#define g_stack_lo	const_offStackLo	// g.stack.lo: lowest usable address of the current stack
#define g_stack_hi	const_offStackHi	// g.stack.hi: one past the highest address
#define g_stackguard0	const_offStackguard0	// g.stackguard0: compared with SP in every split-stack prologue
#define g__panic	const_offPanic	// g._panic: innermost active panic (its records live on the stack)
#define g__defer	const_offDefer	// g._defer: innermost pending defer record (often on the stack)
#define g_stktopsp	const_offStktopsp	// g.stktopsp: SP the traceback must end at, checked by full unwinds
#define g_preemptShrink	const_offPreemptShrink	// g.preemptShrink: "shrink the stack at the next synchronous safe point"

// Every value of g.stackguard0 at or above this (as unsigned) is a marker the
// runtime stores to force the next prologue into morestack (stackPreempt =
// -1314, stackFork = -1234, stackForceMove = -275 as uintptrs), not a stack
// bound. Switch leaves such a marker in place so that a pending preemption
// request is honoured on the new stack.
#define stackguardMarkerMin	$-4096

// Calling convention and registers.
//
// Switch and switchContext are ABI0 assembly functions. The Go compiler calls
// ABI0 functions with arguments on the stack and treats every register as
// clobbered across any call (Go has no callee-saved general-purpose or vector
// registers), so no register other than the fixed ones has to be preserved:
//   SP  - switched (saved in from, loaded from to);
//   BP  - the frame pointer; callee-saved in the Go ABI, switched;
//   R14 - the g register of ABIInternal: ABI0 code may clobber it, and the
//         compiler reloads it from TLS (and re-zeroes X15) after an ABI0 call
//         returns; g itself never changes here, only some of its fields.
// The resume PC of a suspended context is the return address Switch's
// caller pushed, and it stays where the CALL put it; the caller's frame
// pointer is stored in the word below it, and from.sp points at that word
// (so the resume PC is at 8(from.sp)). The frame pointer goes on the stack,
// not in the Context, so that what a switch reads of a Context (sp, pc,
// stktopsp, the stack bounds, panicp, deferp and state: 57 bytes) fits in
// the one cache line a line-aligned Context starts with; the stack word sits
// beside the resume PC, in the line a resume reads anyway. Writing the word
// below SP is safe: signals run on the signal stack, never below a
// goroutine's SP, and a NOSPLIT function may use far more than 8 bytes below
// the SP its caller's split check passed (the runtime's StackNosplit).
// How a context is resumed is chosen for the CPU's branch predictors:
//   - the return-address predictor holds, on top, the entry the CALL into
//     Switch just pushed: from's resume PC. When to's resume PC is the same
//     address (both sides suspended at the same call site: every hand-off
//     between coroutines blocked in the same API call), switchContext
//     resumes to with a RET. The RET is predicted, and it pops the entry the
//     CALL pushed, so the returns after it are predicted too, up to the
//     first frame where the two call chains differ.
//   - otherwise it pops the resume PC and jumps to it (as runtime·gogo
//     does): the indirect-branch predictor learns alternating targets (two
//     fibers switching from different sites, as the bare switch does),
//     where a RET would be mispredicted every time. This leaves the CALL's
//     entry on the return-address predictor, so returns right after such a
//     resume may be mispredicted.
//   - a fresh context is entered by a jump to its Context.pc (fiberStart),
//     which leaves the entry of the context that started it on top (its
//     resume PC, kept in Context.startRet, and the starter in
//     Context.starter). A finished fiber whose next context is its starter
//     returns through all of its frames to fiberStart and leaves by a jump
//     into switchContext, which resumes the starter by a RET if it resumes
//     at startRet, else by a jump; to any other context fiberMain switches
//     from its own frame, as a call (a return to fiberStart would be
//     mispredicted once the start's entry is gone, e.g. a fiber among a
//     thousand: ShutdownCycle read +19 % with every exit returning). A
//     lifecycle (main starts a fiber and waits, the fiber runs to its end,
//     main resumes) thus pops exactly main's own entry, and every return in
//     it is predicted.
// Before this, every resume was a jump: each switch left one entry behind,
// and every return up the resumed chain popped the entry of another frame
// (one mispredicted return per frame between the switch and the body).
//
// switchContext (and Switch, which carries a copy of its body) is NOSPLIT
// (it must not call morestack while the stack bounds and SP disagree) and,
// being assembly, is never asynchronously preempted (asm functions are not
// async safe points), so no signal-driven preemption observes the
// half-switched state. Both are SPWRITE functions (they write SP); the
// unwinder stops at such frames, but neither is ever on a stack the
// unwinder walks: a suspended stack is never scanned (no GC while fibers
// exist), and on a running stack the switch has already returned. Switch
// writes SP only after its checks, so its refusal path (a jump to
// badSwitch, which replaces Switch's frame) unwinds as before.

// Code alignment. Switch and switchContext each begin with PCALIGN $64: the
// assembler then gives the function 64-byte alignment (so the directive
// emits no padding and nothing extra is executed), and each entry starts a
// 64-byte cache line. Keep it, first in both, on any edit; the test
// TestSwitchEntryAlignment checks it.
// Why: Go's linker aligns functions to 32 bytes only, so without the rule
// each entry lands at 0 or 32 mod 64 depending on how much code the linker
// happened to place before this package, and the bare switch's figure
// followed that accident. Measured on the AMD EPYC (Zen 5, KVM guest) the
// project's figures come from, 30 single-CPU processes per build of
// `benchrun cell -scenario switch -impl stackful-asm` (median of the
// process medians, CPU time per one-way switch):
//   - the same tree with both entries at 32 mod 64 / at 0 mod 64:
//     4.60 / 4.31 ns, and the slow layout's processes spread over 4.41-4.83
//     (10th-90th percentile) against 4.22-4.42;
//   - an older tree that had them at 0 mod 64 by chance, moved to 32 mod 64
//     by a 32-byte filler placed before Switch: 4.32 -> 4.96 ns;
//   - in another run (4.79 both at 32 mod 64, 4.42 both at 0), only
//     switchContext at 32 mod 64 read 4.43, only Switch 4.52: the slow
//     level comes with both;
//   - builds that differ only in this alignment had the same data addresses
//     (both Contexts, both stacks, g) modulo 4096, and 64-byte aligned,
//     padded Contexts changed nothing: it is not data aliasing.
// In the slow layout Switch's tail jump lands in its own 64-byte line; no
// hardware counters were available to show which front-end structure pays
// for it. switch_arm64.s keeps the same rule (not measured there; it makes
// that layout independent of the rest of the binary too).

// func Switch(from, to *Context)
// Checks the two states (see the state constants in fiber.go), updates them
// and switches: the body after the checks is switchContext's, copied here
// (its twin: change both), so that the switch needs no jump and loads its
// arguments once. It loads to.sp and to.pc first, before the checks and the
// saves, into registers: the resumed stack's words are read through the
// new SP, and the loads of those words (and the returns after them) wait on
// the chain that yields it, so it starts as early as the arguments allow.
// switchContext does the same. Measured (session 17, AMD EPYC Zen 5,
// taskset -c 1, alternated, medians; notes s17/handoff.md): the fold with
// to.sp loaded into SP at the end, as before, read 23.00 cpu-ns per switch
// in stackful's BenchmarkPingPongCallSite real/twoSites against 20.72 with
// it loaded first (8 pairs, ratio median 1.083; sameSite 1.051); the two
// together against the old Switch + switchContext: 24.99 -> 20.96 there
// and the bare switch (BenchmarkSwitch) 6.21 -> 5.49 ns. Writing SP from
// memory late made the loads behind it wait, where a register written
// early does not.
// It writes SP only after every check has passed, so the refusal path can
// jump to Go code (badSwitch) that panics and unwinds.
TEXT ·Switch(SB), NOSPLIT|NOFRAME, $0-16
	PCALIGN	$64				// start a 64-byte line (see "Code alignment" above)
	MOVQ	from+0(FP), AX			// AX = from
	MOVQ	to+8(FP), BX			// BX = to
	MOVQ	Context_sp(BX), R9		// R9 = to.sp, read early (see above); used only after the checks
	MOVQ	Context_pc(BX), R10		// R10 = to.pc: fiberStart if to is fresh, else 0
	CMPQ	AX, BX				// switching to itself?
	JEQ	bad
	MOVBLZX	Context_state(AX), CX		// CX = from.state
	ORL	$2, CX				// empty (0) or running (2) give 2
	CMPL	CX, $const_stateRunning
	JNE	bad				// from is not the running context
	MOVBLZX	Context_state(BX), CX		// CX = to.state
	ORL	$2, CX				// fresh (1) or suspended (3) give 3
	CMPL	CX, $const_stateSuspended
	JNE	bad				// to cannot be resumed
	MOVB	$const_stateSuspended, Context_state(AX)	// from.state = suspended
	MOVB	$const_stateRunning, Context_state(BX)	// to.state = running

	// From here on switchContext's body (its twin), with to.sp in R9 and
	// to.pc in R10.
	MOVQ	0(SP), R8			// R8 = from's resume PC: the return predictor's top entry
	MOVQ	TLS, CX				// CX = address of the TLS slot holding g
	MOVQ	0(CX)(TLS*1), CX		// CX = g, the goroutine running every fiber

	// Save the running context into from (see switchContext).
	MOVQ	BP, -8(SP)			// the caller's frame pointer, below the resume PC
	LEAQ	-8(SP), DX			// DX = its address
	MOVQ	DX, Context_sp(AX)		// from.sp = DX: BP at 0(from.sp), the resume PC at 8(from.sp)
	MOVQ	g_stack_lo(CX), DX		// from.lo = g.stack.lo
	MOVQ	DX, Context_lo(AX)
	MOVQ	g_stack_hi(CX), DX		// from.hi = g.stack.hi
	MOVQ	DX, Context_hi(AX)
	MOVQ	g__panic(CX), DX		// from.panicp = g._panic: the panics in progress on this stack
	MOVQ	DX, Context_panicp(AX)
	MOVQ	g__defer(CX), DX		// from.deferp = g._defer: this stack's pending defers
	MOVQ	DX, Context_deferp(AX)
	MOVQ	g_stktopsp(CX), DX		// from.stktopsp = g.stktopsp
	MOVQ	DX, Context_stktopsp(AX)

	// Install to's stack description in g. From here until SP is loaded,
	// g describes a stack we are not yet on: no call, no split check.
	MOVQ	Context_lo(BX), DX		// DX = to.lo, kept for the stack guard below
	MOVQ	DX, g_stack_lo(CX)		// g.stack.lo = to.lo
	MOVQ	Context_hi(BX), SI
	MOVQ	SI, g_stack_hi(CX)		// g.stack.hi = to.hi
	MOVQ	Context_panicp(BX), SI
	MOVQ	SI, g__panic(CX)		// g._panic = to's panics
	MOVQ	Context_deferp(BX), SI
	MOVQ	SI, g__defer(CX)		// g._defer = to's defers
	MOVQ	Context_stktopsp(BX), SI
	MOVQ	SI, g_stktopsp(CX)		// g.stktopsp = to's top-of-stack SP
	MOVB	$0, g_preemptShrink(CX)		// g.preemptShrink = false (see switchContext)

	// g.stackguard0 = to.lo + StackGuard, unless it holds a preemption
	// marker (see switchContext, including the benign race).
	MOVQ	g_stackguard0(CX), SI		// SI = current guard
	CMPQ	SI, stackguardMarkerMin		// compare unsigned with 2^64-4096
	JCC	skeepguard			// SI >= 2^64-4096 (unsigned): a marker, keep it
	ADDQ	$const_stackGuard, DX		// DX = to.lo + StackGuard (928; 1728 under -race)
	MOVQ	DX, g_stackguard0(CX)		// g.stackguard0 = DX
skeepguard:

	// Resume to (see the top of this file for the three ways).
	MOVQ	R9, SP				// SP = to.sp: now on to's stack
	TESTQ	R10, R10			// to.pc != 0: to is fresh?
	JNE	sfresh				// a fresh fiber: jump to its trampoline
	MOVQ	0(SP), BP			// BP = to's frame pointer, saved below its resume PC
	MOVQ	8(SP), DX			// DX = to's resume PC, after its Switch call
	ADDQ	$8, SP				// pop the frame pointer's word: SP = where the CALL left it
	CMPQ	DX, R8				// the same as from's (the predictor's top entry)?
	JNE	sother
	RET					// yes: a predicted return that pops the CALL's entry
sother:
	ADDQ	$8, SP				// no: pop the resume PC, SP = Switch's caller's SP
	JMP	DX				// and jump to it (the indirect predictor's case)
sfresh:
	XORL	BP, BP				// BP = 0: the frame-pointer chain ends at the trampoline
	MOVQ	$0, Context_pc(BX)		// to.pc = 0: from now on to resumes at 8(to.sp), BP at 0(to.sp)
	MOVQ	R8, Context_startRet(BX)	// to.startRet = from's resume PC, left on the return predictor
	MOVQ	AX, Context_starter(BX)		// to.starter = from (fiberMain compares it with the next context)
	JMP	R10				// enter fiberStart (BX = to), leaving the predictor's entries alone
bad:
	JMP	·badSwitch(SB)			// badSwitch(from, to) panics, reported at the caller's line

// func switchContext(from, to *Context)
//
// Its body is copied into Switch after Switch's checks (Switch is its twin:
// change both).
TEXT ·switchContext(SB), NOSPLIT|NOFRAME, $0-16
	PCALIGN	$64				// start a 64-byte line (see "Code alignment" above)
	MOVQ	from+0(FP), AX			// AX = from: where the current state is saved
	MOVQ	to+8(FP), BX			// BX = to: the state to resume (a fresh fiber's trampoline reads it from BX)
	MOVQ	Context_sp(BX), R9		// R9 = to.sp, read first: see Switch
	MOVQ	Context_pc(BX), R10		// R10 = to.pc: fiberStart if to is fresh, else 0
	MOVQ	0(SP), R8			// R8 = from's resume PC: the return predictor's top entry
	MOVQ	TLS, CX				// CX = address of the TLS slot holding g
	MOVQ	0(CX)(TLS*1), CX		// CX = g, the goroutine running every fiber

	// Save the running context into from. 0(SP) is the return address into
	// Switch's caller (where from resumes); it stays on from's stack, the
	// caller's frame pointer goes in the word below it, and from.sp points
	// at that word. from.pc is already 0 (cleared when from started, or
	// never set for the root): 0 means "resume at 8(sp), BP at 0(sp)".
	MOVQ	BP, -8(SP)			// the caller's frame pointer, below the resume PC
	LEAQ	-8(SP), DX			// DX = its address
	MOVQ	DX, Context_sp(AX)		// from.sp = DX: BP at 0(from.sp), the resume PC at 8(from.sp)
	MOVQ	g_stack_lo(CX), DX		// from.lo = g.stack.lo
	MOVQ	DX, Context_lo(AX)
	MOVQ	g_stack_hi(CX), DX		// from.hi = g.stack.hi
	MOVQ	DX, Context_hi(AX)
	MOVQ	g__panic(CX), DX		// from.panicp = g._panic: the panics in progress on this stack
	MOVQ	DX, Context_panicp(AX)
	MOVQ	g__defer(CX), DX		// from.deferp = g._defer: this stack's pending defers
	MOVQ	DX, Context_deferp(AX)
	MOVQ	g_stktopsp(CX), DX		// from.stktopsp = g.stktopsp
	MOVQ	DX, Context_stktopsp(AX)

	// Install to's stack description in g. From here until SP is loaded,
	// g describes a stack we are not yet on: no call, no split check.
	MOVQ	Context_lo(BX), DX		// DX = to.lo, kept for the stack guard below
	MOVQ	DX, g_stack_lo(CX)		// g.stack.lo = to.lo
	MOVQ	Context_hi(BX), SI
	MOVQ	SI, g_stack_hi(CX)		// g.stack.hi = to.hi
	MOVQ	Context_panicp(BX), SI
	MOVQ	SI, g__panic(CX)		// g._panic = to's panics
	MOVQ	Context_deferp(BX), SI
	MOVQ	SI, g__defer(CX)		// g._defer = to's defers
	MOVQ	Context_stktopsp(BX), SI
	MOVQ	SI, g_stktopsp(CX)		// g.stktopsp = to's top-of-stack SP
	// Drop a stack-shrink request left by a collection that scanned this
	// goroutine before the GC fence went up: newstack would act on it at
	// the next synchronous preemption, on whatever stack is current, and a
	// fiber stack must never be shrunk (see goffsets.go). Skipping a
	// shrink is always safe; the collector asks again at its next scan.
	MOVB	$0, g_preemptShrink(CX)		// g.preemptShrink = false

	// g.stackguard0 = to.lo + StackGuard, unless it holds a preemption
	// marker. (A marker stored by another thread between this load and the
	// store below is lost; the runtime's newstack has the same benign race,
	// and sysmon re-requests preemption of a goroutine that keeps running.)
	MOVQ	g_stackguard0(CX), SI		// SI = current guard
	CMPQ	SI, stackguardMarkerMin		// compare unsigned with 2^64-4096
	JCC	keepguard			// SI >= 2^64-4096 (unsigned): a marker, keep it
	ADDQ	$const_stackGuard, DX		// DX = to.lo + StackGuard (928; 1728 under -race)
	MOVQ	DX, g_stackguard0(CX)		// g.stackguard0 = DX
keepguard:

	// Resume to (see the top of this file for the three ways).
	MOVQ	R9, SP				// SP = to.sp: now on to's stack
	TESTQ	R10, R10			// to.pc != 0: to is fresh?
	JNE	fresh				// a fresh fiber: jump to its trampoline
	MOVQ	0(SP), BP			// BP = to's frame pointer, saved below its resume PC
	MOVQ	8(SP), DX			// DX = to's resume PC, after its Switch call
	ADDQ	$8, SP				// pop the frame pointer's word: SP = where the CALL left it
	CMPQ	DX, R8				// the same as from's (the predictor's top entry)?
	JNE	other
	RET					// yes: a predicted return that pops the CALL's entry
other:
	ADDQ	$8, SP				// no: pop the resume PC, SP = Switch's caller's SP
	JMP	DX				// and jump to it (the indirect predictor's case)
fresh:
	XORL	BP, BP				// BP = 0: the frame-pointer chain ends at the trampoline
	MOVQ	$0, Context_pc(BX)		// to.pc = 0: from now on to resumes at 8(to.sp), BP at 0(to.sp)
	MOVQ	R8, Context_startRet(BX)	// to.startRet = from's resume PC, left on the return predictor
	MOVQ	AX, Context_starter(BX)		// to.starter = from (fiberMain compares it with the next context)
	JMP	R10				// enter fiberStart (BX = to), leaving the predictor's entries alone

// fiberStart is the first frame of every fiber. switchContext enters it by
// jumping to it with SP = Context.sp as set by initFrame (32 bytes below the
// stack's top: 0(SP) is the argument slot of the call below and 8(SP),
// 16(SP) its two results), BP = 0 (the frame-pointer chain ends here)
// and BX = the *Context being started.
//
// fiberMain returns when the fiber has finished, with the finished context
// and the one to continue with; fiberStart then jumps (no CALL: see above on
// the predictor) into switchContext, whose arguments from+0(FP) and
// to+8(FP) are at 8(SP) and 16(SP) when it is entered with this SP: exactly
// where fiberMain's results are; fiberMain returns only when next is the
// fiber's starter (else it switches itself). Its "from's resume PC" at 0(SP)
// is set to from.startRet, the entry the start left on the return
// predictor, so that next is resumed by a RET if it resumes there (see
// above). switchContext
// saves the finished fiber's state into its Context, which is never resumed
// (fiberMain marked it finished and set its pc to finishedResumed, so even a
// switch that bypassed Switch's check would land in that trap).
//
// TOPFRAME tells the unwinder that this frame is the top of the stack: a
// traceback (panic, runtime.Callers, a GC scan) stops here instead of reading
// a return address that does not exist. A full unwind then checks that the
// SP it reached equals g.stktopsp; with NOFRAME and a $0 frame the SP of this
// frame is the SP it was entered with, which initFrame stores as stktopsp.
TEXT ·fiberStart(SB), NOSPLIT|NOFRAME|TOPFRAME, $0-0
	MOVQ	BX, 0(SP)			// argument 0 of fiberMain (ABI0: on the stack) = the *Context
	CALL	·fiberMain(SB)			// run the fiber; returns (from, next) at 8(SP), 16(SP)
	MOVQ	8(SP), AX			// AX = from, the finished context
	MOVQ	Context_startRet(AX), DX	// DX = the resume PC of the context that started it
	MOVQ	DX, 0(SP)			// as "from's resume PC": a RET if next resumes there, else a jump
	JMP	·switchContext(SB)		// switchContext(from, next): leave the finished fiber for good

// finishedResumed is where a finished fiber would resume if anything ever
// switched to it without Switch's state check (fiberMain sets its Context.pc
// here): it calls the Go fatal error instead of running on a stack that may
// already be reused.
TEXT ·finishedResumed(SB), NOSPLIT|NOFRAME, $0-0
	CALL	·finishedFiberResumed(SB)	// fatal error; does not return
	INT	$3				// breakpoint trap if it ever did

// func finishedResumedPC() uintptr
// Returns the address of finishedResumed.
TEXT ·finishedResumedPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	$·finishedResumed(SB), AX	// AX = &finishedResumed
	MOVQ	AX, ret+0(FP)			// return it
	RET

// func fiberStartPC() uintptr
// Returns the address of fiberStart (its ABI0 entry), the resume PC of a
// fresh fiber.
TEXT ·fiberStartPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	$·fiberStart(SB), AX		// AX = &fiberStart
	MOVQ	AX, ret+0(FP)			// return it
	RET

// func switchEntries() (sw, sc uintptr)
// Returns the ABI0 entry addresses of Switch and switchContext, for the test
// of the alignment rule (see "Code alignment" above).
TEXT ·switchEntries(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	$·Switch(SB), AX		// AX = Switch's entry
	MOVQ	AX, sw+0(FP)			// return it
	MOVQ	$·switchContext(SB), AX	// AX = switchContext's entry
	MOVQ	AX, sc+8(FP)			// return it
	RET

// func getg() unsafe.Pointer
// Returns the address of the current goroutine's g, for the self-test.
TEXT ·getg(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	TLS, CX				// CX = address of the TLS slot holding g
	MOVQ	0(CX)(TLS*1), AX		// AX = g
	MOVQ	AX, ret+0(FP)			// return it
	RET
