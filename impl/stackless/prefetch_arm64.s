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
