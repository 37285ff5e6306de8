package reactor

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// batchWaiter is a node whose handler records its firing and then runs an
// optional action (stop or re-arm another node, close the loop).
type batchWaiter struct {
	node TimerNode
	id   int
	log  *[]int
	act  func()
}

func (w *batchWaiter) OnTimer() {
	*w.log = append(*w.log, w.id)
	if w.act != nil {
		w.act()
	}
}

// batchKey is a node's (deadline, seq) as the test's own model keeps it.
type batchKey struct {
	deadline int64
	seq      int
}

// TestBatchedPhaseAtTheRealThresholds runs phases big enough for
// runTimers to take its due timers as one batch with the thresholds as
// they ship (a heap of batchHeapMin or more with batchMin or more due), and
// checks each firing against a model of the nodes' keys: the phase fires
// exactly the nodes armed with a deadline <= now and a seq from before the
// phase, in (deadline, seq) order, and the heap is sound after it. The
// handlers stop and re-arm other nodes, batch members among them that have
// not fired yet: a stopped one never fires, a re-armed one fires at its new
// key, never in the running phase.
//
// The ring of far timers is off here: it would keep the heap under
// batchHeapMin (the fuzz covers the batch with the ring).
func TestBatchedPhaseAtTheRealThresholds(t *testing.T) {
	defer withoutFarRing()()
	l, c := newFakeLoop(t)
	n := max(4*batchHeapMin, 10_000)
	rng := rand.New(rand.NewPCG(5, 6))
	var log []int
	ws := make([]*batchWaiter, n)
	keys := make([]batchKey, n) // the model: each armed node's key
	armed := make([]bool, n)
	var firedKeys []batchKey
	seq := 0
	start := func(i int, deadline int64) {
		ws[i].node.StartAt(deadline)
		seq++
		keys[i], armed[i] = batchKey{max(deadline, c.t), seq}, true
	}
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
	}
	const span = 1_000_000
	for i := range ws {
		// Deadlines on a coarse grid, so that many are equal and their
		// start order decides.
		start(i, c.t+rng.Int64N(span)/64*64)
	}
	// Every handler first records the key it fired at. One in five also
	// acts on another node.
	stopped, rearmed := 0, 0
	for i := range ws {
		target := rng.IntN(n)
		var act func()
		switch {
		case i%5 != 0:
		case i%3 == 0:
			act = func() {
				if armed[target] {
					stopped++
				}
				ws[target].node.Stop()
				armed[target] = false
			}
		case i%3 == 1:
			act = func() {
				if armed[target] {
					rearmed++
				}
				start(target, c.t+int64(rng.IntN(3))*1000)
			}
		default:
			act = func() { start(target, c.t) } // zero delay: a later phase
		}
		ws[i].act = func() {
			if !armed[i] {
				t.Fatalf("node %d fired while the model has it idle", i)
			}
			firedKeys = append(firedKeys, keys[i])
			armed[i] = false
			if act != nil {
				act()
			}
		}
	}
	batches := 0
	for phase := 0; phase < 40; phase++ {
		c.t += span / 20
		l.UpdateTime()
		limit := seq
		log, firedKeys = log[:0], firedKeys[:0]
		bigHeap := l.timers.len() >= batchHeapMin
		fired := l.runTimers()
		if bigHeap && len(l.due.slots) >= batchMin {
			batches++
		}
		checkHeap(t, &l.timers)
		if fired != len(log) {
			t.Fatalf("phase %d: runTimers reports %d, %d handlers ran", phase, fired, len(log))
		}
		for k, key := range firedKeys {
			if key.deadline > c.t || key.seq > limit {
				t.Fatalf("phase %d: node %d fired at key %v (now %d, phase's last seq %d)", phase, log[k], key, c.t, limit)
			}
			if k > 0 && cmp.Or(cmp.Compare(firedKeys[k-1].deadline, key.deadline), cmp.Compare(firedKeys[k-1].seq, key.seq)) > 0 {
				t.Fatalf("phase %d: key %v fired before key %v", phase, firedKeys[k-1], key)
			}
		}
		active := 0
		for id, a := range armed {
			if a {
				active++
				if keys[id].deadline <= c.t && keys[id].seq <= limit {
					t.Fatalf("phase %d: node %d was due at %v and did not fire", phase, id, keys[id])
				}
			}
			if ws[id].node.Active() != a {
				t.Fatalf("phase %d: node %d Active() = %v, model %v", phase, id, ws[id].node.Active(), a)
			}
		}
		if l.Active() != active {
			t.Fatalf("phase %d: Active() = %d, model %d", phase, l.Active(), active)
		}
	}
	if batches == 0 || stopped == 0 || rearmed == 0 {
		t.Fatalf("the test did not exercise the batch: %d batched phases, %d stops and %d re-arms of armed nodes", batches, stopped, rearmed)
	}
	t.Logf("%d batched phases, %d stops and %d re-arms of armed nodes", batches, stopped, rearmed)
}

