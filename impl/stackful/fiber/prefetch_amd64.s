// Copyright corobench authors. Software prefetch, linux/amd64 (twin:
// prefetch_arm64.s).

//go:build go1.26 && !go1.27 && linux

#include "textflag.h"

// func Prefetch(addr uintptr)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the address whose cache line to fetch
	PREFETCHT0	(AX)	// hint: load the line into every cache level; never faults, even on a bad address
	RET			// back to the caller: nothing waits for the line
