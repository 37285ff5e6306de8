package reactor

import (
	"cmp"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTimerRunMergesWithHeap: at the shipped bucket width, a bucket the
// loop's time reaches moves into the sorted run; timers started near their
// deadline go to the heap; firing merges the two in (deadline, start
// order), equal deadlines across them included; Stop of the run's head and
// of an entry behind it, a re-arm out of the run, and a Stop from another
// node's handler all keep a node from firing at its old place; the
// blocking wait's deadline sees the run; Close leaves run nodes idle.
func TestTimerRunMergesWithHeap(t *testing.T) {
	l, c := newFakeLoop(t)
	width := int64(1) << farShift
	s := (c.t>>farShift + 2) << farShift // a bucket's start, two ahead
	var log []int
	ws := make([]*batchWaiter, 9)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	ws[0].node.StartAt(s + 10) // A: the run's head, stopped below
	ws[1].node.StartAt(s + 10) // B: behind it, stopped below
	ws[2].node.StartAt(s + 10) // C: re-armed below, into the heap
	ws[3].node.StartAt(s + 20) // D
	ws[4].node.StartAt(s + 30) // E: stopped by G's handler
	ws[8].node.StartAt(s + 35) // I: the run's last, stopped below
	if l.far.n != 6 {
		t.Fatalf("ring holds %d, want 6", l.far.n)
	}
	c.t = s + 1
	tick(t, l, true)
	if got := len(l.run.a) - l.run.h; got != 6 || l.far.n != 0 || len(log) != 0 {
		t.Fatalf("run holds %d, ring %d, fired %v: want 6, 0, none", got, l.far.n, log)
	}
	checkRun(t, l)
	ws[5].node.StartAt(s + 10) // F: heap, A's deadline, started after A to C
	ws[6].node.StartAt(s + 15) // G: heap
	ws[6].act = func() { ws[4].node.Stop() }
	if len(l.timers.a) != 2 {
		t.Fatalf("heap holds %d, want 2", len(l.timers.a))
	}
	ws[1].node.Stop()
	ws[2].node.StartAt(s + 20) // behind D: started later
	ws[0].node.Stop()
	ws[8].node.Stop()
	checkRun(t, l)
	checkHeap(t, &l.timers)
	if l.Active() != 5 || ws[0].node.Active() || ws[1].node.Active() || !ws[2].node.Active() {
		t.Fatalf("Active() = %d (want 5); A, B, C active: %v %v %v (want false false true)",
			l.Active(), ws[0].node.Active(), ws[1].node.Active(), ws[2].node.Active())
	}
	if e := l.nearest(); e == nil || e.t != &ws[5].node {
		t.Fatalf("nearest is not F, the heap's, after the run's head stopped")
	}
	// The coalescing window (50 µs) holds every deadline: the wait ends at
	// the last armed one, E's, which only the run holds (I's entry, stopped,
	// does not count).
	if got := l.wakeDeadline(); got != s+30 {
		t.Fatalf("wait deadline %d, want %d", got, s+30)
	}
	c.t = s + 40
	tick(t, l, true)
	if !slices.Equal(log, []int{5, 6, 3, 2}) {
		t.Fatalf("fired %v, want [5 6 3 2] (F, G, D, C)", log)
	}
	if l.Active() != 0 || len(l.run.a) != 0 || l.run.h != 0 {
		t.Fatalf("Active() = %d, run %d entries head %d: want all 0", l.Active(), len(l.run.a), l.run.h)
	}
	// Close with a node in the run.
	ws[7].node.StartAt(c.t + 3*width)
	c.t += 3 * width
	l.UpdateTime()
	l.farSync(c.t)
	if ws[7].node.index < runBase || ws[7].node.index >= runLimit {
		t.Fatalf("node index %d: not a run mark", ws[7].node.index)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if ws[7].node.Active() {
		t.Fatal("a run node is still active after Close")
	}
	ws[7].node.Stop() // a no-op on the idle node
}

// TestPrefetchTimerNodeNeverFaults: popTimers hands prefetchTimerNode the
// node of a run entry ahead and fetches 64 bytes before it; the hints must
// never fault, on any address: a load in their place would crash here.
func TestPrefetchTimerNodeNeverFaults(t *testing.T) {
	for _, addr := range []uintptr{0, 1, 63, 4096, 1 << 47, ^uintptr(0) - 190} {
		prefetchTimerNode(addr)
	}
}

// TestGroupSortOrdersEntries: groupSort puts a bucket in (deadline, seq)
// order for bucket sizes from 1 to past its largest group count, spans from
// 0 to 62 bits, ties (in start order and out of it, as farRemove's swaps
// leave them), and refuses, leaving the run as it was, exactly when a group
// would be crowded; runAppend's fallback then sorts such a bucket too.
func TestGroupSortOrdersEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	refused := 0
	for _, n := range []int{1, 2, 3, 17, 64, 500, 5000, 9000} {
		for _, span := range []int64{0, 1, 100, 1 << 17, 1 << 40, 1 << 62} {
			for _, ties := range []int{0, 3, 50} { // every ties-th entry repeats an earlier deadline
				nodes := make([]TimerNode, n)
				b := make([]timerEntry, n)
				for i := range b {
					d := int64(1)<<40 + rng.Int64N(span+1)
					if ties > 0 && i > 0 && i%ties == 0 {
						d = b[rng.IntN(i)].deadline
					}
					b[i] = timerEntry{deadline: d, seq: uint64(i + 1), t: &nodes[i]}
				}
				// Swap a few entries, as farRemove does: ties out of start order.
				for range n / 10 {
					i, j := rng.IntN(n), rng.IntN(n)
					b[i], b[j] = b[j], b[i]
				}
				want := slices.Clone(b)
				slices.SortFunc(want, func(x, y timerEntry) int {
					return cmp.Or(cmp.Compare(x.deadline, y.deadline), cmp.Compare(x.seq, y.seq))
				})
				prefix := []timerEntry{{deadline: 1, seq: 0}}
				got, ok := groupSort(b, prefix, &dueScratch{})
				if !ok {
					refused++
					if len(got) != 1 {
						t.Fatalf("n=%d span=%d ties=%d: refused but changed the run (len %d)", n, span, ties, len(got))
					}
					if !crowdedGroups(b) {
						t.Fatalf("n=%d span=%d ties=%d: refused without a crowded group", n, span, ties)
					}
					continue
				}
				if crowdedGroups(b) {
					t.Fatalf("n=%d span=%d ties=%d: sorted a bucket with a crowded group", n, span, ties)
				}
				if got[0] != prefix[0] || !slices.Equal(got[1:], want) {
					t.Fatalf("n=%d span=%d ties=%d: not in (deadline, seq) order", n, span, ties)
				}
			}
		}
	}
	if refused == 0 {
		t.Fatal("no case was refused: widen the cases so the fallback is covered")
	}
}

// crowdedGroups is groupSort's refusal test, written plainly: whether some
// group of its layout would hold more than groupMax entries.
func crowdedGroups(b []timerEntry) bool {
	lo, hi := b[0].deadline, b[0].deadline
	for _, e := range b {
		lo, hi = min(lo, e.deadline), max(hi, e.deadline)
	}
	digit := min(bits.Len(uint(len(b))), groupMaxDigit)
	shift := max(bits.Len64(uint64(hi-lo))-digit, 0)
	n := map[uint64]int{}
	for _, e := range b {
		g := uint64(e.deadline-lo) >> shift
		if n[g]++; n[g] > groupMax {
			return true
		}
	}
	return false
}

// TestRunAppendFallsBackForCrowdedBuckets: a bucket whose deadlines
// crowd one group (here every deadline equal, started out of order by
// Stops that swap ring positions) still fires in (deadline, start order)
// through the run, with every node marked.
func TestRunAppendFallsBackForCrowdedBuckets(t *testing.T) {
	l, c := newFakeLoop(t)
	s := (c.t>>farShift + 2) << farShift
	var log []int
	ws := make([]*batchWaiter, 200)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
		ws[i].node.StartAt(s + 7)
	}
	for i := 0; i < len(ws); i += 7 {
		ws[i].node.Stop() // the bucket's last entry moves into its slot
	}
	c.t = s + 1
	tick(t, l, true)
	checkRun(t, l)
	c.t = s + 8
	tick(t, l, true)
	var want []int
	for i := range ws {
		if i%7 != 0 {
			want = append(want, i)
		}
	}
	if !slices.Equal(log, want) {
		t.Fatalf("fired %v, want %v", log, want)
	}
}
