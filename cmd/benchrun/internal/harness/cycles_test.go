package harness

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/driver"
)

// fakeCycles returns the figures of successive runs, and a clock that
// advances by step at every run.
func fakeCycles(step time.Duration, figures ...float64) (measure func() (*driver.Sample, error), elapsed func() time.Duration, runs *int) {
	runs = new(int)
	measure = func() (*driver.Sample, error) {
		v := figures[min(*runs, len(figures)-1)]
		*runs++
		if v < 0 {
			return nil, errors.New("checksum mismatch")
		}
		return &driver.Sample{Iters: 1, Values: []float64{v, 10 * v}}, nil
	}
	elapsed = func() time.Duration { return time.Duration(*runs) * step }
	return measure, elapsed, runs
}

// TestMeasureCycles checks hand-computed cases: the cold first run is
// dropped, the others are averaged per metric, at least two runs are made
// and no more once the bench time is filled.
func TestMeasureCycles(t *testing.T) {
	for _, c := range []struct {
		name      string
		step      time.Duration
		benchtime time.Duration
		figures   []float64
		runs      int
		want      []float64
		iters     int
	}{
		// 30 ms a run, 100 ms bench time: runs end at 30, 60, 90, 120 ms,
		// the bench time is filled with 3 warm runs, a fourth follows
		// (150 ms < 400 ms); the fake repeats its last figure: 2,4,6,6.
		{"fills benchtime", 30 * time.Millisecond, 100 * time.Millisecond, []float64{10, 2, 4, 6}, 5, []float64{4.5, 45}, 4},
		// A run longer than the bench time still gets its warm twin.
		{"at least two", time.Second, 100 * time.Millisecond, []float64{10, 3}, 2, []float64{3, 30}, 1},
		// 30 ms runs, 10 ms bench time: 60 ms after two runs is past 4 × 10 ms.
		{"long cycles stop at two", 30 * time.Millisecond, 10 * time.Millisecond, []float64{10, 3}, 2, []float64{3, 30}, 1},
		// 5 ms runs, 10 ms bench time: the bench time is filled after 2
		// runs (1 warm); warm runs go on to 4 (25 ms < 40 ms): 5 runs.
		{"short cycles get four warm runs", 5 * time.Millisecond, 10 * time.Millisecond, []float64{10, 2, 4, 6, 8}, 5, []float64{5, 50}, 4},
		{"zero benchtime", 0, 0, []float64{10, 5}, 2, []float64{5, 50}, 1},
		// A clock that never moves stops at the cap.
		{"cap", 0, time.Hour, []float64{10, 1}, maxCycles, []float64{1, 10}, maxCycles - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			measure, elapsed, runs := fakeCycles(c.step, c.figures...)
			sm, err := measureCycles(measure, c.benchtime, elapsed)
			if err != nil {
				t.Fatal(err)
			}
			if *runs != c.runs || !slices.Equal(sm.Values, c.want) || sm.Iters != c.iters {
				t.Errorf("%d runs, sample %+v; want %d runs, values %v, iters %d", *runs, sm, c.runs, c.want, c.iters)
			}
		})
	}
	measure, elapsed, _ := fakeCycles(time.Millisecond, 10, 2, -1)
	if _, err := measureCycles(measure, time.Second, elapsed); err == nil {
		t.Error("a failed cycle did not fail the cell")
	}
}

// TestShutdownIsCycled: the shutdown scenario is marked for cycles, and a
// cycle can be run twice in one process (a fresh runtime each time) with
// the right checksum on a row of each kind.
func TestShutdownIsCycled(t *testing.T) {
	if !bodies.Shutdown.Cycles || bodies.Shutdown.FixedIters != 1 {
		t.Fatalf("Shutdown: Cycles %v, FixedIters %d; want true and 1", bodies.Shutdown.Cycles, bodies.Shutdown.FixedIters)
	}
	for _, row := range []string{"stackful-asm", "stackless", "goroutine-single"} {
		r := mustRow(t, row)
		old := runtime.GOMAXPROCS(r.GOMAXPROCS())
		measure := func() (*driver.Sample, error) {
			return driver.Measure(bodies.Shutdown, r, map[string]string{"n": "100"}, time.Millisecond)
		}
		start := time.Now()
		sm, err := measureCycles(measure, 0, func() time.Duration { return time.Since(start) })
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatalf("%s: %v", row, err)
		}
		if sm.Iters != 1 || len(sm.Values) != len(bodies.Shutdown.Metrics) || sm.Values[0] <= 0 {
			t.Errorf("%s: sample %+v, want one warm cycle with a positive ns/coroutine and one value per metric", row, sm)
		}
	}
}

func mustRow(t *testing.T, name string) scenarios.Row {
	t.Helper()
	r, ok := scenarios.ParseRow(name)
	if !ok {
		t.Fatalf("no row %q", name)
	}
	return r
}

// TestMeasureCyclesLeavesDisturbedOut: a disturbed warm cycle is left out
// of the mean while the clean ones are a majority; without a majority the
// mean is of every warm cycle and the process is disturbed.
func TestMeasureCyclesLeavesDisturbedOut(t *testing.T) {
	for _, c := range []struct {
		bad       []bool // per cycle, the cold first one included
		want      float64
		disturbed bool
	}{
		{[]bool{false, false, true, false, false}, (2 + 6 + 8) / 3.0, false},
		{[]bool{true, false, true, false, false}, (2 + 6 + 8) / 3.0, false}, // the cold one is dropped anyway
		{[]bool{false, true, true, false, false}, (2 + 4 + 6 + 8) / 4.0, true},
		{[]bool{false, false, false, false, false}, (2 + 4 + 6 + 8) / 4.0, false},
	} {
		figures := []float64{10, 2, 4, 6, 8}
		i := 0
		measure := func() (*driver.Sample, error) {
			v := figures[i]
			sm := &driver.Sample{Iters: 1, Values: []float64{v}, Runs: [][]float64{{v}}, Judged: true, Disturbed: c.bad[i], DisturbedRuns: []bool{c.bad[i]}}
			i++
			return sm, nil
		}
		// 30 ms cycles, 100 ms bench time: five cycles (see TestMeasureCycles).
		sm, err := measureCycles(measure, 100*time.Millisecond, func() time.Duration { return time.Duration(i) * 30 * time.Millisecond })
		if err != nil {
			t.Fatal(err)
		}
		if i != 5 || len(sm.Runs) != 4 || len(sm.DisturbedRuns) != 4 {
			t.Fatalf("%d cycles, %d runs reported with %d verdicts: want 5, and the 4 warm ones", i, len(sm.Runs), len(sm.DisturbedRuns))
		}
		if math.Abs(sm.Values[0]-c.want) > 1e-12 || sm.Disturbed != c.disturbed || !sm.Judged {
			t.Errorf("cycles disturbed %v: value %v, disturbed %v; want %v, %v", c.bad, sm.Values[0], sm.Disturbed, c.want, c.disturbed)
		}
	}
}
