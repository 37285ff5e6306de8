package baseline

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestRunWaitsForEveryGoroutine(t *testing.T) {
	var rt Runtime
	var done atomic.Int64
	rt.Run(func() {
		for i := 0; i < 100; i++ {
			rt.Go(func() {
				rt.Yield()
				rt.Sleep(time.Microsecond)
				done.Add(1)
			})
		}
	})
	if got := done.Load(); got != 100 {
		t.Fatalf("Run returned with %d of 100 goroutines finished", got)
	}
}

func TestSignalHandsOffInOrder(t *testing.T) {
	var rt Runtime
	ping, pong := NewSignal(), NewSignal()
	var log []int
	rt.Run(func() {
		rt.Go(func() {
			for i := 0; i < 3; i++ {
				ping.Wait()
				log = append(log, 2*i+1)
				pong.Fire()
			}
		})
		for i := 0; i < 3; i++ {
			log = append(log, 2*i)
			ping.Fire()
			pong.Wait()
		}
	})
	for i, v := range log {
		if v != i {
			t.Fatalf("hand-off order %v, want 0..5", log)
		}
	}
	if len(log) != 6 {
		t.Fatalf("log %v, want 6 entries", log)
	}
}
