package driver

import (
	"runtime"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	_ "github.com/corobench/corobench/scenarios/rows"
)

func TestGCOnIsRefusedForTheAsmRowOnly(t *testing.T) {
	_, err := MeasureWith(bodies.PingPong, scenarios.StackfulAsm, nil, Options{Benchtime: time.Millisecond, GCOn: true})
	if reason, ok := scenarios.IsNotSupported(err); !ok || reason == "" {
		t.Fatalf("stackful-asm with the collector on: err = %v, want not supported with a reason", err)
	}
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for _, row := range []scenarios.Row{scenarios.StackfulCoro, scenarios.Stackless, scenarios.GoroutineSingle} {
		if _, err := MeasureWith(bodies.PingPong, row, nil, Options{Benchtime: time.Millisecond, GCOn: true}); err != nil {
			t.Errorf("%s with the collector on: %v", row, err)
		}
	}
}

func TestNextItersGrowsTowardBenchtime(t *testing.T) {
	cases := []struct {
		n       int
		elapsed time.Duration
		want    int
	}{
		{1, time.Microsecond, 100},            // capped at 100× growth
		{100, time.Millisecond, 2400},         // 10µs each: 20ms/10µs = 2000, +20%
		{1000, time.Second, 1001},             // already slow: grow by one
		{1 << 29, time.Nanosecond, 1<<29 + 1}, // under 1ns each rounds to 1ns: already past benchtime, grow by one
		{10, 0, 1000},                         // no time measured: treat as 1ns each, capped at 100×
	}
	for _, c := range cases {
		if got := nextIters(c.n, c.elapsed, 20*time.Millisecond); got != c.want {
			t.Errorf("nextIters(%d, %v) = %d, want %d", c.n, c.elapsed, got, c.want)
		}
	}
}

// withRowGOMAXPROCS sets GOMAXPROCS as benchrun does for row's cells, for
// the rest of the test.
func withRowGOMAXPROCS(t *testing.T, row scenarios.Row) {
	old := runtime.GOMAXPROCS(row.GOMAXPROCS())
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}
