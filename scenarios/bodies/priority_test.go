package bodies

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

func TestWakeMedian(t *testing.T) {
	got, err := wakeMedian([]float64{900, 100, 300, 200, 5000})
	if err != nil || got != 300 {
		t.Errorf("median = %v, %v; want 300", got, err)
	}
	if _, err := wakeMedian(nil); err == nil {
		t.Error("median of no samples accepted")
	}
}

// normalOnly is the stackful adapter with priorities switched off: its
// GoHigh spawns a normal coroutine.
type normalOnly struct{ scenarios.Blocking }

func (normalOnly) GoHigh(fn func()) { stackful.Go(fn) }

// TestPriorityChecksumCatchesAQueuedWake: if the woken coroutine queues
// behind the normal ones, the checksum no longer matches Want, so the cell
// fails instead of reporting a latency that was not a priority wake.
func TestPriorityChecksumCatchesAQueuedWake(t *testing.T) {
	env := &scenarios.Env{N: 20, Params: map[string]string{"n": "10"}}
	for _, c := range []struct {
		name  string
		rt    scenarios.Blocking
		match bool
	}{{"high", rows.Fibers(stackful.Asm, false), true}, {"normal", normalOnly{rows.Fibers(stackful.Asm, false)}, false}} {
		var out scenarios.Outcome
		runOnStackful(t, stackful.Coro, func() (err error) {
			out, err = priorityBlocking(c.rt, env)
			return err
		})
		if got := out.Checksum == priorityWant(env); got != c.match {
			t.Errorf("%s priority: checksum matches Want = %v, want %v", c.name, got, c.match)
		}
		if out.Values["ns/wake"] <= 0 {
			t.Errorf("%s priority: ns/wake = %v", c.name, out.Values["ns/wake"])
		}
	}
}
