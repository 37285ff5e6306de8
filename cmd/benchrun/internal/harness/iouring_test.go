package harness

import (
	"encoding/binary"
	"os"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// A prototype, in a benchmark only, to decide whether an io_uring path
// would be worth building for the fileio scenario's reads (random 4 KiB
// preads of a cached file): what one read costs as a plain pread (what a
// goroutine does), through the reactor's thread pool (what the stackful
// and stackless rows do), and through a minimal io_uring (IORING_OP_READ),
// one read per io_uring_enter and 16 per enter. It is not a path of the
// reactor: no registration with the loop, no completion on the eventfd.
//
//	go test ./cmd/benchrun/internal/harness -run '^$' -bench CachedRead -count 6

const (
	protoFileSize = 16 << 20
	protoBlock    = 4 << 10
	protoDepth    = 16
)

// protoFile writes a cached file for the benchmark and returns it open.
func protoFile(b *testing.B) *os.File {
	f, err := os.CreateTemp(b.TempDir(), "iouring-proto-*")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for off := 0; off < protoFileSize; off += len(buf) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { f.Close() })
	return f
}

func protoOffset(i int) int64 {
	return int64((uint64(i)*0x9E3779B97F4A7C15>>40)%(protoFileSize/protoBlock)) * protoBlock
}

// ring is a minimal io_uring: one SQ ring, one CQ ring, the SQE array.
type ring struct {
	fd                     int
	sqMem, cqMem, sqeMem   []byte
	sqTail, sqMask         *uint32
	sqArray                []uint32
	cqHead, cqTail, cqMask *uint32
	cqes                   []byte
}

const (
	ioringOffSQRing   = 0
	ioringOffCQRing   = 0x8000000
	ioringOffSQEs     = 0x10000000
	ioringFeatSingle  = 1 << 0
	ioringOpRead      = 22
	ioringEnterGetEvt = 1 << 0
)

func newRing(entries uint32) (*ring, error) {
	var p ioUringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, errno
	}
	r := &ring{fd: int(fd)}
	sqSize := int(p.SQOff[6] + p.SQEntries*4) // array + entries
	cqSize := int(p.CQOff[5] + p.CQEntries*16)
	if p.Features&ioringFeatSingle != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = unix.Mmap(r.fd, ioringOffSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	r.cqMem = r.sqMem
	if p.Features&ioringFeatSingle == 0 {
		if r.cqMem, err = unix.Mmap(r.fd, ioringOffCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return nil, err
		}
	}
	if r.sqeMem, err = unix.Mmap(r.fd, ioringOffSQEs, int(p.SQEntries)*64, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqTail, r.sqMask = u32(r.sqMem, p.SQOff[1]), u32(r.sqMem, p.SQOff[2])
	r.sqArray = unsafe.Slice(u32(r.sqMem, p.SQOff[6]), p.SQEntries)
	r.cqHead, r.cqTail, r.cqMask = u32(r.cqMem, p.CQOff[0]), u32(r.cqMem, p.CQOff[1]), u32(r.cqMem, p.CQOff[2])
	r.cqes = r.cqMem[p.CQOff[5]:]
	return r, nil
}

func (r *ring) close() {
	unix.Munmap(r.sqeMem)
	if &r.cqMem[0] != &r.sqMem[0] {
		unix.Munmap(r.cqMem)
	}
	unix.Munmap(r.sqMem)
	unix.Close(r.fd)
}

// queueRead puts a read of len(buf) bytes at off into the next SQE; buf
// must not move (it is mmap'ed memory).
func (r *ring) queueRead(fd int, buf []byte, off int64, tag uint64) {
	tail := *r.sqTail // only this goroutine writes it
	idx := tail & *r.sqMask
	sqe := r.sqeMem[idx*64 : idx*64+64]
	clear(sqe)
	sqe[0] = ioringOpRead
	binary.LittleEndian.PutUint32(sqe[4:], uint32(fd))
	binary.LittleEndian.PutUint64(sqe[8:], uint64(off))
	binary.LittleEndian.PutUint64(sqe[16:], uint64(uintptr(unsafe.Pointer(&buf[0]))))
	binary.LittleEndian.PutUint32(sqe[24:], uint32(len(buf)))
	binary.LittleEndian.PutUint64(sqe[32:], tag)
	r.sqArray[idx] = idx
	atomic.StoreUint32(r.sqTail, tail+1) // publish to the kernel
}

// submitAndWait submits n queued SQEs and waits for n completions, which
// it reaps; it returns the sum of their results (bytes read).
func (r *ring) submitAndWait(n int) (int, error) {
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(n), ioringEnterGetEvt, 0, 0); errno != 0 {
		return 0, errno
	}
	got, total := 0, 0
	head := *r.cqHead
	for got < n {
		tail := atomic.LoadUint32(r.cqTail)
		for ; head != tail; head++ {
			cqe := r.cqes[(head&*r.cqMask)*16:]
			res := int32(binary.LittleEndian.Uint32(cqe[8:]))
			if res < 0 {
				return 0, unix.Errno(-res)
			}
			total += int(res)
			got++
		}
		atomic.StoreUint32(r.cqHead, head)
	}
	return total, nil
}

