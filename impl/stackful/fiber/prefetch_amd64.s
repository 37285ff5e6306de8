// Copyright corobench authors. Software prefetch, linux/amd64 (twin:
// prefetch_arm64.s).

//go:build go1.26 && !go1.27 && linux

#include "go_asm.h"
#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the address whose cache line to fetch
	PREFETCHT0	(AX)	// hint: load the line into every cache level; never faults, even on a bad address
	RET			// back to the caller: nothing waits for the line

// func PrefetchStack(sp uintptr)
TEXT ·PrefetchStack(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	sp+0(FP), AX	// AX = a suspended fiber's saved SP
	ANDQ	$-64, AX	// round down to the start of its cache line
	PREFETCHT0	(AX)	// line 0: Switch's return address and the lowest frame
	PREFETCHT0	64(AX)	// line 1: the frames above it, up the call chain ...
	PREFETCHT0	128(AX)	// line 2
	PREFETCHT0	192(AX)	// line 3
	PREFETCHT0	256(AX)	// line 4
	PREFETCHT0	320(AX)	// line 5: PrefetchStackLines lines in all (keep in step)
	RET			// back to the caller: nothing waits for the lines

// func PrefetchTop(c *Context)
TEXT ·PrefetchTop(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	c+0(FP), AX	// AX = the Context, at the top of its fiber's stack (line-aligned)
	PREFETCHT0	(AX)	// its line: what Switch reads (sp, pc, ..., state)
	PREFETCHT0	-64(AX)	// the lines below it, downwards: the fiber's first frames ...
	PREFETCHT0	-128(AX)	// line 2 below it
	PREFETCHT0	-192(AX)	// line 3 below it
	PREFETCHT0	-256(AX)	// line 4 below it
	PREFETCHT0	-320(AX)	// line 5 below it
	PREFETCHT0	-384(AX)	// line 6 below it
	PREFETCHT0	-448(AX)	// line 7 below it
	PREFETCHT0	-512(AX)	// line 8 below it
	PREFETCHT0	-576(AX)	// line 9 below it
	PREFETCHT0	-640(AX)	// line 10 below it
	PREFETCHT0	-704(AX)	// line 11 below it
	PREFETCHT0	-768(AX)	// ... PrefetchTopLines lines below it in all (keep in step)
	RET			// back to the caller: nothing waits for the lines

// func PrefetchRing(ring unsafe.Pointer, head, mask, below uintptr)
//
// The three stages of a run-queue prefetch pipeline (see prefetch.go):
// on every ringContextBatch-th head, the records of the ringContextBatch
// slots from head+ringRecordAhead and the contexts of those from
// head+ringContextAhead; on every head, slot head+ringStackAhead's stack.
// Every
// load below reads a ring slot or a word its caller keeps valid (a queued
// record's first word, a live context's saved SP); everything else is a
// PREFETCH, which never faults.
TEXT ·PrefetchRing(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ	ring+0(FP), DI	// DI = &ring[0]
	MOVQ	head+8(FP), SI	// SI = the index of the next record to run
	MOVQ	mask+16(FP), DX	// DX = len(ring)-1 (a power of two less one)

	// Stages 1 and 2 run on every ringContextBatch-th (8th) head only,
	// each for eight records at once. Each Context is on a page of its
	// own (its stack's top page, one page per coroutine), and records
	// need not be in queue order in the heap, so once thousands are
	// queued these prefetches miss the TLB, and a prefetch does not
	// retire before its page walk ends: eight in a row walk together,
	// where one per pick left each walk alone at the head of the reorder
	// buffer (see prefetch.go for the figures). The batches at
	// successive multiples of 8 tile the ring, so every slot is covered
	// once per lap.
	TESTQ	$(const_ringContextBatch-1), SI	// head a multiple of the batch?
	JNZ	stack	// no: this pick starts no walks, on to stage 3

	// Stage 1: the records 16 to 23 picks ahead (ringRecordAhead): their
	// lines the pick, the switch and the resume read (lines 0 and 1), and
	// on a pick through the scheduler (below != 0) line 3, the timer node
	// a sleep's restart reads (see prefetch.go). An inline pick's third
	// prefetch names line 1 again, which costs no new line: R9 picks the
	// offset without a branch.
	MOVQ	$64, R9	// R9 = line 1's offset (an inline pick: nothing more)
	MOVQ	$192, R10	// R10 = line 3's offset: the record's timer node
	CMPQ	below+24(FP), $0	// a pick through the scheduler?
	CMOVQNE	R10, R9	// then R9 = line 3's offset
	LEAQ	const_ringRecordAhead(SI), AX	// AX = head+16
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = ring[(head+16)&mask], the record (nil: PREFETCH does not care)
	PREFETCHT0	(AX)	// record line 0: its *Context (stage 2 reads it)
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+1)(SI), AX	// AX = head+17
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+2)(SI), AX	// AX = head+18
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+3)(SI), AX	// AX = head+19
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+4)(SI), AX	// AX = head+20
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+5)(SI), AX	// AX = head+21
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+6)(SI), AX	// AX = head+22
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)
	LEAQ	(const_ringRecordAhead+7)(SI), AX	// AX = head+23: the batch's last (ringContextBatch in all; keep in step)
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = its record
	PREFETCHT0	(AX)	// record line 0
	PREFETCHT0	64(AX)	// record line 1
	PREFETCHT0	(AX)(R9*1)	// record line 3 if below != 0, else line 1 again (R9)

	// Stage 2: the Contexts of the records 8 to 15 picks ahead
	// (ringContextAhead; stage 1 fetched those records 8 picks ago, in the
	// batch before this one): the one line Switch reads of a line-aligned
	// Context (the saved registers and the state byte; fiber.go).
	LEAQ	const_ringContextAhead(SI), AX	// AX = head+8
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record (in cache: stage 1 fetched it 8 picks ago, as the next seven)
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx1	// then nothing to follow
	MOVQ	(AX), AX	// AX = the record's first word: its *Context (nil: PREFETCH does not care)
	PREFETCHT0	(AX)	// the Context's first line: sp, pc, ..., state
