package loadgen

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring, enough for the generator's sends and receives on
// sockets: x/sys/unix has the syscall numbers but no ring helpers, and the
// generator needs only three things of one: queue a SEND or RECV, submit
// everything queued and collect the completions in one io_uring_enter, and
// close. The layout below is linux/io_uring.h's (a stable kernel ABI).
//
// Why a ring at all: on the epoll path every request costs the generator a
// write and a read of its own, plus a share of the epoll_wait polls, each a
// kernel entry and exit; on the ring, one io_uring_enter per loop turn
// carries every send that came due and every receive that completed.
//
// The ring is single-threaded: it must be used by the OS thread that
// created it (IORING_SETUP_SINGLE_ISSUER), and completions are produced only
// while that thread is inside io_uring_enter (IORING_SETUP_DEFER_TASKRUN):
// nothing interrupts the spinning generator to complete a receive, and no
// completion is posted behind its back. Kernels that refuse those flags get
// a ring with IORING_SETUP_COOP_TASKRUN (completions run at the thread's
// next kernel entry), then a plain one.

// Setup flags, opcodes and offsets (linux/io_uring.h).
const (
	uringSetupCoopTaskrun        = 1 << 8
	uringSetupSingleIssuer       = 1 << 12
	uringSetupDeferTaskrun       = 1 << 13
	uringFeatSingleMmap          = 1 << 0
	uringEnterGetEvents          = 1 << 0
	uringOpSend                  = 26
	uringOpRecv                  = 27
	uringOffSQRing               = 0
	uringOffCQRing               = 0x8000000
	uringOffSQEs                 = 0x10000000
	uringMaxEntries              = 32768 // the kernel's IORING_MAX_ENTRIES
	uringSQEBytes, uringCQEBytes = 64, 16
)

// uringParams is struct io_uring_params (120 bytes). SQOff is struct
// io_sqring_offsets {head, tail, ring_mask, ring_entries, flags, dropped,
// array, resv1, user_addr (u64)}; CQOff is struct io_cqring_offsets {head,
// tail, ring_mask, ring_entries, overflow, cqes, flags, resv1, user_addr}.
type uringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  [10]uint32
	CQOff                                                                  [10]uint32
}

// uringSQE is struct io_uring_sqe (64 bytes), with the fields a SEND or
// RECV uses named: addr/len is the buffer, opFlags the msg flags.
type uringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, opFlags  uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFdIn    int32
	addr3, pad    uint64
}

// uringCQE is struct io_uring_cqe (16 bytes): res is the syscall-style
// result (bytes, or -errno).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringSetup is io_uring_setup(2). A variable so that a test can make the
// kernel refuse, and see the generator fall back to epoll and say why.
var uringSetup = func(entries uint32, p *uringParams) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// ring is one io_uring. Invariants: local is the SQ tail as this thread
// sees it (entries queued with get); the kernel's tail is published only by
// enter. Each queued SQE's array slot holds its own index (set once in
// newRing), so SQE i is submitted as slot i.
type ring struct {
	fd                  int
	mem, sqeMem         []byte // the rings' mapping (one, or the SQ ring's) and the SQE array's
	cqMem               []byte // the CQ ring's own mapping, when the kernel has no single mmap
	sqHead, sqTail      *uint32
	sqMask, sqEntries   uint32
	sqes                []uringSQE
	cqHead, cqTail      *uint32
	cqMask              uint32
	cqes                []uringCQE
	local               uint32
	flags               string // the setup flags the kernel accepted, for the report
	enters, enterErrors int64
}

