package stackful

// recordSlab hands out the records of new coroutines (spawn, when the free
// list is empty) from chunks it allocates, so that records spawned one
// after another sit one after another in memory, whatever the heap looks
// like.
//
// Why: the collector is held off over a heap that is pre-grown and swept
// (the benchmarks' GC policy, and any long-lived program's heap after a
// collection), so a separate 320-byte allocation per record fills the
// free slots of partly used spans all over the heap: the records of a
// round robin then spread over many more pages than they fill, beside the
// stack tops that already take a page each, and at thousands of
// coroutines more switches pay a second TLB miss. From a chunk, twelve
// records share a page. Measured on benchrun's Yield cell (stackful-asm,
// `benchrun cell -scenario yield -impl stackful-asm -params n=N -benchtime
// 1s`, pinned, old and new binaries alternated; session 11): n=4096
// 31.2–38.8 ns per switch before, 27.1–28.2 with chunks; n=262144 167–180
// before, 145–157 with chunks. In package
// (BenchmarkYieldN, whose records are allocated back to back anyway) the
// difference is ~5%. Advising the chunks into transparent huge pages
// (MADV_HUGEPAGE) read no better than chunks alone on the same cells, so
// chunks are plain heap memory.
//
// Invariants: a chunk is one Go object, a []coroutine, so the collector
// sees every pointer in every record and a chunk lives while any of its
// records is referenced (the free list, the live list, a queued or
// waiting coroutine, a handle's record). Records are handed out once; a
// finished record goes back through the scheduler's free list, never to
// the slab. Every record starts on a 64-byte line (the prefetch pipeline
// fetches a record's lines 0 and 1): a lone record is a 320-byte object,
// and that size class starts its objects on lines; a chunk is at least
// minRecordChunk records, a large object (over 32 KiB), which starts on a
// page. A smaller chunk would not do: Go puts an 8-byte header in front of
// a small object with pointers over 512 bytes, and every record in it
// would start 8 bytes past a line (TestRecordsAreDenseAndLineAligned).
//
// The cost: a record dropped from a full free list (maxFreeRecords) is
// freed only with the rest of its chunk. A scheduler's first
// minRecordChunk-1 records are allocated one by one, as before chunks, so
// one that spawns a few coroutines keeps no chunk; after them chunks
// double from minRecordChunk up to maxRecordChunk.
type recordSlab struct {
	chunk []coroutine // the current chunk; records [next:] are unused
	next  int
	lone  int // records allocated one by one so far (< minRecordChunk)
}

// minRecordChunk is the fewest records a chunk holds: 40 KiB, the least
// that is a large object (see recordSlab).
const minRecordChunk = 128

// maxRecordChunk is the most records one chunk holds: 1.25 MiB, so that
// the memory a chunk keeps alive for one live record stays bounded.
const maxRecordChunk = 4096

// get returns a zeroed record. Not safe for concurrent use: it is called
// on the scheduler's goroutine only (spawn).
func (r *recordSlab) get() *coroutine {
	if r.next == len(r.chunk) {
		if r.lone < minRecordChunk-1 {
			r.lone++
			return new(coroutine)
		}
		r.chunk = make([]coroutine, min(max(2*len(r.chunk), minRecordChunk), maxRecordChunk))
		r.next = 0
	}
	co := &r.chunk[r.next]
	r.next++
	return co
}
