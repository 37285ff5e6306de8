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

// This file holds the timing wheel the 4-ary heap was measured against
// (BenchmarkTimerWheel). It is a measurement prototype, not a second timer
// implementation: it keeps the order the loop promises, (deadline, start
// order), by sorting each due slot, but it lacks what the production heap
// also does — finding the nearest deadline for a blocking wait (a wheel needs
// per-level occupancy bitmaps and a scan for that), and the rule that a timer
// started inside a timer phase waits for the next phase. Both would only add
// cost to the wheel, so where the heap is faster here it is faster for real.
//
// Layout: hierarchical, like the classic Linux wheel (kernel/timer.c before
// 4.8): level 0 has 64 slots of 2^wheelShift ns (~1 µs); each level above
// has 64 slots 64 times as wide. A timer sits at the level of the highest
// bit in which its tick differs from the wheel's current tick, so level-0
// slots hold exactly one tick, and a higher slot is cascaded (its timers
// re-inserted lower) when the current tick reaches it.

const (
	wheelShift  = 10 // level-0 slot width: 1024 ns
	wheelBits   = 6  // 64 slots per level
	wheelSlots  = 1 << wheelBits
	wheelLevels = 9 // 10 + 9*6 = 64 bits of nanoseconds
)

type wheelNode struct {
	deadline   int64
	seq        uint64
	prev, next *wheelNode
	slot       int16 // level*64 + slot, -1 when not in the wheel
	h          TimerHandler
}

type timerWheel struct {
	slots [wheelLevels * wheelSlots]*wheelNode // list heads
	cur   int64                                // current tick: every slot before it is empty
	seq   uint64
	due   []wheelDue // scratch for sorting one slot: inline keys, like the heap's
	n     int
}

func newTimerWheel(now int64) *timerWheel {
	return &timerWheel{cur: now >> wheelShift}
}

func (w *timerWheel) insert(n *wheelNode) {
	t := n.deadline >> wheelShift
	if t < w.cur {
		t = w.cur
	}
	level := 0
	if d := uint64(t ^ w.cur); d != 0 {
		level = (bits.Len64(d) - 1) / wheelBits
	}
	idx := level*wheelSlots + int((t>>(uint(level)*wheelBits))&(wheelSlots-1))
	n.slot = int16(idx)
	n.prev, n.next = nil, w.slots[idx]
	if n.next != nil {
		n.next.prev = n
	}
	w.slots[idx] = n
}

func (w *timerWheel) unlink(n *wheelNode) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		w.slots[n.slot] = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	}
	n.prev, n.next, n.slot = nil, nil, -1
}

func (w *timerWheel) start(n *wheelNode, deadline int64) {
	if n.slot >= 0 {
		w.unlink(n)
	} else {
		w.n++
	}
	w.seq++
	n.deadline, n.seq = deadline, w.seq
	w.insert(n)
}

func (w *timerWheel) stop(n *wheelNode) {
	if n.slot >= 0 {
		w.unlink(n)
		w.n--
	}
}

// cascade re-inserts every timer of one slot relative to the current tick.
func (w *timerWheel) cascade(idx int) {
	n := w.slots[idx]
	w.slots[idx] = nil
	for n != nil {
		next := n.next
		w.insert(n)
		n = next
	}
}

// run fires every timer whose deadline is <= now, in (deadline, seq) order,
// and returns how many fired. It steps tick by tick (no bitmap skip: the
// benchmark's deadlines are dense).
func (w *timerWheel) run(now int64) int {
	target := now >> wheelShift
	fired := 0
	for {
		idx := int(w.cur & (wheelSlots - 1))
		// Collect the slot's due timers with their keys, sort by the keys
		// (no node dereference while sorting), fire.
		w.due = w.due[:0]
		for n := w.slots[idx]; n != nil; n = n.next {
			if n.deadline <= now {
				w.due = append(w.due, wheelDue{n.deadline, n.seq, n})
			}
		}
		if len(w.due) > 1 {
			slices.SortFunc(w.due, func(a, b wheelDue) int {
				if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
					return c
				}
				return cmp.Compare(a.seq, b.seq)
			})
		}
		for _, d := range w.due {
			w.unlink(d.n)
			w.n--
			fired++
			d.n.h.OnTimer()
		}
		if w.cur >= target {
			return fired
		}
		w.cur++
		// Entering a new level-l window: cascade its slot downwards, lowest
		// level first; a level cascades only when all lower ones wrapped.
		for l := 1; l < wheelLevels; l++ {
			if w.cur&(1<<(uint(l)*wheelBits)-1) != 0 {
				break
			}
			w.cascade(l*wheelSlots + int((w.cur>>(uint(l)*wheelBits))&(wheelSlots-1)))
		}
	}
}

