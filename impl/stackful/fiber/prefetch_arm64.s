// Copyright corobench authors. Software prefetch, linux/arm64 (twin:
// prefetch_amd64.s).

//go:build go1.26 && !go1.27 && linux

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
