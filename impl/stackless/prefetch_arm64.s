// Software prefetch of a woken task's fields, arm64 (twin: prefetch_amd64.s).

#include "textflag.h"

// func prefetchTaskFields(addr uintptr)
TEXT ·prefetchTaskFields(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0	// R0 = the first of the three lines' addresses
	PRFM	(R0), PLDL1KEEP	// hint: load the line into L1 for reading, keep it; never faults
	ADD	$64, R0	// the next line
	PRFM	(R0), PLDL1KEEP	// prefetch it
	ADD	$64, R0	// the third
	PRFM	(R0), PLDL1KEEP	// prefetch it
	RET			// back to the caller (LR): nothing waits for the lines

// func prefetchTask(addr uintptr)
// Every line of [addr, addr+taskPrefetchSpan), as in prefetch_amd64.s (its
// twin): a hint every 64 bytes and one on the last byte.
TEXT ·prefetchTask(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0	// R0 = the task's Coro
	PRFM	(R0), PLDL1KEEP	// its first line; never faults
	PRFM	64(R0), PLDL1KEEP	// the next lines of the Coro
	PRFM	128(R0), PLDL1KEEP
	PRFM	192(R0), PLDL1KEEP
	PRFM	256(R0), PLDL1KEEP	// the task's own fields from byte 224 on
	PRFM	320(R0), PLDL1KEEP
	PRFM	384(R0), PLDL1KEEP
	ADD	$415, R0	// the span's last byte (PRFM's offset must be a multiple of 8)
	PRFM	(R0), PLDL1KEEP	// the line holding it
	RET			// back to the caller (LR): nothing waits for the lines
