// Copyright corobench authors. Software prefetch, linux/arm64 (twin:
// prefetch_amd64.s).

//go:build go1.26 && !go1.27 && linux

#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0	// R0 = the address whose cache line to fetch
	PRFM	(R0), PLDL1KEEP	// hint: load the line into L1 for reading, keep it; never faults
	RET			// back to the caller (LR): nothing waits for the line
