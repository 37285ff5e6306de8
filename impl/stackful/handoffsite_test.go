package stackful

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// BenchmarkPingPongCallSite splits a hand-off's cost into what the runtime
// does and what the CPU's return-address predictor adds: the same ping-pong
// as BenchmarkPingPong, with both sides' Await called from one call site
// (sameSite: one loop function runs both sides) or from two (twoSites: the
// sides are different code, as in BenchmarkPingPong and every scenario
// body). A switch resumes the other side inside Await, whose return to its
// caller pops the return address the suspending side pushed: with one call
// site that is also the resumed side's, with two it is the other side's,
// and that return is mispredicted once per hand-off. No switch design can
// predict it (docs/design.md §3.1); the difference between the two rows is
// its cost.
//
// path=lean runs the same loops on leanAwait and leanFire (below): the
// floor of a hand-off on this scheduler's queue, records and switch, with
// none of the semantics' checks. Measured in session 9 (notes s9/G.md;
// -funcalign=64, taskset -c 1, 6 runs each, cpu-ns/switch): sameSite real
// 13.10-13.35, lean 10.65-10.85; twoSites real 22.25-22.37, lean
// 20.79-21.66. So all the checks the semantics needs cost ~2.4 ns per
// hand-off without the mispredicted return and ~1.2 ns with it (they
// partly run in its shadow), while the return itself costs ~9-10 ns: a
// hand-off between two different bodies stays above 4x a bare Switch
// (~4.7-5.2 ns) however lean the path.
//
// Session 16 (AMD EPYC Zen 5 host; notes s16/pp.md; same flags, 8 pairs
// alternated with the previous tree, -benchtime 5000000x, medians): real
// twoSites 25.09 -> 22.71, real sameSite 17.52 -> 17.44 (ratio median
// 0.93 for both), lean 21.31 and 14.40 unchanged. The real path's excess
// over lean at two sites was ~3.8 ns and is ~1.4 ns: an instruction
// profile (perf -e cpu-clock -F 20000) showed it spread over the checks
// and the write-barrier tests (one per group of pointer stores, nine per
// hand-off) rather than on one instruction; Event.fire and Await now test
// the write barrier once each (see there).
//
// Session 17 (same host and flags; notes s17/handoff.md): fiber.Switch
// now carries its own copy of switchContext's body and loads to.sp into a
// register before its checks (SP loaded from memory at the end had the
// loads behind it wait). Against the previous tree, 6 pairs alternated,
// medians: real twoSites 24.99 -> 20.96 (ratio median 0.868), sameSite
// 16.77 -> 15.21 (0.901). Lean pays the switch too (a later series on a
// busier host: lean twoSites ratio median 0.946, real 0.880, 8 pairs), so
// it is no in-run control for a change to Switch.
func BenchmarkPingPongCallSite(b *testing.B) {
	for _, path := range []string{"real", "lean"} {
		for _, mode := range []string{"sameSite", "twoSites"} {
			b.Run("path="+path+"/sides="+mode, func(b *testing.B) {
				benchCallSite(b, path == "lean", mode == "sameSite")
			})
		}
	}
}

func benchCallSite(b *testing.B, lean, sameSite bool) {
	s, done := lockedAsmScheduler(b)
	defer done()
	n := b.N
	var seen int
	loop := handOffLoop
	if lean {
		loop = handOffLoopLean
	}
	b.ResetTimer()
	cpu0 := threadCPU()
	err := s.Run(func() {
		ping, pong := NewEvent(), NewEvent()
		Go(func() { seen = loop(n, ping, pong) })
		if sameSite {
			ping.Resolve(nil) // the partner's first wait
			loop(n, pong, ping)
			return
		}
		if lean {
			for i := 0; i < n; i++ {
				leanFire(ping)
				leanAwait(pong)
				pong.Reset()
			}
			return
		}
		for i := 0; i < n; i++ {
			ping.Resolve(nil)
			Await(pong)
			pong.Reset()
		}
	})
	cpu1 := threadCPU()
	b.StopTimer()
	if err != nil || seen != n {
		b.Fatalf("Run = %v; the partner saw %d of %d round trips", err, seen, n)
	}
	b.ReportMetric(float64(cpu1-cpu0)/float64(2*n), "cpu-ns/switch")
}

// handOffLoop is one side of BenchmarkPingPongCallSite: n times, wait for
// in, re-arm it, fire out. Not inlined, so that both sides that run it
// call Await from the same instruction. Its twin, handOffLoopLean, is the
// same loop on the lean path: kept apart so that each calls its own Await
// from one instruction.
//
//go:noinline
func handOffLoop(n int, in, out *Event) int {
	seen := 0
	for i := 0; i < n; i++ {
		if _, err := Await(in); err != nil {
			return seen
		}
		in.Reset()
		out.Resolve(nil)
		seen++
	}
	return seen
}

// handOffLoopLean is handOffLoop on leanAwait and leanFire.
//
//go:noinline
func handOffLoopLean(n int, in, out *Event) int {
	seen := 0
	for i := 0; i < n; i++ {
		if _, err := leanAwait(in); err != nil {
			return seen
		}
		in.Reset()
		leanFire(out)
		seen++
	}
	return seen
}

// leanAwait is a measurement prototype, not an API: Await's hand-off with
// only what moves control (link the waker's subscription, WAITING, pop the
// head, switch), none of the checks (the caller's
// goroutine and stack, cancellation and kill, the nil event, microtasks,
// the reactor tick, an IGNORED head, handlers, priorities, statistics).
// Whatever it does not handle (an unstarted head, an empty queue, a fired
// event) goes to Await.
func leanAwait(ev *Event) (any, error) {
	s := running
	co := s.current
	w := &co.waker
	q := &s.queue
	if ev.fired || q.first == nil || q.first.fc == nil {
		return Await(ev)
	}
	w.subs[0].kind, w.subs[0].co = cbResolvePlain, co
	ev.link(&w.subs[0])
	w.nsubs, w.mode, w.timeout = 1, modePlain, -1
	w.status = WakerWaiting
	next := q.first // the run queue's slot: a hand-off queues one at a time (coQueue)
	q.first = nil
	s.current = next
	fiber.Switch(co.fc, next.fc)
	w.status = WakerResult
	return w.result, w.err
}

// leanFire is Event.Resolve(nil) for leanAwait's waiter: mark the event
// fired, take the one subscription off, QUEUED, push into the empty run
// queue's slot (coQueue.first). Anything else goes to Resolve.
func leanFire(e *Event) {
	sub := e.one
	if e.fired || sub == nil || sub.kind != cbResolvePlain || sub.co.s.queue.Len() != 0 {
		e.Resolve(nil)
		return
	}
	e.fired = true
	e.gen++
	co := sub.co
	e.one, sub.ev = nil, nil
	co.waker.nsubs = 0
	co.waker.status = WakerQueued
	co.s.queue.first = co
}
