package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/scenarios"
)

// headlineView is the report's first table: one line per headline figure
// (scenarios.Metric.Headline, in registry order), one column per row, so a
// reader sees first which row switches cheapest, what a suspend/resume,
// a coroutine's memory, a spawn, a timer and an fd wake cost, and what the
// echo server sustains.
type headlineView struct {
	Rows  []string
	Lines []headlineLine
}

type headlineLine struct {
	Label, Href string
	Scenario    string // benchmark name
	Setting     string // the parameter setting shown, "" for none
	Unit        string
	Higher      bool
	// Knee: the line shows each row's knee (Metric.HeadlineKnee) in the
	// sweep at Setting, not a cell's median.
	Knee  bool
	Cells []headlineCell
}

type headlineCell struct {
	Kind   string // "fig", "failed", "unsupported", "absent"
	Median string
	CI     string
	Title  string
	Best   bool // the best median of the line, or not significantly worse
	// Flags label the figure: a latency taken above the row's knee, a
	// knee the load generator may have set.
	Flags []string
}

// headline builds the table from the registry's headline metrics and the
// run's cells; a metric the run has no cell of is left out.
func headline(set *cells.Set) headlineView {
	var hv headlineView
	for _, s := range scenarios.All {
		sc := set.Scenario(s.Bench)
		if sc == nil {
			continue
		}
		for _, m := range s.Metrics {
			if m.Headline == "" || !slices.Contains(sc.Units, m.Unit) {
				continue
			}
			var line headlineLine
			if m.HeadlineKnee {
				sw := sweepOf(set, sc)
				if sw == nil {
					continue
				}
				line = headlineFor(set, sc, m, headlineGroup(sw, m.HeadlineAt))
				line.Knee = true
			} else {
				line = headlineFor(set, sc, m, headlineColumn(sc, m.HeadlineAt))
			}
			hv.Lines = append(hv.Lines, line)
			for _, r := range sc.Rows {
				hv.Rows = appendNew(hv.Rows, r)
			}
		}
	}
	hv.Rows = displayRows(hv.Rows)
	for i := range hv.Lines {
		hv.Lines[i].Cells = fillCells(set, &hv.Lines[i], hv.Rows)
	}
	return hv
}

// headlineGroup picks the first preferred setting the sweep has as a
// group, else its main group.
func headlineGroup(sw *sweep, prefer []string) string {
	for _, p := range prefer {
		if slices.Contains(sw.group, p) {
			return p
		}
	}
	return sw.main
}

// headlineColumn picks the first preferred setting the scenario has, else
// its first column ("" when it has no parameters).
func headlineColumn(sc *cells.Scenario, prefer []string) string {
	for _, p := range prefer {
		if slices.Contains(sc.Columns, p) {
			return p
		}
	}
	if len(sc.Columns) > 0 {
		return sc.Columns[0]
	}
	return ""
}

func headlineFor(set *cells.Set, sc *cells.Scenario, m scenarios.Metric, col string) headlineLine {
	return headlineLine{Label: m.Headline, Href: "#s-" + slug(sc.Name), Scenario: sc.Name, Setting: col, Unit: m.Unit,
		Higher: set.HigherIsBetter(m.Unit)}
}

