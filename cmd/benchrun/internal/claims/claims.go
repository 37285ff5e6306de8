// Package claims checks the reference design's performance claims
// (docs/design.md §1, "The reference design", the claims) against a run's cells, and carries
// the published anchor figures a run cannot measure itself.
//
// Each claim is mapped to one scenario, unit and row(s), with a stated
// rule. A range claim ("10–20 ns") holds when the 95% confidence interval
// of the median overlaps the range; a relative claim ("halves", "removes")
// holds when the Mann-Whitney test finds a significant difference and the
// ratio of medians is as large as the rule says. A claim whose cells are
// absent, failed or unsupported is "not measured", with the reason.
package claims

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
)

// Verdict is the outcome of checking one claim.
type Verdict string

const (
	Holds       Verdict = "holds"
	DoesNotHold Verdict = "does not hold"
	NotMeasured Verdict = "not measured"
	// Cheaper is a cost claim that does not hold because the figure is
	// better than claimed: the whole interval lies below the claimed range.
	// It is not a failure of the runtime, so it is told apart.
	Cheaper Verdict = "cheaper than claimed"
)

// worse combines the verdicts of a claim's parts: any part that does not
// hold makes the claim not hold; else any part cheaper than claimed makes
// it cheaper; else it holds.
func worse(a, b Verdict) Verdict {
	switch {
	case a == DoesNotHold || b == DoesNotHold:
		return DoesNotHold
	case a == Cheaper || b == Cheaper:
		return Cheaper
	}
	return Holds
}

// Claim is one claim of the reference design and how a run checks it.
type Claim struct {
	Text     string // as the design states it
	Measures string // scenario, unit and rows it is checked against
	Rule     string // when it holds
	// Scenario (benchmark name), Unit and Rows are the cells the check
	// reads; a test holds them to the scenarios registry, so a renamed
	// scenario, unit or row cannot leave a claim silently "not measured".
	Scenario string
	Unit     string
	Rows     []string
	// Columns are the parameter settings the check reads, in the results
	// reader's column form ("alive=1/pool=cold"); none for a scenario
	// without parameters or a check that picks its column from the run.
	Columns []string
	check   func(set *cells.Set) Result
}

// Result is a claim checked against one run.
type Result struct {
	Claim
	Figure  string // the measured figures the verdict rests on
	Verdict Verdict
	Why     string // the comparison made, or why nothing was measured
}

