package reactor

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkTimerRunAppend is the sort of one ring bucket into the run
// (farMove's runAppend) alone: n entries with random deadlines across one
// bucket's width, in start order, as the Timer scenario's bucket of about
// 500 at n=10000. One op is one entry sorted and marked. The nodes sit in
// records of a coroutine's size, as in the runtimes.
func BenchmarkTimerRunAppend(b *testing.B) {
	for _, n := range []int{64, 500, 5000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			l, _ := newFakeLoop(b)
			rng := rand.New(rand.NewPCG(5, 6))
			recs := make([]churnWaiter, n)
			start := int64(1) << 40
			bucket := make([]timerEntry, n)
			for i := range bucket {
				recs[i].node.Init(l, &recs[i])
				d := start + rng.Int64N(1<<farShift)
				bucket[i] = timerEntry{deadline: d, seq: uint64(i + 1), t: &recs[i].node}
			}
			work := make([]timerEntry, n)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			b.ResetTimer()
			for range b.N / n {
				copy(work, bucket)
				l.run = timerRun{a: l.run.a[:0]}
				l.runAppend(work)
			}
			b.StopTimer()
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N/n*n), "cpu-ns/entry")
			for i := range recs {
				recs[i].node.index = -1
			}
			l.run = timerRun{}
			l.active = 0
		})
	}
}