// newRing makes a ring of at least entries submission slots (a power of
// two, at most uringMaxEntries); the completion ring is twice that.
func newRing(entries uint32) (*ring, error) {
	n := uint32(1)
	for n < entries {
		n <<= 1
	}
	if n > uringMaxEntries {
		return nil, fmt.Errorf("io_uring: %d entries wanted, the kernel allows %d", entries, uringMaxEntries)
	}
	tries := []struct {
		flags uint32
		name  string
	}{
		{uringSetupSingleIssuer | uringSetupDeferTaskrun, "SINGLE_ISSUER|DEFER_TASKRUN"},
		{uringSetupCoopTaskrun, "COOP_TASKRUN"},
		{0, "no flags"},
	}
	var p uringParams
	fd, err := -1, error(nil)
	r := &ring{fd: -1}
	for _, t := range tries {
		p = uringParams{Flags: t.flags}
		if fd, err = uringSetup(n, &p); err == nil {
			r.flags = t.name
			break
		}
		if err != unix.EINVAL { // EINVAL: an unknown flag; anything else is final
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	r.fd = fd
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *ring) mmap(p *uringParams) error {
	sqSize := int(p.SQOff[6] + p.SQEntries*4)
	cqSize := int(p.CQOff[5] + p.CQEntries*uringCQEBytes)
	size := sqSize
	if p.Features&uringFeatSingleMmap != 0 {
		size = max(sqSize, cqSize)
	}
	var err error
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	if r.mem, err = unix.Mmap(r.fd, uringOffSQRing, size, prot, flags); err != nil {
		return fmt.Errorf("io_uring: mapping the rings: %w", err)
	}
	cq := r.mem
	if p.Features&uringFeatSingleMmap == 0 {
		if r.cqMem, err = unix.Mmap(r.fd, uringOffCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("io_uring: mapping the completion ring: %w", err)
		}
		cq = r.cqMem
	}
	if r.sqeMem, err = unix.Mmap(r.fd, uringOffSQEs, int(p.SQEntries)*uringSQEBytes, prot, flags); err != nil {
		return fmt.Errorf("io_uring: mapping the SQEs: %w", err)
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	r.sqHead, r.sqTail = u32(r.mem, p.SQOff[0]), u32(r.mem, p.SQOff[1])
	r.sqMask, r.sqEntries = *u32(r.mem, p.SQOff[2]), *u32(r.mem, p.SQOff[3])
	array := unsafe.Slice(u32(r.mem, p.SQOff[6]), r.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), r.sqEntries)
	r.cqHead, r.cqTail = u32(cq, p.CQOff[0]), u32(cq, p.CQOff[1])
	r.cqMask = *u32(cq, p.CQOff[2])
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cq[p.CQOff[5]])), *u32(cq, p.CQOff[3]))
	r.local = atomic.LoadUint32(r.sqTail)
	return nil
}

// errRingFull is returned by queue when every SQ slot holds an entry the
// kernel has not consumed yet: the caller must enter first.
var errRingFull = errors.New("io_uring: submission queue full")

// queue fills the next SQE with a SEND or RECV of buf on fd, with msg
// flags opFlags. buf must stay allocated and unmoved until its completion
// is reaped: the generator's buffers live in its connections (Go's heap
// does not move objects).
func (r *ring) queue(op uint8, fd int, buf []byte, opFlags uint32, userData uint64) error {
	if r.local-atomic.LoadUint32(r.sqHead) == r.sqEntries {
		return errRingFull
	}
	r.sqes[r.local&r.sqMask] = uringSQE{opcode: op, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), len: uint32(len(buf)), opFlags: opFlags, userData: userData}
	r.local++
	return nil
}

// enter publishes the queued SQEs, submits them and runs the completions
// the kernel has ready, without waiting for any: one kernel entry.
func (r *ring) enter() error {
	atomic.StoreUint32(r.sqTail, r.local) // release: the SQEs are written
	for {
		toSubmit := r.local - atomic.LoadUint32(r.sqHead)
		r.enters++
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, uringEnterGetEvents, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR, unix.EAGAIN, unix.EBUSY:
			// Interrupted, or short of kernel memory, or the completion
			// ring is backed up: retrying is io_uring_enter(2)'s advice
			// (the generator reaps before it queues more).
			r.enterErrors++
			if r.enterErrors > 1_000_000 {
				return fmt.Errorf("io_uring_enter: %w, a million times", errno)
			}
			continue
		default:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}

// reap calls f for every completion posted, oldest first, and frees their
// slots. f may queue, not enter.
func (r *ring) reap(f func(c uringCQE) error) error {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail) // acquire: the CQEs up to tail are written
	var err error
	for ; head != tail && err == nil; head++ {
		err = f(r.cqes[head&r.cqMask])
	}
	atomic.StoreUint32(r.cqHead, head) // release: the slots are free
	return err
}

// close unmaps the rings and closes the ring's descriptor; the kernel
// cancels what is still in flight.
func (r *ring) close() {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.mem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.mem = nil, nil, nil
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}
