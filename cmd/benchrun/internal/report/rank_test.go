package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
)

// rankResults is a hand-made echo sweep at c=64 (20k, 80k, 120k, 160k,
// 200k req/s offered) with each cell's cpu-ns/req, and a generator
// ceiling of 200k req/s: the mark for "possibly generator-bound" is 80%
// of it, 160k. Ten repetitions a cell, so every cost has a finite 95% CI
// within the range of its values.
//   - stackless sustains every rate (knee 200k, at the mark): ranked by
//     its estimate at 120k (the highest rate below 160k), costs
//     2450–2550 ns → 400k, CI within [392k, 408k];
//   - stackful-asm: knee 200k, costs 3950–4050 → 250k, CI within
//     [246.9k, 253.2k];
//   - goroutine-single: knee 200k, costs 4000–4100 → about 246k, CI
//     within [243.9k, 250k]: overlaps stackful-asm's, so tied with it;
//   - stackful-coro: knee 200k, costs 9000 → 111k: an estimate (a lower
//     bound) below the knee it sustained, still ranked by the estimate,
//     among the rows at or above the mark;
//   - goroutine-multi: p99 3 ms at 160k → knee 120k, below the mark:
//     ranked by its measured knee, after every row ranked by estimate.
//
// So: 1 stackless, 2 stackful-asm and goroutine-single (tied), 4
// stackful-coro, 5 goroutine-multi.
func rankResults(t *testing.T, ceiling string) (*cells.Set, string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("goos: linux\n")
	if ceiling != "" {
		b.WriteString("loadgen-ceiling: " + ceiling + "\n")
	}
	rates := []int{20000, 80000, 120000, 160000, 200000}
	add := func(row string, p99At160 int, costLo, costHi float64) {
		for _, r := range rates {
			p99 := 100000
			if r >= 160000 {
				p99 = p99At160
			}
			for i := range 10 {
				cost := costLo + (costHi-costLo)*float64(i)/9
				fmt.Fprintf(&b, "BenchmarkEcho/impl=%s/c=64/rate=%d 1 %d req/s %d p99-ns/req %.0f cpu-ns/req\n", row, r, r, p99, cost)
			}
		}
	}
	add("stackful-asm", 500000, 3950, 4050)
	add("stackless", 500000, 2450, 2550)
	add("stackful-coro", 500000, 9000, 9000)
	add("goroutine-single", 500000, 4000, 4100)
	add("goroutine-multi", 3000000, 3000, 3100)
	dir := t.TempDir()
	in := filepath.Join(dir, "echo.txt")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := cells.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	return set, in
}

