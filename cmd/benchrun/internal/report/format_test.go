package report

import (
	"math"
	"testing"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
)

func TestRatioText(t *testing.T) {
	for r, want := range map[float64]string{0.00073: "0.00073", 0.079: "0.079", 0.26: "0.26", 1: "1.00", 12.68: "12.7", 685.7: "686"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", r, got, want)
		}
	}
}

func TestCIText(t *testing.T) {
	// 6 samples 1..6: CI [1, 6] around 3.5; the wider side is 6/3.5-1 = 71%.
	if got := ciText(stats.Summarize([]float64{1, 2, 3, 4, 5, 6})); got != "±71%" {
		t.Errorf("got %q", got)
	}
	if got := ciText(stats.Summarize([]float64{1, 2, 3})); got != "±∞" {
		t.Errorf("3 samples: %q", got)
	}
	if got := ciText(stats.Summarize([]float64{0, 0, 0, 0, 0, 0})); got != "±0%" {
		t.Errorf("all zero: %q", got)
	}
}

func TestCommonScale(t *testing.T) {
	mk := func(ms ...float64) []*cells.Cell {
		var cs []*cells.Cell
		for _, m := range ms {
			cs = append(cs, &cells.Cell{Summary: stats.Summary{Median: m}})
		}
		return cs
	}
	u := units.Parse("p50-ns/wake")
	if s := commonScale(u, mk(12000, 1.4e6), false); s.Symbol != "ms" {
		t.Errorf("linear: %q, want ms (largest figure)", s.Symbol)
	}
	if s := commonScale(u, mk(12000, 1.4e6), true); s.Symbol != "µs" {
		t.Errorf("log: %q, want µs (geometric middle %v)", s.Symbol, math.Sqrt(12000*1.4e6))
	}
	if span(mk(35, 24000)) < 600 || span(mk(0, 5)) != 0 {
		t.Error("span")
	}
}

func TestSlug(t *testing.T) {
	if got := slug("p99-ns/roundtrip"); got != "p99-ns-roundtrip" {
		t.Errorf("got %q", got)
	}
	if got := slug("AwaitReady"); got != "awaitready" {
		t.Errorf("got %q", got)
	}
}