// wheelDue is a due timer with its key inline, for sorting one slot.
type wheelDue struct {
	deadline int64
	seq      uint64
	n        *wheelNode
}

type wheelWaiter struct {
	node  wheelNode
	woken int
	_     [64]byte
}

func (w *wheelWaiter) OnTimer() { w.woken++ }

// TestTimerWheelOrder checks the prototype against the loop's heap on the
// same random schedule, so that BenchmarkTimerWheel measures a wheel that
// fires what the heap fires, in the same order.
func TestTimerWheelOrder(t *testing.T) {
	l, c := newFakeLoop(t)
	wh := newTimerWheel(c.t)
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20_000
	var heapOrder, wheelOrder []int
	hw := make([]*nodeWaiter, n)
	ww := make([]*wheelNode, n)
	for i := range n {
		i := i
		hw[i] = &nodeWaiter{cb: func() { heapOrder = append(heapOrder, i) }}
		hw[i].node.Init(l, hw[i])
		ww[i] = &wheelNode{slot: -1, h: wheelRecorder{&wheelOrder, i}}
		// Deadlines over ~70 ms, cascading through three levels; ties too.
		d := c.t + rng.Int64N(1<<26)&^0xff
		hw[i].node.StartAt(d)
		wh.start(ww[i], d)
	}
	for i := 0; i < n; i += 5 {
		hw[i].node.Stop()
		wh.stop(ww[i])
	}
	for c.t < 1000+1<<26+1<<20 {
		c.t += rng.Int64N(1 << 18)
		tick(t, l, true)
		wh.run(c.t)
		if !slices.Equal(heapOrder, wheelOrder) {
			t.Fatalf("at %d: heap fired %d, wheel fired %d, orders differ", c.t, len(heapOrder), len(wheelOrder))
		}
	}
	if len(heapOrder) != n-n/5 || wh.n != 0 {
		t.Fatalf("heap fired %d, want %d; wheel has %d left", len(heapOrder), n-n/5, wh.n)
	}
}

type wheelRecorder struct {
	out *[]int
	id  int
}

func (r wheelRecorder) OnTimer() { *r.out = append(*r.out, r.id) }

// BenchmarkTimerWheel runs the heap's two timer benchmarks on the wheel
// prototype: start+stop of one timer among n pending (compare
// BenchmarkTimerNodeStartStop), and firing n due timers in one pass
// (compare BenchmarkTimerFireAllDue/api=node).
func BenchmarkTimerWheel(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("op=startstop/timers=%d", n), func(b *testing.B) {
			now := int64(1000)
			wh := newTimerWheel(now)
			rng := rand.New(rand.NewPCG(1, 2))
			const span = int64(time.Hour)
			for range n {
				w := &wheelWaiter{node: wheelNode{slot: -1}}
				w.node.h = w
				wh.start(&w.node, now+rng.Int64N(span))
			}
			var delays [1024]int64
			for i := range delays {
				delays[i] = rng.Int64N(span)
			}
			w := &wheelWaiter{node: wheelNode{slot: -1}}
			w.node.h = w
			i := 0
			for b.Loop() {
				wh.start(&w.node, now+delays[i&1023])
				wh.stop(&w.node)
				i++
			}
			if wh.n != n {
				b.Fatalf("wheel holds %d, want %d", wh.n, n)
			}
		})
	}
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("op=fire/timers=%d", n), func(b *testing.B) {
			now := int64(1000)
			wh := newTimerWheel(now)
			rng := rand.New(rand.NewPCG(1, 2))
			deadlines := make([]int64, n)
			for i := range deadlines {
				deadlines[i] = rng.Int64N(int64(n))
			}
			ws := make([]*wheelWaiter, n)
			for i := range ws {
				ws[i] = &wheelWaiter{node: wheelNode{slot: -1}}
				ws[i].node.h = ws[i]
			}
			runs := 0
			for b.Loop() {
				b.StopTimer()
				for i, w := range ws {
					wh.start(&w.node, now+1+deadlines[i])
				}
				now += int64(n) + 1
				b.StartTimer()
				if got := wh.run(now); got != n {
					b.Fatalf("fired %d of %d", got, n)
				}
				runs++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*n), "ns/fire")
		})
	}
}