// Claims are the reference design's claims, in the order docs/design.md §1
// lists them.
var Claims = []Claim{
	{
		Text:     "A full-context switch costs ~10–20 ns on modern x86.",
		Measures: "Switch, ns/switch, stackful-asm: the bare fiber switch, one-way, with no scheduler or waker (PingPong adds those)",
		Rule:     "the 95% CI of the median overlaps [10, 20] ns; not measured off x86",
		Scenario: "Switch", Unit: "ns/switch", Rows: []string{"stackful-asm"},
		check: func(set *cells.Set) Result {
			c, why := find(set, "Switch", "stackful-asm", "", "ns/switch")
			if c == nil {
				return Result{Verdict: NotMeasured, Why: why}
			}
			if arch := meta(set, "goarch"); arch != "" && arch != "amd64" && arch != "386" {
				return Result{Figure: figure(c), Verdict: NotMeasured, Why: "the claim is about x86; this run is " + arch}
			}
			v, why := inRange(c, 10, 20)
			return Result{Figure: figure(c), Verdict: v, Why: why}
		},
	},
	{
		Text:     "A stackful switch costs 15–200 ns; a stackless one 10–50 ns.",
		Measures: "Switch, ns/switch (the bare switch, one-way): stackful-asm and stackful-coro for stackful, stackless (a resume call and its return) for stackless",
		Rule:     "each stackful row's 95% CI overlaps [15, 200] ns and stackless's overlaps [10, 50] ns",
		Scenario: "Switch", Unit: "ns/switch", Rows: []string{"stackful-asm", "stackful-coro", "stackless"},
		check: func(set *cells.Set) Result {
			var figs, whys, missing []string
			verdict := Holds
			stackful := 0
			for _, rc := range []struct {
				row    string
				lo, hi float64
			}{{"stackful-asm", 15, 200}, {"stackful-coro", 15, 200}, {"stackless", 10, 50}} {
				c, why := find(set, "Switch", rc.row, "", "ns/switch")
				if c == nil {
					missing = append(missing, why)
					continue
				}
				if rc.row != "stackless" {
					stackful++
				}
				figs = append(figs, rc.row+": "+figure(c))
				v, why := inRange(c, rc.lo, rc.hi)
				whys = append(whys, rc.row+": "+why)
				verdict = worse(verdict, v)
			}
			whys = append(whys, missing...)
			whys = strings.Split(joinUnique(whys...), "; ")
			fig := strings.Join(figs, "; ")
			hasStackless := slices.ContainsFunc(figs, func(f string) bool { return strings.HasPrefix(f, "stackless:") })
			if stackful == 0 || !hasStackless {
				return Result{Figure: fig, Verdict: NotMeasured, Why: strings.Join(whys, "; ")}
			}
			return Result{Figure: fig, Verdict: verdict, Why: strings.Join(whys, "; ")}
		},
	},
	{
		Text:     "Memory per coroutine: 4–64 KiB stackful, the exact state size stackless.",
		Measures: "Memory, B/coroutine (RSS), stackful-asm and stackless, at the largest n both have with enough samples for a 95% CI (else the largest both have)",
		Rule:     "stackful-asm's 95% CI overlaps [4, 64] KiB, and stackless is significantly smaller than stackful-asm (the run cannot know the exact state size, only that no stack is paid for)",
		Scenario: "Memory", Unit: "B/coroutine", Rows: []string{"stackful-asm", "stackless"},
		check: func(set *cells.Set) Result {
			sc := set.Scenario("Memory")
			col, colCI := "", ""
			if sc != nil {
				// Columns are in increasing n: keep the last. A largest
				// n run with fewer repetitions (benchrun caps the costly
				// n=1000000 cells) has no CI to judge, so prefer the
				// largest n that has one.
				for _, c := range sc.Columns {
					sf, sl := sc.Cell("stackful-asm", c, "B/coroutine"), sc.Cell("stackless", c, "B/coroutine")
					if sf != nil && sl != nil {
						col = c
						if len(sf.Values) >= stats.MinSamples && len(sl.Values) >= stats.MinSamples {
							colCI = c
						}
					}
				}
			}
			if colCI != "" {
				col = colCI
			}
			if col == "" && sc != nil && len(sc.Columns) > 0 {
				col = sc.Columns[len(sc.Columns)-1]
			}
			sf, why1 := find(set, "Memory", "stackful-asm", col, "B/coroutine")
			sl, why2 := find(set, "Memory", "stackless", col, "B/coroutine")
			if sf == nil || sl == nil {
				var figs []string
				for _, c := range []*cells.Cell{sf, sl} {
					if c != nil {
						figs = append(figs, c.Row+": "+figure(c))
					}
				}
				return Result{Figure: strings.Join(figs, "; "), Verdict: NotMeasured, Why: joinUnique(why1, why2)}
			}
			fig := fmt.Sprintf("%s: stackful-asm %s; stackless %s", col, figure(sf), figure(sl))
			v, why := inRange(sf, 4096, 65536)
			cmp := stats.Compare(sl.Values, sf.Values)
			smaller := cmp.Significant && sl.Summary.Median < sf.Summary.Median
			why += fmt.Sprintf("; stackless/stackful-asm = %.2f (%s)", sl.Summary.Median/sf.Summary.Median, pText(cmp.P))
			if !smaller {
				v = DoesNotHold
				why += ": stackless is not significantly smaller"
			}
			return Result{Figure: fig, Verdict: v, Why: why}
		},
	},
	{
		Text:     "A direct switch halves the switches per suspend/resume.",
		Measures: "Handoff, ns/switch, stackful-asm: via=scheduler against via=direct (same row, same work)",
		Rule:     "via=scheduler is significantly slower and costs at least 1.5× via=direct (two switches instead of one predicts ≈ 2×)",
		Scenario: "Handoff", Unit: "ns/switch", Rows: []string{"stackful-asm"},
		Columns: []string{"via=scheduler", "via=direct"},
		check: func(set *cells.Set) Result {
			return ratioClaim(set, "Handoff", "stackful-asm", "via=scheduler", "via=direct", "ns/switch", 1.5)
		},
	},
	{
		Text:     "The context pool removes the mmap/mprotect latency.",
		Measures: "Spawn, ns/spawn, stackful-asm, the lifecycle (alive=1: one coroutine created, run to completion and destroyed at a time): pool=cold (a fresh runtime per lifecycle) against pool=warm (its stack and records reused)",
		Rule:     "alive=1/pool=cold is significantly slower and costs at least 10× alive=1/pool=warm (fresh stack memory costs microseconds, a pooled spawn tens of nanoseconds)",
		Scenario: "Spawn", Unit: "ns/spawn", Rows: []string{"stackful-asm"},
		Columns: []string{"alive=1/pool=cold", "alive=1/pool=warm"},
		check: func(set *cells.Set) Result {
			return ratioClaim(set, "Spawn", "stackful-asm", "alive=1/pool=cold", "alive=1/pool=warm", "ns/spawn", 10)
		},
	},
}

// Evaluate checks every claim against set.
func Evaluate(set *cells.Set) []Result {
	out := make([]Result, len(Claims))
	for i, c := range Claims {
		r := c.check(set)
		r.Claim = c
		out[i] = r
	}
	return out
}

