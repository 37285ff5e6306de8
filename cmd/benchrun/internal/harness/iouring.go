package harness

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring. The reactor reads and writes regular files on its thread pool,
// as libuv does; an io_uring path could replace the pool for file IO where
// the kernel offers it. None is built: the fileio scenario's reads go
// through the pool on every kernel. What each run records (the io-uring
// config line) is whether this kernel would have offered it, probed at the
// start of the run by creating a ring (io_uring_setup), so that a reader
// knows whether "not used" means "not available" or "not built".

// ioUringParams is struct io_uring_params (linux/io_uring.h, 120 bytes):
// the kernel fills in the features and the rings' offsets.
type ioUringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  [10]uint32 // struct io_sqring_offsets
	CQOff                                                                  [10]uint32 // struct io_cqring_offsets
}

// ioUringProbe is what probeIOUring found.
type ioUringProbe struct {
	err      error  // io_uring_setup's error; nil when a ring was created
	features uint32 // IORING_FEAT_* the kernel reported
	disabled string // /proc/sys/kernel/io_uring_disabled, "" when unreadable
}

// probeIOUring creates (and closes) a one-entry ring.
func probeIOUring() ioUringProbe {
	var pr ioUringProbe
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
		pr.disabled = strings.TrimSpace(string(b))
	}
	var p ioUringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		pr.err = errno
		return pr
	}
	unix.Close(int(fd))
	pr.features = p.Features
	return pr
}

// ioUringConfig is the io-uring config value.
func ioUringConfig(pr ioUringProbe) string {
	disabled := "kernel.io_uring_disabled unreadable"
	if pr.disabled != "" {
		disabled = "kernel.io_uring_disabled=" + pr.disabled
	}
	avail := fmt.Sprintf("available (io_uring_setup made a ring, features %#x; %s)", pr.features, disabled)
	if pr.err != nil {
		avail = fmt.Sprintf("unavailable (io_uring_setup: %v; %s)", pr.err, disabled)
	}
	return avail + "; not used: the reactor's file IO runs on its thread pool (no io_uring path is built)"
}