func BenchmarkCachedRead(b *testing.B) {
	f := protoFile(b)
	fd := int(f.Fd())
	mem, err := unix.Mmap(-1, 0, protoDepth*protoBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	buf := func(i int) []byte { return mem[i*protoBlock : (i+1)*protoBlock] }

	b.Run("pread", func(b *testing.B) {
		b.SetBytes(protoBlock)
		for i := 0; b.Loop(); i++ {
			if n, err := unix.Pread(fd, buf(0), protoOffset(i)); n != protoBlock || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	// The reactor's pool, one thread (as the pool cells get on two CPUs),
	// protoDepth reads in flight: the loop blocks in its wait until the
	// completions come back through the eventfd.
	b.Run("pool-depth16", func(b *testing.B) {
		l, err := reactor.NewWithOptions(reactor.Options{PoolThreads: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		var done int
		works := make([]*reactor.Work, protoDepth)
		jobs := make([]reactor.JobFunc, protoDepth)
		// next is written between batches only: Start (the pool's mutex)
		// orders the write before the jobs that read it, and the
		// completions (the same mutex) order their reads before the next
		// write.
		next := 0
		for w := range works {
			works[w] = l.NewWork(func() { done++ })
			jobs[w] = func() {
				if n, err := unix.Pread(fd, buf(w), protoOffset(next+w)); n != protoBlock || err != nil {
					panic(err)
				}
			}
		}
		b.SetBytes(protoBlock)
		b.ResetTimer()
		for next < b.N {
			batch := min(protoDepth, b.N-next)
			for w := range batch {
				if err := works[w].Start(jobs[w]); err != nil {
					b.Fatal(err)
				}
			}
			for done < batch {
				if _, err := l.Tick(false); err != nil {
					b.Fatal(err)
				}
			}
			done = 0
			next += batch
		}
	})
	for _, depth := range []int{1, protoDepth} {
		name := "iouring-depth1"
		if depth > 1 {
			name = "iouring-depth16"
		}
		b.Run(name, func(b *testing.B) {
			r, err := newRing(protoDepth)
			if err != nil {
				b.Skipf("io_uring not available: %v", err)
			}
			defer r.close()
			b.SetBytes(protoBlock)
			b.ResetTimer()
			for next := 0; next < b.N; {
				batch := min(depth, b.N-next)
				for k := range batch {
					r.queueRead(fd, buf(k), protoOffset(next+k), uint64(k))
				}
				n, err := r.submitAndWait(batch)
				if err != nil || n != batch*protoBlock {
					b.Fatalf("read %d bytes, want %d: %v", n, batch*protoBlock, err)
				}
				next += batch
			}
		})
	}
}
