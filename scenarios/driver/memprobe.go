package driver

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The memory probe: a short, fixed chain of dependent loads from memory,
// timed around a timed run on the body's thread, so that the run log can
// put the memory system's speed at that moment beside the run's figure. A
// slow host memory system (another tenant's traffic in the host's caches
// or DRAM, the host moving the vCPU) slows a memory-bound cell without
// any runqueue wait, so the disturbance mark (Signal.Wait) cannot see
// it. The probe is a record and not a mark: measured against Spawn
// alive=10000 its reading before a run ranks the runs' figures (Spearman
// +0.2 to +0.5 per cell) but moves ~10% where the figure moves 2×, and its
// level differs from cell to cell, so no factor over a run-wide baseline
// told the slow runs apart, and leaving out the runs it flagged did not
// narrow any cell's spread. See docs/design.md §6.7.
//
// Each load's address is a hash of a counter plus the value the previous
// load read (always 0: the CPU cannot know that, so the loads form one
// dependent chain and no prefetcher can run ahead), over memProbeBytes,
// twice the guest's last-level cache, in huge pages where the kernel
// gives them (fewer guest page walks, whose cost moves with each
// process's layout; the host's half of a nested walk is still in it). The
// counter carries on from one reading to the next, so a process's
// readings seldom revisit a line (a few thousand loads per reading of
// memProbeBytes/64 = 1M lines) and nearly every load goes to memory or to
// whatever host cache holds it. The reading after a run differs from
// the one before by the cell (on that VM 1.29× after Spawn alive=10000
// warm on stackful-asm, 0.96× after stackless's: the body leaves its own,
// often dirty, lines in the caches), so the one before is the cleaner
// figure of the machine.

// memProbeBytes is the probe's buffer: twice the 32 MiB last-level cache
// of the VM this was built on.
const memProbeBytes = 64 << 20

// memProbeLoads is how many dependent loads one burst makes: ~170 µs at
// the ~170 ns per load measured on that VM.
const memProbeLoads = 1000

// memProbeBursts is how many bursts one reading makes; the reading is the
// fastest of them. Each burst is timed in the thread's CPU time, so a
// preemption inside it does not make it slow (a runqueue wait is the
// mark's business, not the probe's); an interrupt's handler still counts.
const memProbeBursts = 2

// memProbe is a process's probe buffer and where its chain has got to.
type memProbe struct {
	buf    []byte
	cursor uint64
}

var (
	probeOnce sync.Once
	probe     *memProbe
	probeErr  error
)

// theMemProbe maps and touches the process's probe buffer once (each
// 4 KiB page written, so no read lands on the kernel's shared zero page).
func theMemProbe() (*memProbe, error) {
	probeOnce.Do(func() {
		b, err := unix.Mmap(-1, 0, memProbeBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			probeErr = err
			return
		}
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: without it the reading includes page walks
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0
		}
		probe = &memProbe{buf: b}
	})
	return probe, probeErr
}

// read is one reading: ns per dependent load, the fastest of
// memProbeBursts bursts.
func (p *memProbe) read() float64 {
	runtime.LockOSThread() // the thread's CPU clock must be this thread's at both ends
	defer runtime.UnlockOSThread()
	best := 0.0
	for range memProbeBursts {
		if ns := p.burst(memProbeLoads); best == 0 || ns < best {
			best = ns
		}
	}
	return best
}

// burst times n dependent loads and returns ns per load.
func (p *memProbe) burst(n int) float64 {
	mask := uint64(len(p.buf)/64 - 1)
	base := unsafe.Pointer(unsafe.SliceData(p.buf))
	c, v := p.cursor, uint64(0)
	start := threadCPU()
	for range n {
		c++
		v = *(*uint64)(unsafe.Add(base, probeLine(c+v, mask)<<6)) // in bounds: line ≤ mask = len(buf)/64 − 1
	}
	d := threadCPU() - start
	p.cursor = c + v // v is 0; adding it keeps the last load live
	return float64(d.Nanoseconds()) / float64(n)
}

// threadCPU is the calling thread's CPU time (the burst runs on one
// thread: nothing in it can block or yield).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// probeLine is the line the probe loads for counter c: a hash of c
// (Fibonacci hashing, then the high bits folded down), so consecutive
// counters land on lines far apart, which no prefetcher follows; masked
// to the buffer's mask+1 lines (a power of two).
func probeLine(c, mask uint64) uint64 {
	x := c * 0x9E3779B97F4A7C15
	x ^= x >> 29
	return x & mask
}
