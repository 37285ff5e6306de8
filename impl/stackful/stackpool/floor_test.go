package stackpool

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// BenchmarkStackTopFloor is the memory floor under a stackful round-robin
// switch (the Yield scenario on stackful-asm), with no switch in it: n
// stacks from one pool, each with a 64-byte record holding its saved SP,
// as the runtime keeps them; one op reads the next record's SP and then
// the stack lines above it, in run-queue order: lines=2 is the least a
// switch reads (the return address and the saved frame), lines=6
// (fiber.PrefetchStackLines) a Yield's whole suspended chain up to the
// body's loop. prefetch=on fetches the record 8 ahead and the stack lines
// 4 ahead (fiber.PrefetchStack), a simpler pipeline than the scheduler's
// (fiber.PrefetchRing; BenchmarkStackTopFloorYield's path=context runs
// that one).
//
// Why: what is left of Yield n=4096 against n=2 when every instruction of
// the switch is gone is the cost of touching one fresh page per coroutine:
// each stack top lives on a page of its own (stacks are 64 KiB apart), so
// at n=4096 the second-level TLB (typically 1.5k entries on this class of
// core: a vendor figure, not measured, the VM has no counters) no longer
// holds them. Compare its n=4096/n=2 difference with
// BenchmarkYieldN's (impl/stackful, twin of this access pattern).
func BenchmarkStackTopFloor(b *testing.B) {
	for _, n := range []int{2, 4096, 262144} {
		for _, lines := range []int{2, fiber.PrefetchStackLines} {
			for _, pf := range []string{"on", "off"} {
				b.Run("n="+strconv.Itoa(n)+"/lines="+strconv.Itoa(lines)+"/prefetch="+pf, func(b *testing.B) {
					benchStackTopFloor(b, n, lines, pf == "on", false)
				})
			}
		}
	}
}

// floorRecord stands for a coroutine's record: the saved SP in its first
// line, the line to itself.
type floorRecord struct {
	sp unsafe.Pointer // into the pool's mapping, not Go's heap
	_  [56]byte
}

// floorPool returns a pool as the runtime makes them (guards as GuardAuto
// decides), closed when the benchmark ends.
func floorPool(b *testing.B) *Pool {
	p, err := New(Config{Guard: GuardAuto})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// floorRecords takes n stacks from a new pool (floorPool) and returns
// their records, each saved SP where a suspended fiber leaves it, lines
// below its stack's top; each of the lines is written, so that it is
// resident, the first with the stack's index.
func floorRecords(b *testing.B, n, lines int) []floorRecord {
	p := floorPool(b)
	recs := make([]floorRecord, n)
	for i := range recs {
		s, err := p.Get()
		if err != nil {
			b.Fatal(err)
		}
		recs[i].sp = stackTop(s, 64*lines)
		*(*uintptr)(recs[i].sp) = uintptr(i)
		for l := 1; l < lines; l++ {
			*(*uintptr)(unsafe.Add(recs[i].sp, 64*l)) = 1
		}
	}
	return recs
}

// stackTop returns the address below bytes below s's top.
func stackTop(s Stack, below int) unsafe.Pointer {
	return unsafe.Add(s.slab.base, s.hi-uintptr(below)-uintptr(s.slab.base))
}

// benchStackTopFloor reads lines stack lines per op from n stacks in
// queue order; if write, it also stores one word of each line, as a
// yield's pushes and saves do, so that the lines go back dirty.
func benchStackTopFloor(b *testing.B, n, lines int, prefetch, write bool) {
	if testing.Short() && n > 4096 {
		b.Skip("262144 stacks map 16 GiB of address space")
	}
	recs := floorRecords(b, n, lines)
	mask := n - 1 // n is a power of two
	var sum uintptr
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i & mask
		if prefetch {
			fiber.Prefetch(uintptr(unsafe.Pointer(&recs[(j+8)&mask])))
			fiber.PrefetchStack(uintptr(recs[(j+4)&mask].sp))
		}
		sp := recs[j].sp
		sum += *(*uintptr)(sp)
		for l := 1; l < lines; l++ {
			sum += *(*uintptr)(unsafe.Add(sp, 64*l))
		}
		if write {
			// The words 8 bytes in: stores that leave the checked
			// words alone.
			for l := 0; l < lines; l++ {
				*(*uintptr)(unsafe.Add(sp, 64*l+8)) = uintptr(i)
			}
		}
	}
	b.StopTimer()
	checkFloorSum(b, sum, mask, lines)
}

// checkFloorSum checks a floor benchmark's checksum: every op read slot
// j's index and lines-1 ones.
func checkFloorSum(b *testing.B, sum uintptr, mask, lines int) {
	var want uintptr
	for i := 0; i < b.N; i++ {
		want += uintptr(i&mask) + uintptr(lines-1)
	}
	if sum != want {
		b.Fatalf("checksum %d, want %d", sum, want)
	}
}

