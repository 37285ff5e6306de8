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
// 4 ahead (fiber.PrefetchStack), as the scheduler's prefetch ring does
// (fiber.PrefetchRing: records 8 ahead, stacks nearer).
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
					benchStackTopFloor(b, n, lines, pf == "on")
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

func benchStackTopFloor(b *testing.B, n, lines int, prefetch bool) {
	if testing.Short() && n > 4096 {
		b.Skip("262144 stacks map 16 GiB of address space")
	}
	p, err := New(Config{Guard: GuardAuto})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	recs := make([]floorRecord, n)
	for i := range recs {
		s, err := p.Get()
		if err != nil {
			b.Fatal(err)
		}
		// The saved SP as a suspended fiber leaves it, lines below the
		// top; each line written, so that it is resident.
		recs[i].sp = unsafe.Add(s.slab.base, s.hi-uintptr(64*lines)-uintptr(s.slab.base))
		*(*uintptr)(recs[i].sp) = uintptr(i)
		for l := 1; l < lines; l++ {
			*(*uintptr)(unsafe.Add(recs[i].sp, 64*l)) = 1
		}
	}
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
	}
	b.StopTimer()
	// The checksum: every op read slot j's index and lines-1 ones.
	var want uintptr
	for i := 0; i < b.N; i++ {
		want += uintptr(i&mask) + uintptr(lines-1)
	}
	if sum != want {
		b.Fatalf("checksum %d, want %d", sum, want)
	}
}
