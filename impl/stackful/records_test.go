package stackful

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestRecordsAreDenseAndLineAligned: the records of coroutines spawned one
// after another sit one after another (recordSlab), even on a heap whose
// 320-byte size class is full of holes, and every record starts on a
// 64-byte line (the prefetch pipeline fetches lines 0 and 1 of it). The
// holes are made the way the benchmarks' heap has them: many objects of
// a record's size, every other one dropped, then a collection.
func TestRecordsAreDenseAndLineAligned(t *testing.T) {
	if unsafe.Sizeof(coroutine{})%64 != 0 {
		t.Fatalf("coroutine is %d bytes, not a multiple of 64: chunked records would not start on lines", unsafe.Sizeof(coroutine{}))
	}
	// Of the record's size and with a pointer: Go keeps objects with and
	// without pointers in different spans.
	type sameClass struct {
		P *int
		_ [unsafe.Sizeof(coroutine{}) - 8]byte
	}
	keep := make([]*sameClass, 0, 4096)
	for i := range 8192 {
		p := new(sameClass)
		if i%2 == 0 {
			keep = append(keep, p)
		}
	}
	runtime.GC()

	const n = 1000 // minRecordChunk-1 lone records, then chunks of 128, 256, 512 and part of 1024
	eachBackend(t, func(t *testing.T, b Backend) {
		recs := make([]*coroutine, 0, n)
		s := newSched(t, b)
		err := s.Run(func() {
			for range n {
				recs = append(recs, Go(func() {}).r)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		adjacent := 0
		for i, co := range recs {
			if a := uintptr(unsafe.Pointer(co)); a%64 != 0 {
				t.Errorf("record %d at %#x: not on a 64-byte line", i, a)
			}
			if i >= minRecordChunk && uintptr(unsafe.Pointer(co))-uintptr(unsafe.Pointer(recs[i-1])) == unsafe.Sizeof(coroutine{}) {
				adjacent++
			}
		}
		// Past the lone records (the main coroutine may have taken one),
		// a record follows the one spawned before it except where a
		// chunk starts: 4 starts. One record per allocation on this heap
		// fills the holes: almost none follow.
		if least := n - minRecordChunk - 4; adjacent < least {
			t.Errorf("%d of the %d records past the first %d follow the one spawned before them, want at least %d (one break per chunk)", adjacent, n-minRecordChunk, minRecordChunk, least)
		}
	})
	runtime.KeepAlive(keep)
}