ctx1:
	LEAQ	(const_ringContextAhead+1)(SI), AX	// AX = head+9
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx2	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx2:
	LEAQ	(const_ringContextAhead+2)(SI), AX	// AX = head+10
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx3	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx3:
	LEAQ	(const_ringContextAhead+3)(SI), AX	// AX = head+11
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx4	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx4:
	LEAQ	(const_ringContextAhead+4)(SI), AX	// AX = head+12
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx5	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx5:
	LEAQ	(const_ringContextAhead+5)(SI), AX	// AX = head+13
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx6	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx6:
	LEAQ	(const_ringContextAhead+6)(SI), AX	// AX = head+14
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	ctx7	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line
ctx7:
	LEAQ	(const_ringContextAhead+7)(SI), AX	// AX = head+15: the batch's last (ringContextBatch in all; keep in step)
	ANDQ	DX, AX	// wrapped into the ring
	MOVQ	(DI)(AX*8), AX	// AX = the record
	TESTQ	AX, AX	// an empty slot?
	JZ	stack	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	PREFETCHT0	(AX)	// the Context's first line

stack:
	// Stage 3, on every head, two picks ahead: the stack the saved SP
	// points into (the Context's line was fetched 7 to 14 picks ago, and
	// its page, which the stack's top lines share, walked then):
	// PrefetchStack's lines upwards; if below is not 0 the line below the
	// SP for writing, where the fiber's next suspend pushes frames (when
	// it calls the pick); if below has RingDeep, the lines up to the
	// fiber's entry too.
	ADDQ	$const_ringStackAhead, SI	// SI = head+1
	ANDQ	DX, SI	// wrapped into the ring
	MOVQ	(DI)(SI*8), AX	// AX = ring[(head+1)&mask], the record
	TESTQ	AX, AX	// an empty slot?
	JZ	done	// then nothing to follow
	MOVQ	(AX), AX	// AX = its *Context
	TESTQ	AX, AX	// none?
	JZ	done	// then no stack yet
	MOVQ	Context_sp(AX), AX	// AX = the saved SP (0 while running: a harmless hint)
	ANDQ	$-64, AX	// round down to the start of its cache line
	PREFETCHT0	(AX)	// line 0: Switch's return address and the lowest frame
	PREFETCHT0	64(AX)	// line 1: the frames above it, up the call chain ...
	PREFETCHT0	128(AX)	// line 2
	PREFETCHT0	192(AX)	// line 3
	PREFETCHT0	256(AX)	// line 4
	PREFETCHT0	320(AX)	// line 5: PrefetchStackLines lines in all (keep in step)
	MOVQ	below+24(FP), CX	// CX = below: RingPick and RingDeep bits (see PrefetchRing)
	TESTQ	CX, CX	// a pick through the scheduler?
	JEQ	done	// no: an inline pick needs only the six lines: done
	TESTQ	$const_RingDeep, CX	// a pick that may unwind its whole chain?
	JEQ	wline	// no (a wake, which returns into its loop): the six lines and the line below
	PREFETCHT0	384(AX)	// line 6: the rest of the chain up to the fiber's entry,
	PREFETCHT0	448(AX)	// line 7: which a coroutine picked here often unwinds
	PREFETCHT0	512(AX)	// line 8: (a cancelled wait returning, a body ending)
	PREFETCHT0	576(AX)	// line 9
	PREFETCHT0	640(AX)	// line 10
	PREFETCHT0	704(AX)	// line 11: PrefetchRingDeepLines lines in all (keep in step)
wline:
	SUBQ	$64, AX	// AX = the line below the SP's
	BYTE	$0x0f; BYTE $0x0d; BYTE $0x08	// PREFETCHW (AX): fetch it for writing (the Go assembler has no mnemonic; 0F 0D /1, ModRM 08 = [RAX])
done:
	RET	// back to the caller: nothing waits for the lines
