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
	Cells       []headlineCell
}

type headlineCell struct {
	Kind   string // "fig", "failed", "unsupported", "absent"
	Median string
	CI     string
	Title  string
	Best   bool // the best median of the line, or not significantly worse
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
			col := headlineColumn(sc, m.HeadlineAt)
			hv.Lines = append(hv.Lines, headlineFor(set, sc, m, col))
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
