package reactor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanotime is the Go runtime's CLOCK_MONOTONIC reading in nanoseconds, read
// through the vDSO (about 20 ns, no syscall). unix.ClockGettime would be a real
// syscall. The runtime keeps this linkname for compatibility ("Do not remove or
// change the type signature"), and its clock is the same CLOCK_MONOTONIC that
// epoll_pwait2 and timerfd measure, so deadlines computed from it mean what
// the kernel thinks they mean.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// epollPwait2 calls epoll_pwait2(2) (Linux 5.11+), whose timeout is a timespec
// with nanosecond resolution, unlike epoll_wait's milliseconds. ts == nil
// blocks indefinitely. raw issues it as RawSyscall6, which does not tell Go's
// scheduler about the call (no entersyscall/exitsyscall), so the calling
// goroutine keeps its P while the kernel blocks it. A zero timeout is always
// raw: the call cannot block, so telling the scheduler is pure cost. A
// blocking call is raw only under Options.HoldP; see Options.HoldP for why,
// and for what that costs the process's other goroutines.
func epollPwait2(epfd int, events []unix.EpollEvent, ts *unix.Timespec, raw bool) (int, error) {
	var r uintptr
	var errno unix.Errno
	if raw || ts != nil && ts.Sec == 0 && ts.Nsec == 0 {
		r, _, errno = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)),
			uintptr(unsafe.Pointer(ts)), 0, 0)
	} else {
		r, _, errno = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)),
			uintptr(unsafe.Pointer(ts)), 0, 0)
	}
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// epollWait is epoll_wait(2) with a millisecond timeout (-1 = forever),
// issued as epoll_pwait with a nil signal mask: the same call, and the only
// one of the two that arm64 has. Like epollPwait2 it is raw for a zero
// timeout, and for a blocking one under Options.HoldP.
func epollWait(epfd int, events []unix.EpollEvent, msec int, raw bool) (int, error) {
	var r uintptr
	var errno unix.Errno
	if raw || msec == 0 {
		r, _, errno = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	} else {
		r, _, errno = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	}
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// readCounter drains an eventfd or timerfd: both hold a uint64 counter that a
// read returns and resets. EAGAIN (already drained) is not an error.
func readCounter(fd int) error {
	var buf [8]byte
	for {
		_, err := unix.Read(fd, buf[:])
		switch err {
		case nil, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return err
		}
	}
}
