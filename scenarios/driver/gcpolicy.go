package driver

import (
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/corobench/corobench/scenarios"
)

// GC policies, as written to the results file's gc-policy config line.
const (
	// GCPolicy is the default, under which every row measures: before each
	// run a forced collection, then a heap of at least what the run will
	// take (known from the previous runs: the last one's heap, plus the
	// extra iterations at the rate per iteration between the last two
	// counts, not the whole heap scaled by the count, which is mostly
	// set-up (run.heapFor); fixedWarmHeap for a run that has no previous
	// one, except a Cycles scenario's, whose earlier cycles warm the
	// heap) already touched,
	// collected and swept, then the collector held off for the run. The
	// asm row cannot run with the collector on (docs/design.md §3), so
	// holding it off is what makes the rows comparable; the warm heap is
	// what keeps that from costing the rows that allocate a first-touch
	// page fault for every fresh page, which a Go heap in a steady state
	// reuses (freed spans are reused without the kernel). What a run
	// allocates in its timed region is zeroed by the allocator on reuse,
	// as in any long-running Go program; a row's own memory outside the Go
	// heap (stackful-asm's mmap'd stacks) is not pre-grown: its faults are
	// the row's. A scenario that measures the growth of the resident set
	// (a metric in B/…: memory, burst) gets no warm heap, on every row: it
	// would hide the growth it measures.
	GCPolicy = "forced-gc-warm-heap-then-off"
	// GCPolicyOn leaves the collector on during the timed run, for the
	// GC-safe rows: it shows what collection costs them. The asm row
	// reports not supported under it.
	GCPolicyOn = "forced-gc-then-on"
)

// Bounds of the warm heap (GCPolicy).
const (
	// fixedWarmHeap is the warm heap of a FixedIters run, which has no
	// earlier run to learn from: Spawn alive=10000 on goroutine-single
	// takes about 20 MiB of the Go heap, its goroutines' stacks included.
	fixedWarmHeap = 32 << 20
	// maxWarmHeap caps the warm heap, so that a run which allocates
	// gigabytes does not double its resident size: the rest of such a
	// run faults as before. (Yield n=262144 on goroutine-single takes
	// about 800 MiB.)
	maxWarmHeap = 1 << 30
	// warmChunk is the size of the blocks the warm heap is grown with:
	// one page of Go's heap, an object that has a span of its own, so
	// collected they go back to the page heap whole, and any size class
	// can reuse them. No bigger: the page heap hands out the free pages
	// at the lowest addresses first, released ones too, so the warm heap
	// must fill every hole the scavenger left, however small, or the
	// run's first spans land there and fault.
	warmChunk = 8 << 10
)

// gcPolicy applies GCPolicy or GCPolicyOn around each run of one
// measurement.
//
// The scavenger. Go's background scavenger returns free heap pages to the
// OS while the heap retains more than its goal. Go sets that goal when the
// collector's percent or the memory limit is set, and at the end of every
// collection's mark: 1.1 × the heap in use at the last mark's end × (the
// heap goal now / the heap goal of the last collection), the ratio being 1
// at a mark's end. Invariant: from newGCPolicy to end, the goal is at least
// what the heap retains, so a collection that wakes the scavenger leaves it
// nothing to release: it parks at once, with no timer pending.
//   - newGCPolicy runs one collection at a finite percent, then sets -1: the
//     ratio is then unbounded, and so is the goal.
//   - collect, before each run, first allocates blocks over most of the
//     free heap and drops them (occupyFree), then collects at -1: the mark
//     ends before the sweep frees them, so they count as in use and the
//     goal it sets covers the whole retained heap. It sets no percent.
//
// Rejected: the real percent for each forced collection and -1 after it
// (this policy until it was found out). The commit at the real percent set
// a goal of about the live heap; the collection woke the scavenger, which
// released warm-heap pages while the caller waited for the mark, then slept
// on a runtime timer that was often still pending when the timed run
// began. While a timer is pending, Go's scheduler reads the clock on every
// goroutine switch: goroutine-single's PingPong, Handoff and AwaitReady
// read ~30 ns more per switch in a process's first runs (CV of process
// medians 4–9%, about 1% without it). A collection at -1 alone does not
// help: its mark's end sets the goal to 1.1 × the live heap.
//
// The forced collection also sets the size new goroutines' stacks start
// at: Go (adaptivestackstart, on by default) starts them at the average
// stack the last collection scanned, plus a guard, rounded up to a power
// of two. Left alone, that average is of whatever goroutines were alive,
// the driver's own caller chain included, so one frame more in the
// harness took the goroutine rows from 2 KiB to 4 or 8 KiB starting
// stacks (Spawn alive=10000 pool=warm on goroutine-single: 78 MiB of
// stacks instead of 20, 1.37 faults per spawn instead of 0.03, and
// 2700–3000 ns per spawn instead of 660–820). So the collection runs with stackBallast
// goroutines parked with a shallow stack, which hold the average under
// the guard's headroom: goroutines start at Go's default 2 KiB in every
// cell, whoever calls the driver. They stay parked until the run is over
// (after), so no dead goroutine of ours is on Go's free list for the run
// to reuse.
type gcPolicy struct {
	on  bool // GCPolicyOn
	old int  // the collector's percent before the measurement
	// warm is the free, touched heap the last before found (for tests).
	warm uint64
	// cold turns the warm heap off (measuresResidentMemory).
	cold bool
	// ballast is how many goroutines before parks (stackBallast; tests
	// set 0 to show what it prevents).
	ballast int
	// release ends the parked ballast goroutines (nil when none).
	release func()
}

