// Copyright corobench authors. Context switch between fiber stacks, linux/arm64.

//go:build go1.26 && !go1.27 && linux

#include "go_asm.h"
#include "textflag.h"

// Offsets of the runtime.g fields that travel with a stack (goffsets.go; the
// same on amd64 and arm64).
#define g_stack_lo	const_offStackLo	// g.stack.lo
#define g_stack_hi	const_offStackHi	// g.stack.hi (adjacent to lo: moved as a pair)
#define g_stackguard0	const_offStackguard0	// g.stackguard0
#define g__panic	const_offPanic	// g._panic
#define g__defer	const_offDefer	// g._defer (adjacent to _panic: moved as a pair)
#define g_stktopsp	const_offStktopsp	// g.stktopsp
#define g_preemptShrink	const_offPreemptShrink	// g.preemptShrink (a bool)

// Registers (Go arm64 ABI, ABI0 and ABIInternal alike):
//   RSP - switched;
//   R29 - frame pointer, callee-saved in Go: switched;
//   R30 - link register: on entry it holds the return address into Switch's
//         caller, which is the resume PC; it is saved as Context.pc and, on
//         resume, loaded back into R30 before RET, so the resumed code sees
//         exactly the state of a normal return;
//   R28 - g: fixed in all Go code; it is not changed (same goroutine), only
//         the fields it points to;
//   R26 - closure context, R27 - linker temporary (REGTMP), R18 - platform
//         register: none is live across a call, nothing to save.
// Go has no callee-saved general-purpose or floating-point registers (unlike
// the C ABI's R19-R28 and D8-D15): the compiler treats every other register
// as clobbered by any call, so only RSP, R29 and the resume PC are state.
// As on amd64 the function is NOSPLIT, never asynchronously preempted
// (assembly), and a SPWRITE frame the unwinder never has to walk through.

// Code alignment: Switch and switchContext each begin with PCALIGN $64, so
// that each entry starts a 64-byte cache line wherever the linker places
// the package (see "Code alignment" in switch_amd64.s for the rule, the
// amd64 measurement behind it, and the test that checks it).

// func Switch(from, to *Context)
// Checks and updates the two states, then switches: the body after the
// checks is switchContext's, copied here (its twin: change both), as on
// amd64 (see switch_amd64.s: no branch between the two, the arguments
// loaded once, to.sp loaded first). It writes RSP only after every check
// has passed, so the refusal path can still branch to Go code (badSwitch)
// that panics and unwinds.
TEXT ·Switch(SB), NOSPLIT|NOFRAME, $0-16
	PCALIGN	$64				// start a 64-byte line (see "Code alignment" above)
	MOVD	from+0(FP), R0			// R0 = from
	MOVD	to+8(FP), R1			// R1 = to
	MOVD	Context_sp(R1), R7		// R7 = to.sp, read early (see switch_amd64.s); used only after the checks
	CMP	R0, R1				// switching to itself?
	BEQ	bad
	MOVBU	Context_state(R0), R2		// R2 = from.state
	ORR	$2, R2				// empty (0) or running (2) give 2
	CMP	$const_stateRunning, R2
	BNE	bad				// from is not the running context
	MOVBU	Context_state(R1), R3		// R3 = to.state
	ORR	$2, R3				// fresh (1) or suspended (3) give 3
	CMP	$const_stateSuspended, R3
	BNE	bad				// to cannot be resumed
	MOVD	$const_stateSuspended, R2
	MOVB	R2, Context_state(R0)		// from.state = suspended
	MOVD	$const_stateRunning, R3
	MOVB	R3, Context_state(R1)		// to.state = running

	// From here on switchContext's body (its twin), with to.sp in R7.
	// Save the running context into from.
	MOVD	RSP, R2				// R2 = SP (NOFRAME, $0: it is the caller's SP)
	MOVD	R2, Context_sp(R0)		// from.sp
	MOVD	R29, Context_bp(R0)		// from.bp = caller's frame pointer
	MOVD	R30, Context_pc(R0)		// from.pc = LR = where from resumes
	LDP	g_stack_lo(g), (R3, R4)		// R3, R4 = g.stack.lo, g.stack.hi
	STP	(R3, R4), Context_lo(R0)	// from.lo, from.hi
	LDP	g__panic(g), (R3, R4)		// R3, R4 = g._panic, g._defer: this stack's panics and defers
	STP	(R3, R4), Context_panicp(R0)	// from.panicp, from.deferp
	MOVD	g_stktopsp(g), R3		// R3 = g.stktopsp
	MOVD	R3, Context_stktopsp(R0)	// from.stktopsp

	// Install to's stack description in g. Until RSP is loaded, g describes
	// a stack we are not on yet: no call, no split check in between.
	LDP	Context_lo(R1), (R3, R4)	// R3 = to.lo (kept for the guard), R4 = to.hi
	STP	(R3, R4), g_stack_lo(g)		// g.stack.lo, g.stack.hi = to's bounds
	LDP	Context_panicp(R1), (R5, R6)	// R5, R6 = to's panics and defers
	STP	(R5, R6), g__panic(g)		// g._panic, g._defer
	MOVD	Context_stktopsp(R1), R5	// R5 = to.stktopsp
	MOVD	R5, g_stktopsp(g)		// g.stktopsp
	MOVB	ZR, g_preemptShrink(g)		// g.preemptShrink = false: drop a shrink request (see switch_amd64.s)

	// g.stackguard0 = to.lo + StackGuard unless it holds a preemption marker
	// (unsigned >= 2^64-4096; see switch_amd64.s, including the benign race).
	MOVD	g_stackguard0(g), R5		// R5 = current guard
	MOVD	$-4096, R6			// R6 = smallest marker value
	CMP	R6, R5				// flags = R5 - R6
	BHS	skeepguard			// R5 >= R6 unsigned: a marker, keep it
	ADD	$const_stackGuard, R3, R5	// R5 = to.lo + StackGuard (928; 1728 under -race)
	MOVD	R5, g_stackguard0(g)		// g.stackguard0 = R5
