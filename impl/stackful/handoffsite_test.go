package stackful

import (
	"runtime"
	"testing"
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
func BenchmarkPingPongCallSite(b *testing.B) {
	for _, mode := range []string{"sameSite", "twoSites"} {
		b.Run("sides="+mode, func(b *testing.B) {
			s, err := New(Options{Backend: Asm})
			if err != nil {
				b.Skip(err)
			}
			defer s.Close()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n := b.N
			var seen int
			b.ResetTimer()
			cpu0 := threadCPU()
			err = s.Run(func() {
				ping, pong := NewEvent(), NewEvent()
				Go(func() { seen = handOffLoop(n, ping, pong) })
				if mode == "sameSite" {
					ping.Resolve(nil) // the partner's first wait
					handOffLoop(n, pong, ping)
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
		})
	}
}

// handOffLoop is one side of BenchmarkPingPongCallSite: n times, wait for
// in, re-arm it, fire out. Not inlined, so that both sides that run it
// call Await from the same instruction.
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
