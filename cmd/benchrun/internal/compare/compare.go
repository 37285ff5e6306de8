// Package compare prints a benchstat-style comparison of two corobench
// runs: for every scenario, unit, row and parameter setting, the old and
// new medians with their 95% confidence intervals, the change of the median
// and the Mann-Whitney U p value, "~" when the change is not significant at
// alpha = 0.05.
package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/internal/results"
)

// Write reads the results files oldPath and newPath and writes the
// comparison to w as aligned plain text: a header naming both runs, then one
// table per scenario and unit, one line per row and parameter setting:
//
//	PingPong  ns/switch  old          new          delta    p        n
//	  stackful-asm       12.2 ns ±2%  9.25 ns ±3%  -24.49%  p=0.002  6
//	  stackless          failed       3.10 ns ±∞                        old: failed: checksum mismatch; new: n=5 < 6: no 95% CI
//	  goroutine-single   155 ns ±3%   156 ns ±3%   ~        p=0.699  6
//
// Each figure is the median with the wider side of its 95% confidence
// interval. The delta is new median / old median - 1, printed only when the
// Mann-Whitney U test rejects "same distribution" at alpha 0.05, else "~".
// The last column flags a cell with fewer than 6 samples or a coefficient
// of variation over 5%, a cell that failed or is unsupported (with the
// reason), and a cell present in only one run. A corrupt input is an error
// naming the file and line, and nothing is written; a torn last line is a
// warning (opt.Warn) and the cells before it are compared.
//
// Two runs whose config differs in a key that changes the figures
// (MattersKeys) are refused with an error naming each key and both values,
// unless opt.Force: then the differences head the output and go to
// opt.Warn. A differing commit is shown, never refused: it is what a
// comparison is usually for.
func Write(w io.Writer, oldPath, newPath string, opt Options) error {
	oldSet, err := cells.Load(oldPath)
	if err != nil {
		return fmt.Errorf("old run: %w", err)
	}
	newSet, err := cells.Load(newPath)
	if err != nil {
		return fmt.Errorf("new run: %w", err)
	}
	warn := opt.Warn
	if warn == nil {
		warn = io.Discard
	}
	for _, s := range append(slices.Clone(oldSet.Warnings), newSet.Warnings...) {
		fmt.Fprintf(warn, "warning: %s\n", s)
	}
	for _, run := range []struct {
		label string
		set   *cells.Set
	}{{"old", oldSet}, {"new", newSet}} {
		if why := run.set.Files[0].Incomplete; why != "" {
			fmt.Fprintf(warn, "warning: the %s run is incomplete (%s): cells it did not reach show as only in the other run\n", run.label, why)
		}
	}
	diffs := ConfigDiffs(oldSet.Files[0].Config, newSet.Files[0].Config)
	if len(diffs) > 0 && !opt.Force {
		return fmt.Errorf("the two runs were measured under different conditions, so their deltas would not be the code's:\n  %s\n(--force compares them anyway, with these differences printed above the tables)",
			strings.Join(diffs, "\n  "))
	}
	for _, d := range diffs {
		fmt.Fprintf(warn, "warning: config differs: %s\n", d)
	}
	return write(w, oldSet, newSet, diffs)
}

// Options tune Write.
type Options struct {
	// Force compares runs whose config differs in a key of MattersKeys.
	Force bool
	// Warn receives warnings (a torn file, config differences under
	// Force); nil discards them.
	Warn io.Writer
}

// MattersKeys are the config keys whose difference between two runs
// changes the figures themselves: machine, toolchain, measurement policy
// and the Go runtime's environment.
var MattersKeys = []string{
	results.KeyCPU, results.KeyNumCPU, results.KeyGOOS, results.KeyGOARCH, results.KeyGoVersion, results.KeyBuild,
	results.KeyBenchtime, results.KeyGCPolicy, results.KeyGOMAXPROCS, results.KeyRuntimeEnv, results.KeyGODEBUG,
	results.KeyTimerFloor,
}

// ConfigDiffs lists each key of MattersKeys whose value differs between
// two files' config, as "key: old=<v> new=<v>" ("(absent)" for a missing
// key). A key absent from both is no difference.
func ConfigDiffs(old, new []cells.KV) []string {
	get := func(kvs []cells.KV, key string) (string, bool) {
		for _, kv := range kvs {
			if kv.Key == key {
				return kv.Value, true
			}
		}
		return "(absent)", false
	}
	var out []string
	for _, k := range MattersKeys {
		o, okO := get(old, k)
		n, okN := get(new, k)
		if (okO || okN) && o != n {
			out = append(out, fmt.Sprintf("%s: old=%s new=%s", k, o, n))
		}
	}
	return out
}