// BenchmarkStackTopFloorYield is BenchmarkStackTopFloor made to touch
// what a real Yield touches (stackful-asm, the Yield scenario), to split
// the gap between the floor and the real figure, 6 lines each:
//
//   - path=direct is BenchmarkStackTopFloor's: 64-byte records side by
//     side in one slice, the saved SP in the record;
//   - path=context follows the real chain: a 320-byte record of its own on
//     the heap (a coroutine's size class; allocated one by one, as spawn
//     does), whose first word points at a context 192 bytes below the
//     stack's top (where newContext puts the fiber.Context: ctxReserve,
//     192 on go1.26 amd64), whose first word is the saved SP, 680 bytes
//     below the context: the Yield scenario's chain on go1.26 amd64, each
//     frame its SUBQ plus the return address and saved BP (`go tool
//     objdump`): fiberStart's 32 bytes, fiberMain 96, runEntry 56, the
//     backend's entry 32, contextMain 56, runBody 80, the body
//     (bodies.yieldBlocking.func1) 128, rows' adapter (fibers.Yield) 72,
//     stackful.Yield 112 and Switch's two words 16; from the saved SP to
//     the top of the body's frame is 328 bytes from byte 24 of a line: 6
//     lines (fiber.PrefetchStackLines). That is the layout the figures
//     were measured with; since, the body's frame is 88 bytes (Yield's
//     timed region moved its end into yieldRun.finish) and contextMain's
//     72 (it picks inline), so the saved SP is 656 bytes below the context
//     and the chain 288 bytes from byte 48 of a line: still 6 lines.
//     Since session 16 runEntry is folded into fiberMain (one frame of
//     136 bytes for their 152), so the saved SP is 16 bytes nearer the
//     context (the lines not recounted). Since session 18 runBody is
//     folded into contextMain (frames above the body: the entry 56 bytes,
//     contextMain 152, for 32, 88 and runBody's 80), so the saved SP is 8
//     bytes farther from the context and the chain, whose frames did not
//     change, still spans 6 lines. The op reads the record's two
//     lines, the context's line and the 6 stack lines, each dependent on
//     the one before as in a switch;
//   - write=on also writes one word of every line it reads (a yield pushes
//     frames and return addresses on the stack, saves the registers in the
//     context and sets the record's state and waker), so each line goes
//     back dirty and must be written back when it is evicted;
//   - prefetch=on is the scheduler's pipeline: for path=context
//     fiber.PrefetchRing over a ring of the records, exactly as a Yield's
//     inline pick calls it (its distances and batches are the scheduler's).
func BenchmarkStackTopFloorYield(b *testing.B) {
	for _, n := range []int{2, 4096, 262144} {
		for _, path := range []string{"direct", "context"} {
			for _, w := range []string{"off", "on"} {
				for _, pf := range []string{"on", "off"} {
					b.Run("n="+strconv.Itoa(n)+"/path="+path+"/write="+w+"/prefetch="+pf, func(b *testing.B) {
						if path == "direct" {
							benchStackTopFloor(b, n, fiber.PrefetchStackLines, pf == "on", w == "on")
						} else {
							benchStackTopFloorContext(b, n, pf == "on", w == "on")
						}
					})
				}
			}
		}
	}
}

// floorCoroutine stands for a coroutine record: 320 bytes (its size
// class), the context pointer first, as PrefetchRing reads it.
type floorCoroutine struct {
	ctx   *floorContext // into the pool's mapping, not Go's heap
	state uintptr       // line 0: what a Yield sets
	_     [48]byte
	waker uintptr // line 1: the waker's status
	_     [248]byte
}

// floorContext stands for a fiber.Context: the saved SP first (PrefetchRing
// reads it at Context_sp, offset 0).
type floorContext struct {
	sp    unsafe.Pointer
	saved uintptr
}

var _ [0]struct{} = [unsafe.Sizeof(floorCoroutine{}) - 320]struct{}{}

// floorKeep keeps the records reachable from the heap while the ring holds
// them as unsafe words.
var floorKeep []*floorCoroutine

func benchStackTopFloorContext(b *testing.B, n int, prefetch, write bool) {
	if testing.Short() && n > 4096 {
		b.Skip("262144 stacks map 16 GiB of address space")
	}
	const lines = fiber.PrefetchStackLines
	p, err := New(Config{Guard: GuardAuto})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ring := make([]*floorCoroutine, n)
	for i := range ring {
		s, err := p.Get()
		if err != nil {
			b.Fatal(err)
		}
		c := (*floorContext)(unsafe.Add(s.slab.base, s.hi-192-uintptr(s.slab.base)))
		c.sp = unsafe.Add(unsafe.Pointer(c), -680)
		*(*uintptr)(c.sp) = uintptr(i)
		for l := 1; l < lines; l++ {
			*(*uintptr)(unsafe.Add(c.sp, 64*l)) = 1
		}
		ring[i] = &floorCoroutine{ctx: c}
	}
	floorKeep = ring
	defer func() { floorKeep = nil }()
	mask := n - 1
	var sum uintptr
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i & mask
		if prefetch {
			fiber.PrefetchRing(unsafe.Pointer(&ring[0]), uintptr(j+1)&uintptr(mask), uintptr(mask), 0)
		}
		r := ring[j]
		sum += r.waker
		c := r.ctx
		sp := c.sp
		sum += *(*uintptr)(sp)
		for l := 1; l < lines; l++ {
			sum += *(*uintptr)(unsafe.Add(sp, 64*l))
		}
		if write {
			r.state, r.waker = uintptr(i), 0
			c.saved = uintptr(i)
			for l := 0; l < lines; l++ {
				*(*uintptr)(unsafe.Add(sp, 64*l+8)) = uintptr(i)
			}
		}
	}
	b.StopTimer()
	checkFloorSum(b, sum, mask, lines)
}