// find returns the cell, or nil and why it is missing (its note's reason
// when it failed or is unsupported).
func find(set *cells.Set, scenario, row, column, unit string) (*cells.Cell, string) {
	label := row
	if column != "" {
		label += " " + column
	}
	sc := set.Scenario(scenario)
	if sc == nil {
		return nil, fmt.Sprintf("%s not in this run", scenario)
	}
	if c := sc.Cell(row, column, unit); c != nil {
		return c, ""
	}
	if n := sc.Note(row, column); n != nil {
		return nil, fmt.Sprintf("%s %s: %s: %s", scenario, label, n.Kind, n.Reason)
	}
	return nil, fmt.Sprintf("%s %s: no %s figure in this run", scenario, label, unit)
}

func meta(set *cells.Set, key string) string {
	for _, f := range set.Files {
		for _, kv := range f.Meta {
			if kv.Key == key {
				return kv.Value
			}
		}
	}
	return ""
}

// figure prints a cell as "12.0 ns (95% CI 11.8–12.2 ns, n=8)". The CI of
// the median is made of order statistics: with 8 samples it is [min, max].
func figure(c *cells.Cell) string {
	s := c.Summary
	scale := units.Parse(c.Unit).ScaleFor(s.Median)
	if math.IsInf(s.CIPercent(), 0) {
		return fmt.Sprintf("%s (n=%d: too few samples for a 95%% CI)", scale.Format(s.Median), s.N)
	}
	lo := strings.TrimSuffix(scale.Format(s.Lo), " "+scale.Symbol)
	return fmt.Sprintf("%s (95%% CI %s–%s, n=%d)", scale.Format(s.Median), lo, scale.Format(s.Hi), s.N)
}

// inRange checks a range claim [lo, hi] (in the cell's unit) against the
// cell's confidence interval; with too few samples for an interval, the
// median alone is used.
func inRange(c *cells.Cell, lo, hi float64) (Verdict, string) {
	s := c.Summary
	cLo, cHi := s.Lo, s.Hi
	basis := "95% CI"
	if math.IsInf(s.CIPercent(), 0) {
		cLo, cHi, basis = s.Median, s.Median, "median (too few samples for a CI)"
	}
	rng := fmt.Sprintf("[%s, %s]", units.Format(lo, c.Unit), units.Format(hi, c.Unit))
	switch {
	case cHi < lo:
		return Cheaper, fmt.Sprintf("%s lies below the claimed %s (cheaper than claimed)", basis, rng)
	case cLo > hi:
		return DoesNotHold, fmt.Sprintf("%s lies above the claimed %s", basis, rng)
	}
	return Holds, fmt.Sprintf("%s overlaps the claimed %s", basis, rng)
}

// ratioClaim checks that column slow costs at least minRatio × column fast
// for one row, with a significant Mann-Whitney difference.
func ratioClaim(set *cells.Set, scenario, row, slow, fast, unit string, minRatio float64) Result {
	cs, why1 := find(set, scenario, row, slow, unit)
	cf, why2 := find(set, scenario, row, fast, unit)
	if cs == nil || cf == nil {
		var figs, whys []string
		for _, x := range []struct {
			c   *cells.Cell
			why string
		}{{cs, why1}, {cf, why2}} {
			if x.c != nil {
				figs = append(figs, x.c.Column+": "+figure(x.c))
			} else {
				whys = append(whys, x.why)
			}
		}
		return Result{Figure: strings.Join(figs, "; "), Verdict: NotMeasured, Why: joinUnique(whys...)}
	}
	fig := fmt.Sprintf("%s: %s; %s: %s", slow, figure(cs), fast, figure(cf))
	cmp := stats.Compare(cf.Values, cs.Values)
	ratio := cs.Summary.Median / cf.Summary.Median
	why := fmt.Sprintf("%s / %s = %.2f× (%s, n=%d+%d)", slow, fast, ratio, pText(cmp.P), cmp.N1, cmp.N2)
	switch {
	case !cmp.Significant:
		return Result{Figure: fig, Verdict: DoesNotHold, Why: why + ": the difference is not significant at alpha 0.05"}
	case ratio < minRatio:
		return Result{Figure: fig, Verdict: DoesNotHold, Why: fmt.Sprintf("%s: below the %.3g× the rule asks", why, minRatio)}
	}
	return Result{Figure: fig, Verdict: Holds, Why: fmt.Sprintf("%s ≥ %.3g×", why, minRatio)}
}

// pText prints a p value to three places, or as a bound below 0.001.
func pText(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// joinUnique joins the non-empty reasons with "; ", each once: two cells
// of an absent scenario give one "X not in this run".
func joinUnique(reasons ...string) string {
	var out []string
	for _, r := range reasons {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}
