package bodies

import (
	"math"
	"testing"

	"github.com/montanaflynn/stats"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

// TestWakeFigure: readings of a 34 ns latency on a clock with 10 ns steps
// (each rounded down or up by where the fire fell in a step) give 34, not
// the 30 their median gives; a sample over twice the median is left out.
func TestWakeFigure(t *testing.T) {
	const step, latency = 10.0, 34.0
	var samples []float64
	for k := 0; k < 100; k++ {
		phase := float64(k) * step / 100 // where in a step the fire fell
		samples = append(samples, step*(math.Floor((phase+latency)/step)-math.Floor(phase/step)))
	}
	if m, _ := stats.Percentile(samples, 50); m != 30 {
		t.Fatalf("test set-up: median of the readings = %v, want the step below, 30", m)
	}
	got, err := wakeFigure(samples)
	if err != nil || math.Abs(got-latency) > 1e-9 {
		t.Errorf("figure = %v, %v; want %v", got, err, latency)
	}
	got, err = wakeFigure(append(samples, 5000, 59))
	if err != nil || math.Abs(got-(latency*100+59)/101) > 1e-9 {
		t.Errorf("figure with an interrupted wake (5000) and a slow one (59, under twice the median 30) = %v, %v; want %v (5000 left out)",
			got, err, (latency*100+59)/101)
	}
	if _, err := wakeFigure(nil); err == nil {
		t.Error("figure of no samples accepted")
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