func TestRankingEstimatesWhereTheGeneratorCapsTheKnee(t *testing.T) {
	set, in := rankResults(t, "Echo c=64: 200000 req/s (test)")
	sc := set.Scenario("Echo")
	sw := sweepOf(set, sc)
	got := sw.ranking(sc, sc.Rows)
	want := []struct {
		row       string
		rank      int
		estimated bool
		value     float64
		lo, hi    [2]float64 // bounds on the interval's ends
	}{
		{"stackless", 1, true, 1e9 / 2500, [2]float64{1e9 / 2550, 1e9 / 2500}, [2]float64{1e9 / 2500, 1e9 / 2450}},
		{"stackful-asm", 2, true, 1e9 / 4000, [2]float64{1e9 / 4050, 1e9 / 4000}, [2]float64{1e9 / 4000, 1e9 / 3950}},
		{"goroutine-single", 2, true, 1e9 / 4050, [2]float64{1e9 / 4100, 1e9 / 4050}, [2]float64{1e9 / 4050, 1e9 / 4000}},
		{"stackful-coro", 4, true, 1e9 / 9000, [2]float64{1e9 / 9000, 1e9 / 9000}, [2]float64{1e9 / 9000, 1e9 / 9000}},
		{"goroutine-multi", 5, false, 120000, [2]float64{120000, 120000}, [2]float64{160000, 160000}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows ranked, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.row != w.row || g.rank != w.rank || g.fig.estimated != w.estimated || !g.ok {
			t.Errorf("place %d: %s rank %d estimated %v (ok %v), want %s rank %d estimated %v", i+1, g.row, g.rank, g.fig.estimated, g.ok, w.row, w.rank, w.estimated)
			continue
		}
		if math.Abs(g.fig.value-w.value) > 1e-6*w.value {
			t.Errorf("%s: figure %.1f, want %.1f", g.row, g.fig.value, w.value)
		}
		if g.fig.lo < w.lo[0]-1e-6 || g.fig.lo > w.lo[1]+1e-6 || g.fig.hi < w.hi[0]-1e-6 || g.fig.hi > w.hi[1]+1e-6 {
			t.Errorf("%s: interval [%.1f, %.1f], want lo in %v, hi in %v", g.row, g.fig.lo, g.fig.hi, w.lo, w.hi)
		}
		if w.estimated && g.fig.at != 120000 {
			t.Errorf("%s: estimated at %v req/s, want 120000 (the highest rate below 80%% of the ceiling)", g.row, g.fig.at)
		}
	}
	// The section and the headline say so.
	dir := t.TempDir()
	index, err := Build([]string{in}, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(index)
	html := string(page)
	sec := section(t, html, "s-echo")
	for _, want := range []string{
		`<tr><td>1</td><th>stackless</th><td>200k req/s<div class="flag">possibly generator-bound</div><div class="detail">ranked by 400k req/s (95% CI `,
		`estimated from server CPU per req at 120k req/s (2.50 µs there; the generator&#39;s ceiling 200k req/s caps the measured knee): a lower bound on one core&#39;s capacity`,
		`<tr><td>2</td><th>stackful-asm</th>`,
		`<tr><td>2</td><th>goroutine-single</th>`,
		`<tr><td>4</td><th>stackful-coro</th><td>200k req/s<div class="flag">possibly generator-bound</div><div class="detail">ranked by 111k req/s`,
		`<tr><td>5</td><th>goroutine-multi</th><td>120k req/s</td>`,
		`ranked above the others and among themselves by the busy time of their server&#39;s core per req`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("echo section lacks %q", want)
		}
	}
	glance := section(t, html, "glance")
	i := strings.Index(glance, ">echo max sustained</a>")
	if i < 0 {
		t.Fatal("no echo knee line in the headline")
	}
	line := glance[i:]
	line = line[:strings.Index(line, "</tr>")]
	if got := strings.Count(line, "★"); got != 1 || !strings.Contains(line, "one core ≥ 400k (estimated at 120k)") {
		t.Errorf("headline knee line: %d stars, want 1 (stackless, ranked first), and its estimate: %s", got, line)
	}
}

// TestRankingByKneeWithoutACeiling: with no generator ceiling recorded
// (or a knee clear of it) the ranking is the measured knees', as before:
// four rows at 200k tie, goroutine-multi's 120k fifth, no estimates.
func TestRankingByKneeWithoutACeiling(t *testing.T) {
	for _, ceiling := range []string{"", "Echo c=64: 400000 req/s (test)"} {
		set, _ := rankResults(t, ceiling)
		sc := set.Scenario("Echo")
		sw := sweepOf(set, sc)
		for _, r := range sw.ranking(sc, sc.Rows) {
			want := 1
			if r.row == "goroutine-multi" {
				want = 5
			}
			if r.rank != want || r.fig.estimated {
				t.Errorf("ceiling %q: %s rank %d estimated %v, want rank %d by its knee", ceiling, r.row, r.rank, r.fig.estimated, want)
			}
		}
	}
}

// TestOverlap: intervals that overlap tie; a measured knee's half-open
// interval does not tie with the next rate's.
func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b rankFigure
		want bool
	}{
		{rankFigure{value: 250, lo: 240, hi: 260}, rankFigure{value: 245, lo: 235, hi: 255}, true},
		{rankFigure{value: 400, lo: 390, hi: 410}, rankFigure{value: 250, lo: 240, hi: 260}, false},
		{rankFigure{value: 200, lo: 200, hi: 240}, rankFigure{value: 160, lo: 160, hi: 200}, false},
		{rankFigure{value: 200, lo: 200, hi: 240}, rankFigure{value: 200, lo: 200, hi: 240}, true},
		{rankFigure{value: 300, lo: 210, hi: math.Inf(1)}, rankFigure{value: 200, lo: 200, hi: 240}, true},
	} {
		if got := overlap(c.a, c.b); got != c.want || overlap(c.b, c.a) != c.want {
			t.Errorf("overlap(%+v, %+v) = %v, want %v (both ways)", c.a, c.b, got, c.want)
		}
	}
}
