// Software prefetch of a woken task's fields, amd64 (twin: prefetch_arm64.s).

#include "textflag.h"

// func prefetchTaskFields(addr uintptr)
TEXT ·prefetchTaskFields(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the first of the three lines' addresses
	PREFETCHT0	(AX)	// hint: load the line into every cache level; never faults
	PREFETCHT0	64(AX)	// the next line
	PREFETCHT0	128(AX)	// and the third
	RET			// nothing waits for the lines
