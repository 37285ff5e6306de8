package bodies

import (
	"testing"
	"unsafe"
)

// TestSwitchContextsOnTheirOwnLines: however much the process allocated
// before, fiberRounds' two contexts each start a 64-byte line, 128 bytes
// apart (switchContexts), so the bare switch's figure does not follow
// where the heap had room.
func TestSwitchContextsOnTheirOwnLines(t *testing.T) {
	var keep []any
	for i := range 64 {
		keep = append(keep, make([]byte, 8+i*24)) // move every size class's next free slot
		c := new(switchContexts)
		keep = append(keep, c)
		root, fib := uintptr(unsafe.Pointer(&c.root)), uintptr(unsafe.Pointer(&c.fib))
		if root%64 != 0 || fib%64 != 0 || fib-root != 128 {
			t.Fatalf("allocation %d: root at %#x, fib at %#x: want each on a 64-byte line start, 128 bytes apart", i, root, fib)
		}
	}
	_ = keep
}
