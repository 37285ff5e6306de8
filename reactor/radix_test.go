package reactor

import (
	"cmp"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// This file holds a radix heap, the second structure the 4-ary heap was
// measured against (BenchmarkTimerRadixChurn, beside BenchmarkTimerChurn and
// BenchmarkTimerWheelChurn). It is a measurement prototype, not a second
// timer implementation.
//
// Why it applies: the loop's timer keys are monotone. A start clamps its
// deadline to Now() and the phase fires only keys <= Now(), and seq only
// grows, so every key inserted is above the last key taken out. A radix
// heap keeps keys in buckets by the highest bit in which they differ from
// the last key taken out: an insert is one bucket index and an append (no
// sift), and a key moves to a lower bucket only when its bucket is the
// lowest non-empty one and is redistributed, at most once per bit.
//
// Keys are (deadline, seq) as one 128-bit number, as in lessBit, so they
// are unique and the order is the heap's. What it lacks for production:
// the nearest deadline for a blocking wait needs the same redistribution as
// a pop, and wakeDeadline's coalescing walk has no subtree to walk.

type radixEntry struct {
	hi, lo uint64 // deadline with its sign bit flipped, seq
	n      *radixNode
}

type radixNode struct {
	bucket, pos int32 // bucket -1 when idle
	h           TimerHandler
}

type radixHeap struct {
	last    [2]uint64 // hi, lo of the last key taken out
	buckets [129][]radixEntry
	occ     [3]uint64 // bit b set when bucket b is non-empty
	n       int
}

func (r *radixHeap) bucketOf(hi, lo uint64) int {
	if d := hi ^ r.last[0]; d != 0 {
		return 64 + bits.Len64(d)
	}
	return bits.Len64(lo ^ r.last[1])
}

func (r *radixHeap) put(b int, e radixEntry) {
	e.n.bucket, e.n.pos = int32(b), int32(len(r.buckets[b]))
	r.buckets[b] = append(r.buckets[b], e)
	r.occ[b>>6] |= 1 << (b & 63)
}

// insert adds a key not below the last key taken out.
func (r *radixHeap) insert(n *radixNode, deadline int64, seq uint64) {
	hi := uint64(deadline) ^ 1<<63
	r.put(r.bucketOf(hi, seq), radixEntry{hi: hi, lo: seq, n: n})
	r.n++
}

func (r *radixHeap) remove(n *radixNode) {
	b := int(n.bucket)
	s := r.buckets[b]
	last := len(s) - 1
	if int(n.pos) != last {
		s[n.pos] = s[last]
		s[n.pos].n.pos = n.pos
	}
	s[last] = radixEntry{}
	r.buckets[b] = s[:last]
	if last == 0 {
		r.occ[b>>6] &^= 1 << (b & 63)
	}
	n.bucket = -1
	r.n--
}

// due returns the least entry if its deadline is <= now, else nil. Only
// then does it redistribute the lowest non-empty bucket (so that the entry
// is alone in bucket 0) and make its key the last one taken out: a later
// start may still insert a key below a not-yet-due minimum (its deadline is
// only >= Now()), so a peek must not move the base past Now().
func (r *radixHeap) due(now int64) *radixEntry {
	if r.n == 0 {
		return nil
	}
	if len(r.buckets[0]) > 0 {
		e := &r.buckets[0][0]
		if int64(e.hi^1<<63) > now {
			return nil
		}
		return e
	}
	b := 0
	for w, o := range r.occ {
		if o != 0 {
			b = w*64 + bits.TrailingZeros64(o)
			break
		}
	}
	s := r.buckets[b]
	m := 0
	for j := 1; j < len(s); j++ {
		if lessBit128(s[j].hi, s[j].lo, s[m].hi, s[m].lo) {
			m = j
		}
	}
	if int64(s[m].hi^1<<63) > now {
		return nil
	}
	r.last = [2]uint64{s[m].hi, s[m].lo}
	r.buckets[b] = s[:0]
	r.occ[b>>6] &^= 1 << (b & 63)
	for _, e := range s {
		r.put(r.bucketOf(e.hi, e.lo), e)
	}
	clear(s)
	return &r.buckets[0][0]
}

func lessBit128(ahi, alo, bhi, blo uint64) bool {
	_, borrow := bits.Sub64(alo, blo, 0)
	_, borrow = bits.Sub64(ahi, bhi, borrow)
	return borrow != 0
}

// run fires every entry due at now that was inserted before the phase
// (seq <= limit), as runTimers does, and returns how many fired.
func (r *radixHeap) run(now int64, limit uint64) int {
	fired := 0
	for {
		e := r.due(now)
		if e == nil || e.lo > limit {
			return fired
		}
		n := e.n
		r.remove(n)
		fired++
		n.h.OnTimer()
	}
}

// TestRadixHeapOrder checks the prototype against a sort: the figures of
// BenchmarkTimerRadixChurn are only worth reading if it fires what the
// heap fires, in the same order.
func TestRadixHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r radixHeap
	type rec struct {
		deadline int64
		seq      uint64
	}
	var seq uint64
	now := int64(1000)
	r.last = [2]uint64{uint64(now) ^ 1<<63, 0}
	nodes := make([]radixNode, 2000)
	keys := make([]rec, len(nodes))
	var got []int
	for i := range nodes {
		i := i
		nodes[i].bucket = -1
		nodes[i].h = timerFunc(func() { got = append(got, i) })
	}
	for round := range 50 {
		for i := range nodes {
			if nodes[i].bucket >= 0 && rng.IntN(4) == 0 {
				r.remove(&nodes[i])
			}
			if nodes[i].bucket < 0 && rng.IntN(2) == 0 {
				seq++
				d := now + rng.Int64N(50) // many equal deadlines
				keys[i] = rec{d, seq}
				r.insert(&nodes[i], d, seq)
			}
		}
		now += 20
		var want []int
		for i := range nodes {
			if nodes[i].bucket >= 0 && keys[i].deadline <= now {
				want = append(want, i)
			}
		}
		slices.SortFunc(want, func(a, b int) int {
			return cmp.Or(cmp.Compare(keys[a].deadline, keys[b].deadline), cmp.Compare(keys[a].seq, keys[b].seq))
		})
		got = got[:0]
		r.run(now, seq)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: fired %v, want %v", round, got, want)
		}
	}
}