// BenchmarkTimerFireSparse is the fire-all-due comparison with the timers
// spread one per microsecond (about one per level-0 wheel slot) instead of
// n within n ns as in BenchmarkTimerFireAllDue and BenchmarkTimerWheel
// op=fire, where each wheel slot holds ~1000 timers to sort. The heap does
// not care about the spread; the wheel sorts less but steps more slots.
func BenchmarkTimerFireSparse(b *testing.B) {
	for _, impl := range []string{"heap", "wheel"} {
		for _, n := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("impl=%s/timers=%d", impl, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				span := int64(n) * 1000
				deadlines := make([]int64, n)
				for i := range deadlines {
					deadlines[i] = rng.Int64N(span)
				}
				var arm func(base int64)
				var run func(now int64) int
				if impl == "heap" {
					l, c := newFakeLoop(b)
					ws := make([]*benchWaiter, n)
					for i := range ws {
						ws[i] = new(benchWaiter)
						ws[i].node.Init(l, ws[i])
					}
					arm = func(base int64) {
						for i, w := range ws {
							w.node.StartAt(base + deadlines[i])
						}
					}
					run = func(now int64) int {
						c.t = now
						got, err := l.Tick(true)
						if err != nil {
							b.Fatal(err)
						}
						return got
					}
				} else {
					wh := newTimerWheel(1000)
					ws := make([]*wheelWaiter, n)
					for i := range ws {
						ws[i] = &wheelWaiter{node: wheelNode{slot: -1}}
						ws[i].node.h = ws[i]
					}
					arm = func(base int64) {
						for i, w := range ws {
							wh.start(&w.node, base+deadlines[i])
						}
					}
					run = wh.run
				}
				now, runs := int64(1000), 0
				for b.Loop() {
					b.StopTimer()
					arm(now + 1)
					now += span + 1
					b.StartTimer()
					if got := run(now); got != n {
						b.Fatalf("fired %d of %d", got, n)
					}
					runs++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*n), "ns/fire")
			})
		}
	}
}

// wheelChurnWaiter is churnWaiter on the wheel prototype.
type wheelChurnWaiter struct {
	node   wheelNode
	wh     *timerWheel
	now    *int64
	delays []time.Duration
	k      *int
	woken  int
	_      [256]byte
}

func (w *wheelChurnWaiter) OnTimer() {
	w.woken++
	*w.k++
	w.wh.start(&w.node, *w.now+int64(w.delays[*w.k&(len(w.delays)-1)]))
}

// BenchmarkTimerWheelChurn is BenchmarkTimerChurn (the Timer scenario's
// steady state: random 50 µs–5 ms re-arms, 100 µs phases) on the wheel
// prototype.
func BenchmarkTimerWheelChurn(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			now := int64(1000)
			wh := newTimerWheel(now)
			rng := rand.New(rand.NewPCG(1, 2))
			delays := make([]time.Duration, 1<<16)
			for i := range delays {
				delays[i] = 50*time.Microsecond + time.Duration(rng.Int64N(int64(5*time.Millisecond-50*time.Microsecond)))
			}
			k := 0
			for range n {
				w := &wheelChurnWaiter{node: wheelNode{slot: -1}, wh: wh, now: &now, delays: delays, k: &k}
				w.node.h = w
				k++
				wh.start(&w.node, now+int64(delays[k&(len(delays)-1)]))
			}
			for range 100 {
				now += int64(100 * time.Microsecond)
				wh.run(now)
			}
			fired := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			b.ResetTimer()
			for fired < b.N {
				now += int64(100 * time.Microsecond)
				fired += wh.run(now)
			}
			b.StopTimer()
			cpu := threadCPU() - cpu0
			if wh.n != n {
				b.Fatalf("wheel holds %d, want %d", wh.n, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fired), "ns/fire")
			b.ReportMetric(float64(cpu)/float64(fired), "cpu-ns/fire")
		})
	}
}