// stackBallast is how many shallow goroutines are parked during a forced
// collection: enough that a 64 KiB-deep caller still averages under 1 KiB.
const stackBallast = 256

func newGCPolicy(on bool) *gcPolicy {
	p := &gcPolicy{on: on, old: debug.SetGCPercent(-1), ballast: stackBallast}
	debug.SetGCPercent(p.old)
	if !on {
		// The scavenger's goal (see the type's doc): a collection at a
		// finite percent, then -1.
		prime := p.old
		if prime < 0 {
			prime = 100 // GOGC=off: a finite percent for this one collection
		}
		debug.SetGCPercent(prime)
		runtime.GC()
		debug.SetGCPercent(-1)
	}
	return p
}

// before prepares a run: under GCPolicyOn a forced collection; under
// GCPolicy a forced collection, then, if the free, touched heap is under
// want bytes, a heap of want bytes allocated and touched page by page
// with the collector off, collected and swept, and the collector left off.
func (p *gcPolicy) before(want uint64) {
	p.release = parkBallast(p.ballast)
	if p.on {
		debug.SetGCPercent(p.old)
		runtime.GC()
		return
	}
	p.collect()
	// want has an eighth of margin (run.heapFor): a heap short of it by
	// less than that needs no second pass over want bytes.
	if p.warm = residentFree(); p.warm >= want-want/9 || p.cold {
		return
	}
	growHeap(want)
	p.collect()
	p.warm = residentFree()
}

// collect runs a forced collection (runtime.GC also finishes the sweep,
// so freed spans are back in the page heap) with the collector off, as
// newGCPolicy left it, after occupyFree: the goal it gives the scavenger
// covers the retained heap (see gcPolicy).
func (p *gcPolicy) collect() {
	occupyFree()
	runtime.GC()
}

// after ends a run: it releases the ballast goroutines and waits until
// they have exited.
func (p *gcPolicy) after() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// parkBallast starts n goroutines that block at once on a channel receive
// (a stack of a few hundred bytes each) and returns the function that
// lets them exit and waits for them.
func parkBallast(n int) (release func()) {
	gate := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			started.Done()
			<-gate
			done.Done()
		}()
	}
	started.Wait()
	return func() {
		close(gate)
		done.Wait()
	}
}

// measuresResidentMemory reports whether s has a figure of resident
// memory (a unit in B/…), which a warm heap would hide: the pages the run
// takes from it are resident already.
func measuresResidentMemory(s *scenarios.Scenario) bool {
	return slices.ContainsFunc(s.Metrics, func(m scenarios.Metric) bool { return strings.HasPrefix(m.Unit, "B/") })
}

// end restores the collector's percent.
func (p *gcPolicy) end() { debug.SetGCPercent(p.old) }

// heapInUse is the bytes of Go's page heap in use by objects and stacks,
// for the demand of a run (run.heap). ReadMemStats stops the world: it is
// called outside the timed region.
func (p *gcPolicy) heapInUse() uint64 {
	if p.on {
		return 0
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// residentFree is the bytes of Go's page heap that are free and not
// returned to the OS: pages an allocation reuses without a page fault
// (HeapIdle counts free spans; HeapReleased those of them the scavenger
// gave back, and fresh address space never touched).
func residentFree() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapIdle - ms.HeapReleased
}

// warmSink holds growHeap's blocks while they are touched, so that the
// compiler keeps the writes and the collector cannot take a block before
// the heap has grown to the size asked for.
var warmSink [][]byte

// growHeap allocates want bytes (rounded up to warmChunk) of large blocks
// and writes one byte per page of each, so the kernel maps every page,
// then drops them: after a collection they are free, touched heap.
func growHeap(want uint64) {
	page := os.Getpagesize()
	for have := uint64(0); have < want; have += warmChunk {
		b := make([]byte, warmChunk)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		warmSink = append(warmSink, b)
	}
	warmSink = nil
}

// occupyFree allocates blocks over fifteen sixteenths of the free, touched
// heap and drops them, so that the collection after it counts them in use
// (its mark ends before its sweep frees them) and sets the scavenger's goal
// to 1.1 × (live heap + 15/16 of the free heap): above what the heap
// retains, so the scavenger has nothing to release (see gcPolicy). Not all
// of it: the sink's own slice (32 bytes per block) must fit in what is
// left, or every collection would grow the heap by that much, and the next
// one occupy that too.
//
// The blocks come from strings.Builder.Grow, which allocates without
// zeroing (the runtime's MakeNoZero): nothing reads them, and they only
// have to be counted in use at the mark's end. make([]byte) zeroed every
// block, which was most of the cost: 42 ms against 6.5 ms to occupy 259
// MiB of free heap (GOMAXPROCS=1, this VM), paid before every run. The
// pages are not touched either way, and what a run later allocates from
// them is zeroed as always (their spans still need zeroing). Same block
// size as growHeap's, for the same reason: a bigger block would skip the
// small holes and leave them out of the count.
func occupyFree() {
	free := residentFree()
	sink := make([]strings.Builder, (free-free/16)/warmChunk)
	for i := range sink {
		sink[i].Grow(warmChunk)
	}
	// Reachable or not, the blocks count in use until the sweep: this
	// only keeps the allocations from looking removable.
	runtime.KeepAlive(sink)
}