// TestCloseInsideABatch closes the loop from the handler of a batch's
// third node: the rest of the batch does not fire and is left idle.
func TestCloseInsideABatch(t *testing.T) {
	defer setBatchPath(true)()
	l, c := newFakeLoop(t)
	var log []int
	ws := make([]*batchWaiter, 10)
	for i := range ws {
		ws[i] = &batchWaiter{id: i, log: &log}
		ws[i].node.Init(l, ws[i])
		ws[i].node.StartAt(c.t + int64(i))
	}
	ws[2].act = func() { l.Close() }
	c.t += 100
	l.UpdateTime()
	if fired := l.runTimers(); fired != 3 {
		t.Fatalf("runTimers fired %d, want 3 (the batch stops at Close)", fired)
	}
	if !slices.Equal(log, []int{0, 1, 2}) {
		t.Fatalf("fired %v, want [0 1 2]", log)
	}
	for i, w := range ws {
		if w.node.Active() {
			t.Fatalf("node %d is still active after Close", i)
		}
		w.node.Stop() // a no-op on an idle node
	}
}

// TestBatchSortsWideSpansAndTies checks sortDue's paths: the packed-key
// radix sort with one and several 8-bit passes, its fix-up of equal
// deadlines (the keys order ties by heap slot, not by seq), and the
// comparison sort for a batch whose deadlines span more than the keys'
// offset bits hold.
func TestBatchSortsWideSpansAndTies(t *testing.T) {
	defer setBatchPath(true)()
	for _, span := range []int64{200, 1 << 20, 1 << 39, 1 << 41, 1 << 50} {
		l, c := newFakeLoop(t)
		rng := rand.New(rand.NewPCG(uint64(span), 7))
		var log []int
		const n = 3000
		keys := make([]batchKey, n)
		for i := range n {
			w := &batchWaiter{id: i, log: &log}
			w.node.Init(l, w)
			d := c.t + rng.Int64N(span)
			if i%4 == 0 && i > 0 {
				d = keys[rng.IntN(i)].deadline // a tie with an earlier start
			}
			w.node.StartAt(d)
			keys[i] = batchKey{d, i}
		}
		c.t += span
		l.UpdateTime()
		if fired := l.runTimers(); fired != n {
			t.Fatalf("span %d: fired %d, want %d", span, fired, n)
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		slices.SortFunc(want, func(a, b int) int {
			return cmp.Or(cmp.Compare(keys[a].deadline, keys[b].deadline), cmp.Compare(a, b))
		})
		if !slices.Equal(log, want) {
			for k := range log {
				if log[k] != want[k] {
					t.Fatalf("span %d: firing %d is node %d %v, want node %d %v", span, k, log[k], keys[log[k]], want[k], keys[want[k]])
				}
			}
		}
		l.Close()
	}
}

// withoutFarRing makes every timer go to the heap (buckets of 2^62 ns: no
// deadline reaches the ring's start) and returns the function that restores
// the bucket width.
func withoutFarRing() (restore func()) {
	prev := farShift
	farShift = 62
	return func() { farShift = prev }
}
