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
