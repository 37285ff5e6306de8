// Package timerslack lowers the calling OS thread's timer slack to 1 ns for
// the duration of a runtime's Run, and restores it.
//
// Linux adds up to the thread's timer slack (50 µs by default, prctl
// PR_SET_TIMERSLACK) to the deadline of a blocking wait such as
// epoll_pwait2, so a 100 µs sleep wakes tens of µs late. Slack is a property
// of the thread, so the caller must have locked its goroutine to the thread
// (runtime.LockOSThread) from Lower until Restore; the runtimes in impl/ do
// that around their blocking waits (see docs/design.md §4, the reactor).
package timerslack

import "golang.org/x/sys/unix"

// Slack is the timer slack Lower sets, in nanoseconds.
const Slack = 1

// Lower sets the calling thread's timer slack to Slack and returns the value
// it had, for Restore. On error (prctl refused, or not Linux semantics under
// an emulator) the slack is unchanged.
func Lower() (prev uintptr, err error) {
	prev, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if prev == Slack {
		return prev, nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, Slack, 0); errno != 0 {
		return 0, errno
	}
	return prev, nil
}

// Restore sets the calling thread's timer slack back to prev (a value Lower
// returned), on the thread Lower ran on.
func Restore(prev uintptr) {
	if prev != Slack {
		unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, prev, 0)
	}
}

// Current returns the calling thread's timer slack in nanoseconds.
func Current() (uintptr, error) {
	s, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return s, nil
}
