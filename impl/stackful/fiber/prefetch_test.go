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