// fillCells gives the line one cell per row and marks the best: the best
// median, and every figure the Mann-Whitney test cannot tell from it at
// alpha 0.05 (a tie is shown as a tie, not as a winner by noise).
func fillCells(set *cells.Set, l *headlineLine, rows []string) []headlineCell {
	sc := set.Scenario(l.Scenario)
	sw := sweepOf(set, sc)
	if l.Knee {
		return kneeCells(sc, sw, l, rows)
	}
	col := slices.Index(sc.Columns, l.Setting)
	out := make([]headlineCell, len(rows))
	var best *cells.Cell
	for i, r := range rows {
		c := sc.Cell(r, l.Setting, l.Unit)
		if c == nil {
			out[i].Kind = "absent"
			if n := sc.Note(r, l.Setting); n != nil {
				out[i].Kind, out[i].Title = n.Kind, n.Reason
			}
			continue
		}
		s := c.Summary
		scale := units.Parse(l.Unit).ScaleFor(s.Median)
		out[i] = headlineCell{Kind: "fig", Median: scale.Format(s.Median), CI: ciText(s),
			Title: fmt.Sprintf("%s: median %s, n=%d", r, scale.Format(s.Median), s.N)}
		if sw.aboveKnee(r, col, l.Unit) {
			out[i].Flags = append(out[i].Flags, "above saturation")
			out[i].Title += "; " + overloadFlag
		}
		if best == nil || better(s.Median, best.Summary.Median, l.Higher) {
			best = c
		}
	}
	if best == nil {
		return out
	}
	for i, r := range rows {
		c := sc.Cell(r, l.Setting, l.Unit)
		if c == nil {
			continue
		}
		if c == best || (len(c.Values) > 1 && !stats.Compare(best.Values, c.Values).Significant && !math.IsNaN(c.Summary.Median)) {
			out[i].Best = true
		}
	}
	return out
}

func better(a, b float64, higher bool) bool {
	if higher {
		return a > b
	}
	return a < b
}

// kneeCells fills a knee line: each row's knee in the sweep's group
// l.Setting, the highest marked best (a tie is a tie: the rates are the
// sweep's steps), and a knee within reach of the load generator's ceiling
// flagged. Where rows of the main group are ranked by their estimated
// capacity (rank.go), the line shows each estimate beside the knee and
// marks best the rows that ranking puts first.
func kneeCells(sc *cells.Scenario, sw *sweep, l *headlineLine, rows []string) []headlineCell {
	out := make([]headlineCell, len(rows))
	best := -1.0
	for i, r := range rows {
		k, ok := sw.knees[r][l.Setting]
		if !ok || !sw.hasFigure(sc, r, l.Setting) {
			// No figure in the sweep at all: say why, as a cell would.
			out[i].Kind = "absent"
			for ci, col := range sc.Columns {
				if n := sc.Note(r, col); n != nil && sw.group[ci] == l.Setting {
					out[i].Kind, out[i].Title = n.Kind, n.Reason
					break
				}
			}
			continue
		}
		if k < 0 {
			out[i] = headlineCell{Kind: "fig", Median: "none", Title: r + ": no offered rate of this run is sustained"}
			continue
		}
		rate := sw.rates[k]
		out[i] = headlineCell{Kind: "fig", Median: units.Parse(l.Unit).ScaleFor(rate).Format(rate),
			Title: fmt.Sprintf("%s: highest offered rate sustained, %s (%s)", r, rateText(rate, sw.load.What), sc.Columns[k])}
		if a := sc.Cell(r, sc.Columns[k], sw.load.Achieved); a != nil {
			out[i].CI = "achieved " + units.Format(a.Summary.Median, l.Unit)
		}
		if next := sw.nextRate(k, l.Setting); next < 0 {
			out[i].Flags = append(out[i].Flags, "the sweep's top rate")
		}
		if c := sw.ceiling; c != nil && l.Setting == sw.main && rate >= genBound*c.rate {
			out[i].Flags = append(out[i].Flags, "possibly generator-bound")
		}
		best = math.Max(best, rate)
	}
	if l.Setting == sw.main {
		if ranked := sw.ranking(sc, rows); estimated(ranked) {
			// Where the generator caps the knees, the ranking is the
			// section's (rank.go): the best are the rows it ranks first.
			for _, rr := range ranked {
				i := slices.Index(rows, rr.row)
				if rr.fig.estimated {
					out[i].Flags = append(out[i].Flags, "one core ≥ "+units.Format(rr.fig.value, l.Unit)+" (estimated at "+units.Format(rr.fig.at, l.Unit)+")")
					out[i].Title += "; ranked by " + sw.estimateText(rr.fig)
				}
				out[i].Best = rr.ok && rr.rank == 1 && out[i].Kind == "fig"
			}
			return out
		}
	}
	for i, r := range rows {
		if k, ok := sw.knees[r][l.Setting]; ok && k >= 0 && sw.rates[k] == best {
			out[i].Best = true
		}
	}
	return out
}