skeepguard:

	// Resume to.
	MOVD	R7, RSP				// SP = to.sp: now on to's stack
	MOVD	Context_bp(R1), R29		// frame pointer (0 for a fresh fiber)
	MOVD	Context_pc(R1), R30		// LR = to.pc
	RET					// branch to LR: after to's Switch call, or to fiberStart
bad:
	B	·badSwitch(SB)			// badSwitch(from, to) panics, reported at the caller's line

// func switchContext(from, to *Context)
//
// Its body is copied into Switch after Switch's checks (Switch is its twin:
// change both).
TEXT ·switchContext(SB), NOSPLIT|NOFRAME, $0-16
	PCALIGN	$64				// start a 64-byte line (see "Code alignment" above)
	MOVD	from+0(FP), R0			// R0 = from: where the current state is saved
	MOVD	to+8(FP), R1			// R1 = to: the state to resume (a fresh fiber's trampoline reads it from R1)
	MOVD	Context_sp(R1), R7		// R7 = to.sp, read first (see Switch)

	// Save the running context into from.
	MOVD	RSP, R2				// R2 = SP (NOFRAME, $0: it is the caller's SP)
	MOVD	R2, Context_sp(R0)		// from.sp
	MOVD	R29, Context_bp(R0)		// from.bp = caller's frame pointer
	MOVD	R30, Context_pc(R0)		// from.pc = LR = where from resumes
	LDP	g_stack_lo(g), (R3, R4)		// R3, R4 = g.stack.lo, g.stack.hi
	STP	(R3, R4), Context_lo(R0)	// from.lo, from.hi
	LDP	g__panic(g), (R3, R4)		// R3, R4 = g._panic, g._defer: this stack's panics and defers
	STP	(R3, R4), Context_panicp(R0)	// from.panicp, from.deferp
	MOVD	g_stktopsp(g), R3		// R3 = g.stktopsp
	MOVD	R3, Context_stktopsp(R0)	// from.stktopsp

	// Install to's stack description in g. Until RSP is loaded, g describes
	// a stack we are not on yet: no call, no split check in between.
	LDP	Context_lo(R1), (R3, R4)	// R3 = to.lo (kept for the guard), R4 = to.hi
	STP	(R3, R4), g_stack_lo(g)		// g.stack.lo, g.stack.hi = to's bounds
	LDP	Context_panicp(R1), (R5, R6)	// R5, R6 = to's panics and defers
	STP	(R5, R6), g__panic(g)		// g._panic, g._defer
	MOVD	Context_stktopsp(R1), R5	// R5 = to.stktopsp
	MOVD	R5, g_stktopsp(g)		// g.stktopsp
	MOVB	ZR, g_preemptShrink(g)		// g.preemptShrink = false: drop a shrink request (see switch_amd64.s)

	// g.stackguard0 = to.lo + StackGuard unless it holds a preemption marker
	// (unsigned >= 2^64-4096; see switch_amd64.s, including the benign race).
	MOVD	g_stackguard0(g), R5		// R5 = current guard
	MOVD	$-4096, R6			// R6 = smallest marker value
	CMP	R6, R5				// flags = R5 - R6
	BHS	keepguard			// R5 >= R6 unsigned: a marker, keep it
	ADD	$const_stackGuard, R3, R5	// R5 = to.lo + StackGuard (928; 1728 under -race)
	MOVD	R5, g_stackguard0(g)		// g.stackguard0 = R5
