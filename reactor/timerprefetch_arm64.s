// Software prefetch of a timer node's record, arm64 (twin: timerprefetch_amd64.s).

#include "textflag.h"

// func prefetchTimerNode(addr uintptr)
// Every line of [addr-64, addr+192), as in timerprefetch_amd64.s.
TEXT ·prefetchTimerNode(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0	// R0 = the node
	SUB	$64, R0	// the record's line before the node
	PRFM	(R0), PLDL1KEEP	// hint: load it into L1; never faults
	PRFM	64(R0), PLDL1KEEP	// the node's line
	PRFM	128(R0), PLDL1KEEP	// the lines after it
	PRFM	192(R0), PLDL1KEEP
	ADD	$255, R0	// the span's last byte, addr+191
	PRFM	(R0), PLDL1KEEP	// the line holding it
	RET			// back to the caller (LR): nothing waits for the lines
