package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/corobench/corobench/scenarios"
)

// listGrids writes, under a scenario's --list parameters, the grids that
// narrow their product (Scenario.Grids): each grid's restriction and how
// many settings it admits, then how many the run has, full and --quick.
// Every count comes from Scenario.Combos, the function that plans the
// cells, so the listing says what a run runs. Nothing for a scenario
// without grids: it runs the whole product, which the parameter lines
// already show.
func listGrids(w io.Writer, s *scenarios.Scenario) {
	if len(s.Grids) == 0 {
		return
	}
	for _, g := range s.Grids {
		var named, free []string
		for _, p := range s.Params { // in the parameters' order, not the map's
			if vs, ok := g[p.Key]; ok {
				named = append(named, p.Key+"="+strings.Join(vs, ","))
			} else {
				free = append(free, p.Key)
			}
		}
		one := *s
		one.Grids = []scenarios.Grid{g}
		what := strings.Join(named, " ")
		if len(free) > 0 {
			what += " × every " + strings.Join(free, ", ")
		}
		fmt.Fprintf(w, "      grid %s: %s\n", what, settings(len(one.Combos(false, nil)), len(one.Combos(true, nil))))
	}
	all := *s
	all.Grids = nil
	fmt.Fprintf(w, "      runs the grids' union: %s of the product's %d (quick: %d); a --param override of a key lifts the grids' restriction of it\n",
		settings(len(s.Combos(false, nil)), len(s.Combos(true, nil))), len(all.Combos(false, nil)), len(all.Combos(true, nil)))
}

// settings is "n settings (quick: q)".
func settings(n, quick int) string {
	unit := "settings"
	if n == 1 {
		unit = "setting"
	}
	return fmt.Sprintf("%d %s (quick: %d)", n, unit, quick)
}

// listMark writes, under a scenario's --list entry, why the disturbance
// mark or the core mark does not judge its cells (Scenario.NotJudged,
// Scenario.CoreMarkOff, the one place that says so; the driver reads the
// same fields): nothing for a scenario whose single-P cells both judge.
func listMark(w io.Writer, s *scenarios.Scenario) {
	if s.NotJudged != "" {
		fmt.Fprintf(w, "      not judged by the disturbance mark: %s\n", s.NotJudged)
	}
	if s.CoreMarkOff != "" {
		fmt.Fprintf(w, "      not judged by the core mark: %s\n", s.CoreMarkOff)
	}
}
