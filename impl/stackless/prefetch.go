//go:build amd64 || arm64

package stackless

// prefetchTaskFields asks the CPU to start loading the three cache lines
// from addr on (addr, addr+64, addr+128) and returns at once: hints that
// never fault, whatever addr is. A timer's wake-up uses it on the task's
// own fields (coTimer.OnTimer), which its Resume reads only after the rest
// of the timer phase and the tasks queued ahead of it have run. One call
// for the three lines: the function is assembly, so each call costs a
// call. prefetch_amd64.s and prefetch_arm64.s are its two bodies;
// prefetch_other.go makes it a no-op elsewhere.
//
//go:noescape
func prefetchTaskFields(addr uintptr)