func write(w io.Writer, oldSet, newSet *cells.Set, diffs []string) error {
	for _, run := range []struct {
		label string
		set   *cells.Set
	}{{"old", oldSet}, {"new", newSet}} {
		f := run.set.Files[0]
		fmt.Fprintf(w, "%s: %s", run.label, f.Path)
		for _, kv := range f.Meta {
			switch kv.Key {
			case "runstamp", "commit", "cpu", "go-version":
				fmt.Fprintf(w, "  %s=%s", kv.Key, kv.Value)
			}
		}
		fmt.Fprintln(w)
	}
	for _, d := range diffs {
		fmt.Fprintf(w, "config differs (compared with --force): %s\n", d)
	}
	fmt.Fprintf(w, "medians ± 95%% CI (benchmath, distribution-free); delta and p from the Mann-Whitney U test; ~ = not significant at alpha %.2f\n", stats.Alpha)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range union(names(oldSet), names(newSet), cells.ScenarioOrder()) {
		oldSc, newSc := oldSet.Scenario(name), newSet.Scenario(name)
		get := func(f func(*cells.Scenario) []string) []string {
			var a, b []string
			if oldSc != nil {
				a = f(oldSc)
			}
			if newSc != nil {
				b = f(newSc)
			}
			return union(a, b, nil)
		}
		rows := union(get(func(s *cells.Scenario) []string { return s.Rows }), nil, cells.RowOrder())
		columns := get(func(s *cells.Scenario) []string { return s.Columns })
		unitList := get(func(s *cells.Scenario) []string { return s.Units })
		if len(unitList) == 0 {
			unitList = []string{""} // only notes: still list them
		}
		for _, unit := range unitList {
			fmt.Fprintln(tw)
			fmt.Fprintf(tw, "%s  %s\told\tnew\tdelta\tp\tn\t\n", name, unit)
			for _, col := range columns {
				for _, row := range rows {
					line, ok := compareCell(oldSc, newSc, row, col, unit)
					if !ok {
						continue
					}
					label := "  " + row
					if col != "" {
						label += "/" + col
					}
					fmt.Fprintf(tw, "%s\t%s\n", label, line)
				}
			}
		}
	}
	return tw.Flush()
}

// compareCell formats one line; ok is false when neither run has anything
// for this cell and unit.
func compareCell(oldSc, newSc *cells.Scenario, row, col, unit string) (string, bool) {
	lookup := func(sc *cells.Scenario) (*cells.Cell, *cells.Note) {
		if sc == nil {
			return nil, nil
		}
		return sc.Cell(row, col, unit), sc.Note(row, col)
	}
	oc, on := lookup(oldSc)
	nc, nn := lookup(newSc)
	if oc == nil && nc == nil && on == nil && nn == nil {
		return "", false
	}
	var flags []string
	var scale units.Scale
	u := units.Parse(unit)
	switch {
	case oc != nil:
		scale = u.ScaleFor(oc.Summary.Median)
	case nc != nil:
		scale = u.ScaleFor(nc.Summary.Median)
	}
	show := func(which string, c *cells.Cell, n *cells.Note) string {
		switch {
		case c != nil:
			for _, f := range c.Summary.Flags() {
				flags = append(flags, which+": "+f)
			}
			return scale.Format(c.Summary.Median) + " " + ciString(c.Summary)
		case n != nil:
			flags = append(flags, fmt.Sprintf("%s: %s: %s", which, n.Kind, n.Reason))
			return n.Kind
		}
		flags = append(flags, "only in the "+other(which)+" run")
		return "–"
	}
	oldStr, newStr := show("old", oc, on), show("new", nc, nn)
	delta, p, n := "", "", ""
	if oc != nil && nc != nil {
		c := stats.Compare(oc.Values, nc.Values)
		delta = c.FormatDelta()
		p = fmt.Sprintf("p=%.3f", c.P)
		if c.P < 0.001 {
			p = "p<0.001"
		}
		n = fmt.Sprintf("%d+%d", c.N1, c.N2)
		if c.N1 == c.N2 {
			n = fmt.Sprint(c.N1)
		}
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", oldStr, newStr, delta, p, n, strings.Join(flags, "; ")), true
}

func other(which string) string {
	if which == "old" {
		return "new"
	}
	return "old"
}

// ciString renders the interval as benchstat does: "±3%", or "±∞" when
// there are too few samples for a 95% interval.
func ciString(s stats.Summary) string {
	pct := s.CIPercent()
	if math.IsInf(pct, 0) {
		return "±∞"
	}
	return fmt.Sprintf("±%.0f%%", 100*pct)
}

func names(s *cells.Set) []string {
	var out []string
	for _, sc := range s.Scenarios {
		out = append(out, sc.Name)
	}
	return out
}

// union merges a and b keeping first-seen order, then moves the members of
// known to the front in known's order.
func union(a, b, known []string) []string {
	var seen []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	return cells.DisplayOrder(seen, known)
}
