// Software prefetch of a woken task's fields, amd64 (twin: prefetch_arm64.s).

#include "textflag.h"

// func prefetchTaskFields(addr uintptr)
TEXT ·prefetchTaskFields(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the first of the three lines' addresses
	PREFETCHT0	(AX)	// hint: load the line into every cache level; never faults
	PREFETCHT0	64(AX)	// the next line
	PREFETCHT0	128(AX)	// and the third
	RET			// nothing waits for the lines

// func prefetchTask(addr uintptr)
// Every line of [addr, addr+taskPrefetchSpan): a hint 64 bytes apart from
// addr on touches every line up to the last one, and the last byte's hint
// the line it ends in (addr need not start a line). prefetch.go's
// taskPrefetchSpan is 416 = HeaderSize (224) + 3 lines of fields.
TEXT ·prefetchTask(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the task's Coro
	PREFETCHT0	(AX)	// its first line: task, sched, handlers, the waker's status
	PREFETCHT0	64(AX)	// the next lines of the Coro: the timer node, the event slot
	PREFETCHT0	128(AX)
	PREFETCHT0	192(AX)	// the outcome (err), id, prio, unwinding
	PREFETCHT0	256(AX)	// the task's own fields from byte 224 on
	PREFETCHT0	320(AX)
	PREFETCHT0	384(AX)
	PREFETCHT0	415(AX)	// the line holding the span's last byte
	RET			// nothing waits for the lines
