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

// prefetchTask asks the CPU to start loading every cache line of the
// taskPrefetchSpan bytes from addr on: a task's whole Coro and the three
// lines of its own fields past it (prefetchTaskFields' lines), when addr is
// a Coro. Hints that never fault, whatever addr is. The scheduler calls it
// on the head of the run queue, the task it resumes next, as a task arms a
// sleep or timeout (Scheduler.addTimer), so the next Resume does not wait
// for its header and fields. Its two bodies (prefetch_amd64.s,
// prefetch_arm64.s) are unrolled for taskPrefetchSpan;
// TestTaskPrefetchSpan keeps the three in step with HeaderSize.
//
//go:noescape
func prefetchTask(addr uintptr)
