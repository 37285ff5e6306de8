// Software prefetch of a timer node's record, amd64 (twin: timerprefetch_arm64.s).

#include "textflag.h"

// func prefetchTimerNode(addr uintptr)
// Every line of [addr-64, addr+192): a hint 64 bytes apart touches every
// line up to the last, and the last byte's hint the line it ends in.
TEXT ·prefetchTimerNode(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX	// AX = the node
	PREFETCHT0	-64(AX)	// the record's line before the node; never faults
	PREFETCHT0	(AX)	// the node's line
	PREFETCHT0	64(AX)	// the lines after it
	PREFETCHT0	128(AX)
	PREFETCHT0	191(AX)	// the line holding the span's last byte
	RET			// nothing waits for the lines
