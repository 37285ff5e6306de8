package stackpool

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// BenchmarkWakeFloor is the memory floor under a stackful timer wake (the
// Timer scenario on stackful-asm at n=10000), with no timer, scheduler or
// switch in it: n stacks from one pool, each with a 320-byte record as the
// runtime keeps them (impl/stackful's coroutine: the saved SP in line 0,
// the timer node further in), woken in a random order, as the Timer
// scenario's random sleeps wake them. One op is one wake's memory: write
// the record's timer line and line 0 (the fire: the node leaves the heap,
// the waker's status changes), then read and write the context line at
// the stack's top (the saved registers a switch loads and the next
// suspend stores) and fiber.PrefetchStackLines stack lines from the saved
// SP up (the suspended chain the resumed coroutine returns through and
// calls down into again). prefetch=on runs the scheduler's pipeline over
// the wake order (fiber.PrefetchRing's distances: the record 8 wakes
// ahead, the context 4 ahead, the stack 2 ahead), as it runs over the run
// queue the fired timers fill; the fire itself is not prefetched (the
// runtime's is not either: the heap pops it when it is due). work=300
// adds a chain of 300 dependent multiplies per wake, which loads nothing:
// a real wake's own instructions (~1000 of them) keep the core from
// overlapping one wake's misses with the next one's as a bare loop does,
// so work=300 less the same work at n=2 is the miss time a wake exposes.
//
// Why: what is left of Timer n=10000's CPU per wake on stackful-asm over
// stackless's when every instruction of the wake is gone. Stackless's task
// is one dense object; a stackful wake touches a page of its own (the
// stack's top) in an order no hardware prefetcher can follow, and at n
// stacks past the TLB's reach each wake pays a page walk (a nested one
// under a hypervisor). Twin of BenchmarkStackTopFloor (floor_test.go),
// which walks the stacks in run-queue order as a Yield does.
func BenchmarkWakeFloor(b *testing.B) {
	for _, n := range []int{2, 4096, 10000} {
		for _, pf := range []string{"on", "off"} {
			for _, work := range []int{0, 300} {
				b.Run("n="+strconv.Itoa(n)+"/prefetch="+pf+"/work="+strconv.Itoa(work), func(b *testing.B) {
					benchWakeFloor(b, n, pf == "on", work)
				})
			}
		}
	}
}

// wakeRecord stands for a coroutine's record (320 bytes, line-aligned in
// a dense slice as a size class lays them out): the saved SP in line 0,
// the timer node in line 3.
type wakeRecord struct {
	sp    unsafe.Pointer // into the pool's mapping, not Go's heap
	_     [56]byte
	hot   [2]uintptr // line 1: the waker's status and outcome
	_     [48]byte
	_     [64]byte
	timer [8]uintptr // line 3: the timer node
	_     [64]byte
}

// wakeOrderLen is the length of the precomputed wake order the benchmark
// cycles through: long enough that no order repeats within a few rounds
// of n, short enough (256 KiB) to read sequentially from cache, as the
// run queue's ring is.
const wakeOrderLen = 1 << 16

func benchWakeFloor(b *testing.B, n int, prefetch bool, work int) {
	p := floorPool(b)
	recs := make([]wakeRecord, n)
	ctxs := make([]unsafe.Pointer, n) // each stack's context line, at its top
	for i := range recs {
		s, err := p.Get()
		if err != nil {
			b.Fatal(err)
		}
		ctxs[i] = stackTop(s, 64)
		// The saved SP as a suspended fiber leaves it, below the context
		// line; each line written, so that it is resident.
		recs[i].sp = stackTop(s, 64*(1+fiber.PrefetchStackLines))
		*(*uintptr)(ctxs[i]) = uintptr(i)
		for l := range fiber.PrefetchStackLines {
			*(*uintptr)(unsafe.Add(recs[i].sp, 64*l)) = 1
		}
	}
	if unsafe.Sizeof(wakeRecord{}) != 320 {
		b.Fatalf("wakeRecord is %d bytes, want 320 (the runtime's record)", unsafe.Sizeof(wakeRecord{}))
	}
	// The wake order: random (splitmix64), every index equally likely.
	order := make([]int32, wakeOrderLen)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range order {
		x += 0x9e3779b97f4a7c15
		z := (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		order[i] = int32((z >> 32) * uint64(n) >> 32)
	}
	const mask = wakeOrderLen - 1
	var sum uintptr
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prefetch {
			fiber.Prefetch(uintptr(unsafe.Pointer(&recs[order[(i+8)&mask]])))
			fiber.Prefetch(uintptr(ctxs[order[(i+4)&mask]]))
			fiber.PrefetchStack(uintptr(recs[order[(i+2)&mask]].sp))
		}
		r := &recs[order[i&mask]]
		r.timer[0]++ // the fire: the node leaves the heap
		r.hot[0]++   // the waker's status
		c := ctxs[order[i&mask]]
		sum += *(*uintptr)(c) // the switch loads the saved registers
		*(*uintptr)(unsafe.Add(c, 8)) = sum
		for l := range fiber.PrefetchStackLines { // the chain, returned through and called into again
			w := (*uintptr)(unsafe.Add(r.sp, 64*l))
			sum += *w
			*w = sum
		}
		for range work { // the wake's own work: a dependent chain that loads nothing
			sum = sum*0x9e3779b97f4a7c15 + 1
		}
	}
	b.StopTimer()
	// The checksum: every wake bumped its record's timer line once.
	var fires uintptr
	for i := range recs {
		fires += recs[i].timer[0]
	}
	if fires != uintptr(b.N) {
		b.Fatalf("%d fires counted, want %d", fires, b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/wake")
	sinkWakeFloor = sum
}

// sinkWakeFloor keeps the loads' sum alive, so that no read is dropped.
var sinkWakeFloor uintptr
