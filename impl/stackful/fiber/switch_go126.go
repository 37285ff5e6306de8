//go:build go1.26 && !go1.27 && linux && (amd64 || arm64)

package fiber

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// gateError is nil: this toolchain and architecture have a verified switch.
var gateError error

// Switch saves the running execution state into from and resumes to: a fresh
// context starts its entry function, a suspended one returns from the Switch
// call that suspended it. Switch returns when some later Switch resumes from.
//
// from must be the context that is running (or a zero Context, which then
// becomes the root); to must be fresh or suspended. Violations panic before
// anything is switched, because resuming a context that holds no valid state
// would jump to garbage.
//
// Switch is a one-way switch; a round trip (A→B→A) is two.
//
// Switch is written in assembly (switch_$GOARCH.s) so that the checks cost no
// extra call: it tests both states, marks from suspended and to running, and
// switches with a copy of switchContext's body (no jump between the two);
// on a violation it jumps to badSwitch instead.
//
//go:noescape
func Switch(from, to *Context)

// switchContext saves the running state into from and resumes to (assembly,
// switch_$GOARCH.s). It does no checking; Switch does, and then runs its
// own copy of this body. fiberMain and the trampoline use it, to leave a
// finished fiber.
//
//go:noescape
func switchContext(from, to *Context)

// fiberStartPC returns the address of the trampoline every fiber starts in.
func fiberStartPC() uintptr

// finishedResumedPC returns the address of the trap a finished fiber's
// Context.pc is set to (finishedResumed in switch_*.s).
func finishedResumedPC() uintptr

// switchEntries returns the entry addresses of Switch and switchContext
// (their assembly, ABI0, entries), which the alignment rule in
// switch_$GOARCH.s puts at multiples of switchEntryAlign.
func switchEntries() (sw, sc uintptr)

// switchEntryAlign is the alignment switch_$GOARCH.s gives Switch and
// switchContext (PCALIGN $64): a cache line, so the bare switch's cost does
// not depend on where the linker places them.
const switchEntryAlign = 64

// getg returns the current goroutine's runtime.g.
func getg() unsafe.Pointer

// startPC and finishedPC are fiberStartPC() and finishedResumedPC(), read
// once: each is an assembly call (never inlined), and every fiber start
// (initFrame) and finish (fiberMain) needs one, so a pooled lifecycle paid
// two calls for constants.
var startPC, finishedPC = fiberStartPC(), finishedResumedPC()

// initFrame sets c up to start in the trampoline: SP just below the reserved
// top slots (the trampoline itself writes the ones it uses, so Init touches
// no stack memory), no frame pointer, and g.stktopsp equal to that SP (the
// trampoline's frame SP, where a full unwind must end). Small enough to
// inline into Init and Restart.
func initFrame(c *Context) {
	sp := c.hi - topReserve
	c.sp = sp
	c.bp = 0
	c.pc = startPC
	c.stktopsp = sp
}

// mapProbeStack maps a private stack for the self-test's probe fiber.
func mapProbeStack(size int) (lo, hi uintptr, unmap func() error, err error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0, 0, nil, err
	}
	lo = uintptr(unsafe.Pointer(&mem[0]))
	return lo, lo + uintptr(size), func() error { return unix.Munmap(mem) }, nil
}
