package fiber

import (
	"testing"
	"unsafe"
)

// TestPrefetchIsAHint: Prefetch and PrefetchStack return for any address, mapped or not (a
// prefetch never faults), and StackTop reads the saved SP the switch
// stores: nonzero for a context parked in Switch.
func TestPrefetchIsAHint(t *testing.T) {
	x := new([64]byte)
	for _, a := range []uintptr{0, 1, ^uintptr(0), uintptr(unsafe.Pointer(x)), 0xdead0000} {
		Prefetch(a)
		PrefetchStack(a)
	}
	var c Context
	if c.StackTop() != 0 {
		t.Fatalf("StackTop of a zero Context = %#x, want 0", c.StackTop())
	}
}

// TestPrefetchRingIsAHint: PrefetchRing follows only slots, records' first
// words and saved SPs, and returns for every case its invariants allow: an
// empty slot, a record with no Context, a saved SP of 0 (a running
// context) and SPs into unmapped or odd addresses, at every head of the
// ring (so each case meets each stage, wrapping included), and writes
// nothing (it would fault on a nil it followed, and a write would show in
// the copies compared after).
func TestPrefetchRingIsAHint(t *testing.T) {
	type record struct {
		fc *Context
		_  [312]byte // a stackful coroutine record's size: the fetched lines stay inside
	}
	frames := new([1024]byte)
	sps := []uintptr{0, 1, ^uintptr(0), 0xdead0000, uintptr(unsafe.Pointer(&frames[512]))}
	ring := make([]*record, 8) // slot 0 stays empty
	ring[1] = new(record)      // no Context yet
	for i, sp := range sps {
		ring[2+i] = &record{fc: &Context{sp: sp}}
	}
	before := make([]record, len(ring))
	for i, r := range ring {
		if r != nil {
			before[i] = *r
		}
	}
	for _, mask := range []uintptr{7, 3, 0} {
		for head := uintptr(0); head < 16; head++ {
			PrefetchRing(unsafe.Pointer(&ring[0]), head, mask, 0)
			PrefetchRing(unsafe.Pointer(&ring[0]), head, mask, 1)
		}
	}
	for i, r := range ring {
		if r != nil && *r != before[i] {
			t.Fatalf("slot %d: record changed by PrefetchRing", i)
		}
	}
	for i, sp := range sps {
		if got := ring[2+i].fc.StackTop(); got != sp {
			t.Fatalf("slot %d: saved SP %#x after PrefetchRing, want %#x", 2+i, got, sp)
		}
	}
}

// TestContextHotLine: what a switch reads and writes of a Context (the
// saved SP and PC, g's saved stack fields, the state byte) lies in its
// first 64 bytes, so a Context that starts on a cache line (stackful puts
// its contexts there) is the one line PrefetchRing fetches for it on
// amd64. A field moved past it would miss at every switch once thousands
// of fibers are suspended, with no other sign.
func TestContextHotLine(t *testing.T) {
	var c Context
	fields := []struct {
		name string
		off  uintptr
		size uintptr
	}{
		{"sp", unsafe.Offsetof(c.sp), unsafe.Sizeof(c.sp)},
		{"pc", unsafe.Offsetof(c.pc), unsafe.Sizeof(c.pc)},
		{"stktopsp", unsafe.Offsetof(c.stktopsp), unsafe.Sizeof(c.stktopsp)},
		{"lo", unsafe.Offsetof(c.lo), unsafe.Sizeof(c.lo)},
		{"hi", unsafe.Offsetof(c.hi), unsafe.Sizeof(c.hi)},
		{"panicp", unsafe.Offsetof(c.panicp), unsafe.Sizeof(c.panicp)},
		{"deferp", unsafe.Offsetof(c.deferp), unsafe.Sizeof(c.deferp)},
		{"state", unsafe.Offsetof(c.state), unsafe.Sizeof(c.state)},
	}
	for _, f := range fields {
		if f.off+f.size > 64 {
			t.Errorf("Context.%s at bytes [%d, %d) is not in the Context's first line", f.name, f.off, f.off+f.size)
		}
	}
}

// TestPrefetchRingStageOrder: each stage of PrefetchRing follows a pointer
// an earlier stage fetched (record, then its Context, then the saved SP's
// stack), so the slots they work on must be strictly ordered, the record
// stage furthest ahead; with equal distances a stage would load the very
// line the stage before it has only just asked for.
func TestPrefetchRingStageOrder(t *testing.T) {
	if !(ringRecordAhead > ringContextAhead && ringContextAhead > ringStackAhead && ringStackAhead >= 0) {
		t.Fatalf("PrefetchRing's distances record %d, context %d, stack %d: want record > context > stack >= 0",
			ringRecordAhead, ringContextAhead, ringStackAhead)
	}
}

// TestPrefetchRingBatches: on amd64 stages 1 and 2 run on every
// ringContextBatch-th head for that many slots each (prefetch_amd64.s).
// The batches tile the ring only if the batch is a power of two (the ring's
// length is one, so a multiple of the batch wraps to one); a slot's record
// is in the batch the Context stage follows later only if the two
// distances differ by whole batches; and the Context of every slot the
// stack stage reaches must come from an earlier batch, which takes the
// Context stage at least a batch less one ahead of the stack stage.
func TestPrefetchRingBatches(t *testing.T) {
	b := ringContextBatch
	if b < 1 || b&(b-1) != 0 {
		t.Fatalf("ringContextBatch %d is not a power of two", b)
	}
	if d := ringRecordAhead - ringContextAhead; d < b || d%b != 0 {
		t.Errorf("ringRecordAhead-ringContextAhead = %d: want a positive multiple of ringContextBatch %d", d, b)
	}
	if ringContextAhead-ringStackAhead < b-1 {
		t.Errorf("ringContextAhead-ringStackAhead = %d: want at least ringContextBatch-1 = %d", ringContextAhead-ringStackAhead, b-1)
	}
}
