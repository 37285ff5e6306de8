package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// colouringView is the "Function colouring: lines per body" section: for
// every scenario, the lines of its blocking body (the stackful and
// goroutine rows) next to its hand-lowered state machine (the stackless
// row). The figures come from bodies.BodyLines, generated from the
// source this binary was built from, not from the results file.
type colouringView struct {
	Rows    []colouringRow
	Summary string
}

type colouringRow struct {
	Name, Href             string // Href is "" when the run has no section for it
	Blocking, StateMachine bodyView
	Ratio                  string
}

// bodyView is one body's line count and the declarations it counts.
type bodyView struct {
	Lines string // "—" when the scenario has no such body
	Decls string // "name (18) · name (3) · ..."
}

// colouring lists every scenario in scenarios.All order, linking those the
// run has a section for.
func colouring(set *cells.Set) colouringView {
	var cv colouringView
	var ratios []float64
	for _, s := range scenarios.All {
		c, ok := bodies.BodyLines[s.Name]
		row := colouringRow{Name: s.Bench, Ratio: "—"}
		if slices.ContainsFunc(set.Scenarios, func(sc *cells.Scenario) bool { return sc.Name == s.Bench }) {
			row.Href = "#s-" + slug(s.Bench)
		}
		if ok {
			row.Blocking, row.StateMachine = bodyLines(c.Blocking), bodyLines(c.StateMachine)
			if r, ok := c.Ratio(); ok {
				row.Ratio = "×" + ratioText(r)
				ratios = append(ratios, r)
			}
		} else {
			row.Blocking, row.StateMachine = bodyView{Lines: "—"}, bodyView{Lines: "—"}
		}
		cv.Rows = append(cv.Rows, row)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		n := len(ratios)
		median := ratios[n/2]
		if n%2 == 0 {
			median = (ratios[n/2-1] + ratios[n/2]) / 2
		}
		cv.Summary = fmt.Sprintf("Over the %d scenarios with both bodies the state machine takes ×%s to ×%s the lines of its blocking twin, median ×%s.",
			n, ratioText(ratios[0]), ratioText(ratios[n-1]), ratioText(median))
	}
	return cv
}

func bodyLines(b bodies.BodySize) bodyView {
	if b.Lines == 0 {
		return bodyView{Lines: "—", Decls: "no such body"}
	}
	parts := make([]string, len(b.Decls))
	for i, d := range b.Decls {
		parts[i] = d.Name + " (" + strconv.Itoa(d.Lines) + ")"
	}
	return bodyView{Lines: strconv.Itoa(b.Lines), Decls: strings.Join(parts, " · ")}
}
