// Copyright corobench authors. Software prefetch, linux/arm64 (twin:
// prefetch_amd64.s).

//go:build go1.26 && !go1.27 && linux

#include "go_asm.h"
#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0	// R0 = the address whose cache line to fetch
	PRFM	(R0), PLDL1KEEP	// hint: load the line into L1 for reading, keep it; never faults
	RET			// back to the caller (LR): nothing waits for the line

// func PrefetchStack(sp uintptr)
TEXT ·PrefetchStack(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	sp+0(FP), R0	// R0 = a suspended fiber's saved SP
	AND	$-64, R0, R0	// round down to the start of its cache line
	PRFM	(R0), PLDL1KEEP	// line 0: the saved LR slot and the lowest frame
	PRFM	64(R0), PLDL1KEEP	// line 1: the frames above it, up the call chain ...
	PRFM	128(R0), PLDL1KEEP	// line 2
	PRFM	192(R0), PLDL1KEEP	// line 3
	PRFM	256(R0), PLDL1KEEP	// line 4
	PRFM	320(R0), PLDL1KEEP	// line 5: PrefetchStackLines lines in all (keep in step)
	RET			// back to the caller (LR): nothing waits for the lines

// func PrefetchTop(c *Context)
TEXT ·PrefetchTop(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	c+0(FP), R0	// R0 = the Context, at the top of its fiber's stack (line-aligned)
	PRFM	(R0), PLDL1KEEP	// its first line: sp, pc, ..., state
	PRFM	64(R0), PLDL1KEEP	// its second: bp
	SUB	$768, R0, R1	// R1 = PrefetchTopLines lines below it (PRFM takes no negative offset)
	PRFM	(R1), PLDL1KEEP	// the lines below the Context, upwards: the fiber's first frames ...
	PRFM	64(R1), PLDL1KEEP	// line 11 below the Context
	PRFM	128(R1), PLDL1KEEP	// line 10 below the Context
	PRFM	192(R1), PLDL1KEEP	// line 9 below the Context
	PRFM	256(R1), PLDL1KEEP	// line 8 below the Context
	PRFM	320(R1), PLDL1KEEP	// line 7 below the Context
	PRFM	384(R1), PLDL1KEEP	// line 6 below the Context
	PRFM	448(R1), PLDL1KEEP	// line 5 below the Context
	PRFM	512(R1), PLDL1KEEP	// line 4 below the Context
	PRFM	576(R1), PLDL1KEEP	// line 3 below the Context
	PRFM	640(R1), PLDL1KEEP	// line 2 below the Context
	PRFM	704(R1), PLDL1KEEP	// ... up to the line just below the Context: PrefetchTopLines in all (keep in step)
	RET			// back to the caller (LR): nothing waits for the lines

// func PrefetchRing(ring unsafe.Pointer, head, mask, below uintptr)
//
// The three stages of a run-queue prefetch pipeline (see prefetch.go):
// slot head+ringRecordAhead's record, slot head+ringContextAhead's context,
// slot head+ringStackAhead's stack. Every
// load below reads a ring slot or a word its caller keeps valid (a queued
// record's first word, a live context's saved SP); everything else is a
// PRFM, which never faults.
TEXT ·PrefetchRing(SB), NOSPLIT|NOFRAME, $0-32
	MOVD	ring+0(FP), R0	// R0 = &ring[0]
	MOVD	head+8(FP), R1	// R1 = the index of the next record to run
	MOVD	mask+16(FP), R2	// R2 = len(ring)-1 (a power of two less one)

	// Stages 1 and 2 run on every pick here, one record each: amd64's
	// twin batches them eight at a time on every 8th head
	// (ringContextBatch), against the page walks that held its prefetches
	// from retiring; whether an arm64 core's PRFM waits for its walk was
	// not measured, so this file keeps the one-per-pick form.
	//
	// Stage 1, ringRecordAhead (16) picks ahead: the record's lines the
	// pick, the switch and the resume read (its first two: lines 0 and 1),
	// and on a pick through the scheduler line 3, the timer node (see
	// prefetch.go).
	ADD	$const_ringRecordAhead, R1, R3	// R3 = head+16
	AND	R2, R3, R3	// wrapped into the ring
	MOVD	(R0)(R3<<3), R4	// R4 = ring[(head+16)&mask], the record (nil: PRFM does not care)
	PRFM	(R4), PLDL1KEEP	// record line 0: its *Context (the next stage reads it)
	PRFM	64(R4), PLDL1KEEP	// record line 1
	MOVD	below+24(FP), R5	// R5 = below: a pick through the scheduler?
	CBZ	R5, ctx	// no (an inline pick): lines 0 and 1 only
	PRFM	192(R4), PLDL1KEEP	// record line 3: the timer node a timed wait's StartFresh reads

ctx:

	// Stage 2, ringContextAhead (8) picks ahead: the Context the record
	// names (its line was fetched eight picks ago), both lines Switch
	// reads.
	ADD	$const_ringContextAhead, R1, R3	// R3 = head+8
	AND	R2, R3, R3	// wrapped into the ring
	MOVD	(R0)(R3<<3), R4	// R4 = ring[(head+8)&mask], the record
	CBZ	R4, stack	// an empty slot: on to stage 3
	MOVD	(R4), R4	// R4 = the record's first word: its *Context
	CBZ	R4, stack	// none (an unstarted coroutine): nothing to fetch
	PRFM	(R4), PLDL1KEEP	// the Context's first line: sp, pc, ..., state
	PRFM	64(R4), PLDL1KEEP	// its second line: bp (amd64 keeps the frame pointer on the stack; arm64 here)

stack:
	// Stage 3, two picks ahead: the stack the saved SP points into:
	// PrefetchStack's lines upwards; if below is not 0 the line below
	// the SP for writing, where the fiber's next suspend pushes frames
	// (when it calls the pick); if below has RingDeep, the lines up to
	// the fiber's entry too.
	ADD	$const_ringStackAhead, R1, R3	// R3 = head+1
	AND	R2, R3, R3	// wrapped into the ring
	MOVD	(R0)(R3<<3), R4	// R4 = ring[(head+1)&mask], the record
	CBZ	R4, done	// an empty slot: nothing to follow
	MOVD	(R4), R4	// R4 = its *Context
	CBZ	R4, done	// none: no stack yet
	MOVD	Context_sp(R4), R4	// R4 = the saved SP (0 while running: a harmless hint)
	AND	$-64, R4, R4	// round down to the start of its cache line
	PRFM	(R4), PLDL1KEEP	// line 0: the saved LR slot and the lowest frame
	PRFM	64(R4), PLDL1KEEP	// line 1: the frames above it, up the call chain ...
	PRFM	128(R4), PLDL1KEEP	// line 2
	PRFM	192(R4), PLDL1KEEP	// line 3
	PRFM	256(R4), PLDL1KEEP	// line 4
	PRFM	320(R4), PLDL1KEEP	// line 5: PrefetchStackLines lines in all (keep in step)
	MOVD	below+24(FP), R5	// R5 = below: RingPick and RingDeep bits (see PrefetchRing)
	CBZ	R5, done	// 0: an inline pick needs only the six lines: done
	TBZ	$1, R5, wline	// no RingDeep (bit 1): a wake, which returns into its loop: the line below only
	PRFM	384(R4), PLDL1KEEP	// line 6: the rest of the chain up to the fiber's entry,
	PRFM	448(R4), PLDL1KEEP	// line 7: which a coroutine picked here often unwinds
	PRFM	512(R4), PLDL1KEEP	// line 8: (a cancelled wait returning, a body ending)
	PRFM	576(R4), PLDL1KEEP	// line 9
	PRFM	640(R4), PLDL1KEEP	// line 10
	PRFM	704(R4), PLDL1KEEP	// line 11: PrefetchRingDeepLines lines in all (keep in step)
wline:
	SUB	$64, R4, R4	// R4 = the line below the SP's
	PRFM	(R4), PSTL1KEEP	// fetch it for writing: the next suspend's frames
done:
	RET	// back to the caller (LR): nothing waits for the lines