type timerFunc func()

func (f timerFunc) OnTimer() { f() }

// radixChurnWaiter is churnWaiter on the radix prototype.
type radixChurnWaiter struct {
	node   radixNode
	r      *radixHeap
	now    *int64
	seq    *uint64
	delays []time.Duration
	k      *int
	woken  int
	_      [256]byte
}

func (w *radixChurnWaiter) OnTimer() {
	w.woken++
	*w.k++
	*w.seq++
	w.r.insert(&w.node, *w.now+int64(w.delays[*w.k&(len(w.delays)-1)]), *w.seq)
}

// BenchmarkTimerRadixChurn is BenchmarkTimerChurn (random 50 µs–5 ms
// re-arms, 100 µs phases) on the radix prototype.
func BenchmarkTimerRadixChurn(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			now := int64(1000)
			var seq uint64
			r := &radixHeap{last: [2]uint64{uint64(now) ^ 1<<63, 0}}
			rng := rand.New(rand.NewPCG(1, 2))
			delays := make([]time.Duration, 1<<16)
			for i := range delays {
				delays[i] = 50*time.Microsecond + time.Duration(rng.Int64N(int64(5*time.Millisecond-50*time.Microsecond)))
			}
			k := 0
			for range n {
				w := &radixChurnWaiter{node: radixNode{bucket: -1}, r: r, now: &now, seq: &seq, delays: delays, k: &k}
				w.node.h = w
				k++
				seq++
				r.insert(&w.node, now+int64(delays[k&(len(delays)-1)]), seq)
			}
			for range 100 {
				now += int64(100 * time.Microsecond)
				r.run(now, seq)
			}
			fired := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			b.ResetTimer()
			for fired < b.N {
				now += int64(100 * time.Microsecond)
				fired += r.run(now, seq)
			}
			b.StopTimer()
			cpu := threadCPU() - cpu0
			if r.n != n {
				b.Fatalf("radix heap holds %d, want %d", r.n, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fired), "ns/fire")
			b.ReportMetric(float64(cpu)/float64(fired), "cpu-ns/fire")
		})
	}
}
