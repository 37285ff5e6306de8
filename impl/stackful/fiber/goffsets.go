package fiber

import "unsafe"

// Offsets of the runtime.g fields that travel with a stack, shared by the
// assembly (as const_offStackLo ... from go_asm.h) and the self-test, so that
// the self-test checks exactly the offsets the switch uses.
//
// They are not part of any API. They were read, for go1.26 on amd64 and on
// arm64 (identical: runtime.g begins with 8-byte fields on every 64-bit
// port), from the go_asm.h the compiler writes for package runtime:
//
//	GOARCH=arm64 go build -work -a -o /dev/null runtime
//	grep -E 'define g_(stack|stackguard0|_panic|_defer|stktopsp) ' $WORK/b001/go_asm.h
//
// and they match type g in $GOROOT/src/runtime/runtime2.go: stack{lo, hi},
// stackguard0, stackguard1, _panic, _defer, m, sched (a 48-byte gobuf),
// syscallsp, syscallpc, syscallbp, stktopsp. The assembly is built only for
// that toolchain (build tags), and Supported re-checks them at run time.
const (
	offStackLo     = 0   // g.stack.lo: lowest usable address of the current stack
	offStackHi     = 8   // g.stack.hi: one past the highest
	offStackguard0 = 16  // g.stackguard0: compared with SP in every split-stack prologue
	offPanic       = 32  // g._panic: innermost active panic
	offDefer       = 40  // g._defer: innermost pending defer record
	offStktopsp    = 128 // g.stktopsp: SP a full unwind must end at

	// offPreemptShrink is g.preemptShrink (a bool), which the collector
	// sets when it scans a goroutine it cannot shrink at that moment; the
	// runtime's newstack then shrinks the current stack at the goroutine's
	// next synchronous preemption. A scan before the GC fence went up can
	// leave it set, and if that preemption lands while a fiber runs, the
	// runtime tries to shrink the fiber's stack: "fatal error: stack size
	// not a power of 2" (seen about once in a hundred semantic-suite runs
	// without GODEBUG=gcshrinkstackoff=1). Switch clears it whenever it
	// installs a stack. Read from go_asm.h as g_preemptShrink = 179 on both
	// arches, after preempt (177) and preemptStop (178).
	offPreemptShrink = 179

	// stackguardMarkerMin is the smallest value the runtime stores in
	// stackguard0 as a request rather than a bound (stackPreempt = -1314,
	// stackFork = -1234, stackForceMove = -275, as uintptrs). The switch
	// leaves such a marker in place.
	stackguardMarkerMin = ^uintptr(4096 - 1)
)

// gField reads the word at offset off of the runtime.g at g.
func gField(g unsafe.Pointer, off uintptr) uintptr { return *(*uintptr)(unsafe.Add(g, off)) }