keepguard:

	// Resume to.
	MOVD	R7, RSP				// SP = to.sp: now on to's stack
	MOVD	Context_bp(R1), R29		// frame pointer (0 for a fresh fiber)
	MOVD	Context_pc(R1), R30		// LR = to.pc
	RET					// branch to LR: after to's Switch call, or to fiberStart

// fiberStart is the first frame of every fiber (see switch_amd64.s). It is
// entered from switchContext with RSP = Context.sp as set by initFrame (32
// bytes below the stack's top, 16-byte aligned; 0(RSP) is a zero saved-LR
// slot, 8(RSP) the argument slot of the call below and 16(RSP), 24(RSP) its
// results) and R1 = the *Context.
// TOPFRAME stops the unwinder here; NOFRAME with a $0 frame makes this frame's
// SP the SP it was entered with, which initFrame stores as g.stktopsp.
TEXT ·fiberStart(SB), NOSPLIT|NOFRAME|TOPFRAME, $0-0
	MOVD	ZR, 0(RSP)			// saved-LR slot of this frame = 0: no caller
	MOVD	R1, 8(RSP)			// argument 0 of fiberMain (ABI0: at 8(RSP), above the LR slot)
	BL	·fiberMain(SB)			// run the fiber; returns (from, next) at 16(RSP), 24(RSP)
	// fiberMain returns only to resume the fiber's starter (Context.starter),
	// which only amd64 records, so on arm64 it switches from its own frame
	// and this is not reached; it keeps the shared contract. Leave the
	// finished fiber by a branch into switchContext, not a BL (see
	// switch_amd64.s on the return-address predictor): its arguments
	// from+0(FP), to+8(FP) are at 8(RSP), 16(RSP) with this RSP.
	MOVD	16(RSP), R0			// R0 = from (the finished context)
	MOVD	24(RSP), R1			// R1 = next
	MOVD	R0, 8(RSP)			// switchContext's from
	MOVD	R1, 16(RSP)			// switchContext's to
	MOVD	$·finishedResumed(SB), R30	// LR, saved as the finished fiber's resume PC: the trap below
	B	·switchContext(SB)		// switchContext(from, next): leave the finished fiber for good

// finishedResumed is where a finished fiber would resume if anything ever
// switched to it without Switch's state check (its amd64 twin is in
// switch_amd64.s): the Go fatal error instead of running on a stack that
// may already be reused.
TEXT ·finishedResumed(SB), NOSPLIT|NOFRAME, $0-0
	BL	·finishedFiberResumed(SB)	// fatal error; does not return
	UNDEF					// trap if it ever did

// func finishedResumedPC() uintptr
// Returns the address of finishedResumed.
TEXT ·finishedResumedPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	$·finishedResumed(SB), R0	// R0 = &finishedResumed
	MOVD	R0, ret+0(FP)			// return it
	RET

// func fiberStartPC() uintptr
TEXT ·fiberStartPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	$·fiberStart(SB), R0		// R0 = &fiberStart (ABI0 entry)
	MOVD	R0, ret+0(FP)			// return it
	RET

// func switchEntries() (sw, sc uintptr)
// Returns the entry addresses of Switch and switchContext, for the test of
// the alignment rule.
TEXT ·switchEntries(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	$·Switch(SB), R0		// R0 = Switch's entry
	MOVD	R0, sw+0(FP)			// return it
	MOVD	$·switchContext(SB), R0	// R0 = switchContext's entry
	MOVD	R0, sc+8(FP)			// return it
	RET

// func getg() unsafe.Pointer
TEXT ·getg(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	g, R0				// R0 = g (R28)
	MOVD	R0, ret+0(FP)			// return it
	RET
