// Package futex is futex(2) on a process-private 32-bit word: the kernel's
// sleep-while-unchanged primitive under glibc's condition variables and Go's
// own thread sleeps. The reactor's thread pool sleeps its idle threads on it
// (one kernel wake per hand-off, as a libuv pool thread), and benchrun's
// thread hand-off floor measures it bare, so both speak of the same
// mechanism. Linux only, as the reactor is.
package futex

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futex(2) operations on a process-private word (linux/futex.h; x/sys/unix
// does not name them).
const (
	waitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	wakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// ErrTimeout is Wait's error when its timeout passed with the word unchanged
// and nobody waking it.
var ErrTimeout = errors.New("futex: the wait timed out")

// Wait sleeps the calling thread while *word == val, until a Wake on word,
// a signal or a spurious wakeup, or until timeout passes (0: no timeout).
// It returns nil when woken, when *word already differs (EAGAIN) and on a
// signal (EINTR): the caller looks at the word again, as every futex user
// must. It goes through unix.Syscall6, not RawSyscall, so that Go's
// scheduler sees the thread block and lends its P to another thread.
func Wait(word *atomic.Uint32, val uint32, timeout time.Duration) error {
	var ts *unix.Timespec
	if timeout > 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), waitPrivate, uintptr(val),
		uintptr(unsafe.Pointer(ts)), 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.EINTR:
		return nil
	case unix.ETIMEDOUT:
		return ErrTimeout
	}
	return fmt.Errorf("futex(FUTEX_WAIT_PRIVATE): %w", errno)
}

// Wake wakes up to n threads sleeping in Wait on word.
func Wake(word *atomic.Uint32, n int) error {
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), wakePrivate, uintptr(n), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("futex(FUTEX_WAKE_PRIVATE): %w", errno)
	}
	return nil
}
