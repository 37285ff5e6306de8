package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
)

// The Echo ranking where the load generator caps the knees.
//
// A row's measured knee ranks it only when the knee lies below the
// generator's ceiling with margin (under genBound of it): there the row,
// not the generator, fell behind. A knee at or above that mark may be the
// generator's, and on a 2-core machine every fast row's is: both sides
// pay the same loopback path per request, so one generator core cannot
// outrun one server core. Such rows rank above every row whose knee was
// measured below the mark, and among themselves by what their server's
// core spent per request (LoadSweep.Capacity, cpu-ns/req, its median over
// the runs) at one common rate they all sustained clear of the generator:
// the highest rate of the sweep below the mark. The figure shown is 1e9
// over that cost, the rate one core would sustain if a request always
// cost what it did there.
//
// That is a lower bound, not a prediction: on the reference VM the cost
// per request falls as the load rises (the server's wake-ups, system calls
// and the core's idle transitions are shared by more requests), so the
// core is busy 95–100% well before the server is saturated. Measured with
// benchrun loadgen -self-echo: a trivial server costing 6.3 µs per request
// at 150k req/s (1e9/cost 158k) sustained 210k; one burning 10 µs of CPU
// per request, 21.6 µs at 40k (46k) sustained 86–95k. So the figure
// compares rows at the same rate; it does not say how far each would go.
//
// Each figure carries an interval: a measured knee lies between its rate
// and the sweep's next (half open), an estimate within the 95% confidence
// interval of its cost's median, inverted. Rows whose intervals overlap
// are tied: they differ by less than their own noise.

// rankFigure is what a row is ranked by.
type rankFigure struct {
	value, lo, hi float64 // offered operations per second
	estimated     bool
	at            float64 // the rate the cost was measured at (estimated)
	cost          float64 // its median, ns per operation (estimated)
}

// rankFigureOf returns row's figure, false when it has no knee.
func (sw *sweep) rankFigureOf(sc *cells.Scenario, row string) (rankFigure, bool) {
	k := sw.knee(row)
	if k < 0 {
		return rankFigure{}, false
	}
	knee := sw.rates[k]
	f := rankFigure{value: knee, lo: knee, hi: math.Inf(1)}
	if next := sw.nextRate(k, sw.main); next >= 0 {
		f.hi = sw.rates[next]
	}
	c := sw.ceiling
	if c == nil || c.rate <= 0 || knee < genBound*c.rate || sw.load.Capacity == "" {
		return f, true
	}
	// The highest rate of the main group at or below the knee, clear of
	// the generator, at which the row has a cost figure.
	at := -1
	for _, i := range sw.mainColumns() {
		r := sw.rates[i]
		if r > knee || r >= genBound*c.rate || sc.Cell(row, sc.Columns[i], sw.load.Capacity) == nil {
			continue
		}
		if at < 0 || r > sw.rates[at] {
			at = i
		}
	}
	if at < 0 {
		return f, true
	}
	s := sc.Cell(row, sc.Columns[at], sw.load.Capacity).Summary
	if !(s.Median > 0) {
		return f, true
	}
	est := rankFigure{estimated: true, at: sw.rates[at], cost: s.Median,
		value: 1e9 / s.Median, lo: 0, hi: math.Inf(1)}
	if s.Hi > 0 && !math.IsInf(s.Hi, 1) {
		est.lo = 1e9 / s.Hi
	}
	if s.Lo > 0 {
		est.hi = 1e9 / s.Lo
	}
	return est, true
}

// rankedRow is a row's place in the ranking.
type rankedRow struct {
	row  string
	rank int
	fig  rankFigure
	ok   bool // the row has a knee
}

// ranking ranks rows: those ranked by an estimate first (their knees are
// all at or above the mark, so above every knee measured below it), then
// those ranked by their knee, each by figure, highest first; a row tied
// with the one above it when both are ranked alike and their intervals
// overlap (sharing its rank); rows without a knee last, in the order
// given.
func (sw *sweep) ranking(sc *cells.Scenario, rows []string) []rankedRow {
	out := make([]rankedRow, len(rows))
	for i, r := range rows {
		out[i].row = r
		out[i].fig, out[i].ok = sw.rankFigureOf(sc, r)
	}
	slices.SortStableFunc(out, func(a, b rankedRow) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		if a.fig.estimated != b.fig.estimated {
			if a.fig.estimated {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.fig.value, a.fig.value)
	})
	for i := range out {
		out[i].rank = i + 1
		if i == 0 {
			continue
		}
		p, q := out[i-1], out[i]
		if (!p.ok && !q.ok) || (p.ok && q.ok && p.fig.estimated == q.fig.estimated && overlap(p.fig, q.fig)) {
			out[i].rank = p.rank
		}
	}
	return out
}

// overlap reports whether two figures' intervals overlap: a measured
// knee's is half open ([rate, next rate)), so adjacent knees do not tie.
func overlap(a, b rankFigure) bool {
	if a.value == b.value {
		return true
	}
	return a.lo < b.hi && b.lo < a.hi
}

// estimated reports whether any row of the ranking is ranked by an
// estimate.
func estimated(rs []rankedRow) bool {
	return slices.ContainsFunc(rs, func(r rankedRow) bool { return r.fig.estimated })
}

// estimateText describes an estimated figure, with the rule that made it:
// "estimated from server CPU per request at X req/s (the generator's
// ceiling Y caps the measured knee)".
func (sw *sweep) estimateText(f rankFigure) string {
	what := sw.load.What
	hi := "∞"
	if !math.IsInf(f.hi, 1) {
		hi = units.Format(f.hi, what+"/s")
	}
	return fmt.Sprintf("%s (95%% CI %s–%s), estimated from server CPU per %s at %s (%s there; the generator's ceiling %s caps the measured knee): a lower bound on one core's capacity, since the cost per %s falls as the load rises",
		rateText(f.value, what), units.Format(f.lo, what+"/s"), hi, strings.TrimSuffix(what, "s"), rateText(f.at, what),
		units.Format(f.cost, sw.load.Capacity), rateText(sw.ceiling.rate, what), strings.TrimSuffix(what, "s"))
}
