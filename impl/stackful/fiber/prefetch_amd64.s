// Copyright corobench authors. Software prefetch, linux/amd64 (twin:
// prefetch_arm64.s).

//go:build go1.26 && !go1.27 && linux

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
