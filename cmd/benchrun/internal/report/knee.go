package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/plots"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// sweep is a scenario's load sweep as this run measured it: the offered
// rate of each column and each row's knee (scenarios.LoadSweep).
//
// With LoadSweep.Key set, the columns fall into groups that differ in that
// parameter only ("c=64" for c=64/rate=…); each group is a sweep of its
// own, with its own knee per row, and the group with the most rates is the
// main one: its knee is the row's knee (the ranking, a HeadlineKnee
// figure). Without Key every column is one group, "".
type sweep struct {
	load  *scenarios.LoadSweep
	rates []float64 // per column of the scenario, in its order
	group []string  // per column: its setting without the rate
	main  string    // the group with the most rates
	// knees is, per row and group, the column index of the knee, -1 for
	// none.
	knees map[string]map[string]int
	// over says, per row, why the first rate past its knee is not
	// sustained when it is the CPU it needs (LoadSweep.CPU), else "".
	over map[string]string
	// ceiling is the load generator's own ceiling (loadgen-ceiling line)
	// when the run recorded one for this scenario's main group.
	ceiling *ceiling
}

// genBound is the share of the generator's ceiling from which a knee may be
// the generator's rather than the row's: within 80% of it, the generator
// is busy enough that it may be the one falling behind.
const genBound = 0.8

// cpuNeed returns the CPUs an offered rate needs at the cell's CPU time
// per operation (ns), and the CPUs the row has (its GOMAXPROCS; 1 when
// not recorded).
func cpuNeed(rate float64, cpu *cells.Cell) (need, have float64) {
	have = 1
	if g := cpu.Config["gomaxprocs"]; len(g) == 1 {
		if v, err := strconv.ParseFloat(g[0], 64); err == nil && v > 0 {
			have = v
		}
	}
	return rate * cpu.Summary.Median * 1e-9, have
}

// sweepOf returns the scenario's load sweep, nil when its definition has
// none or a column's rate cannot be computed. set gives the run's config
// lines (the generator's ceiling); it may be nil.
func sweepOf(set *cells.Set, sc *cells.Scenario) *sweep {
	def, ok := scenarios.LookupBench(sc.Name)
	if !ok || def.Load == nil || def.Load.Rate == nil {
		return nil
	}
	l := def.Load
	sw := &sweep{load: l, knees: map[string]map[string]int{}, over: map[string]string{}}
	size := map[string]int{}
	for _, col := range sc.Columns {
		r := l.Rate(columnParams(col))
		if !(r > 0) {
			return nil
		}
		g := withoutKey(col, l.Key)
		sw.rates = append(sw.rates, r)
		sw.group = append(sw.group, g)
		size[g]++
		if size[g] > size[sw.main] {
			sw.main = g
		}
	}
	for _, row := range sc.Rows {
		sw.knees[row] = map[string]int{}
		points := make([]stats.LoadPoint, len(sc.Columns))
		for i, col := range sc.Columns {
			points[i] = stats.LoadPoint{Rate: sw.rates[i], Latency: math.NaN(), Achieved: math.NaN()}
			if c := sc.Cell(row, col, l.Latency); c != nil {
				points[i].Latency = c.Summary.Median
			}
			if l.Achieved != "" {
				if c := sc.Cell(row, col, l.Achieved); c != nil {
					points[i].Achieved = c.Summary.Median
				}
			}
			if l.CPU == "" {
				continue
			}
			// A rate the row cannot afford is not sustained: its
			// latency is left out (NaN), which ends the sustained run.
			if cpu := sc.Cell(row, col, l.CPU); cpu != nil {
				if need, have := cpuNeed(sw.rates[i], cpu); need > have {
					points[i].Latency = math.NaN()
				}
			}
		}
		share := 0.0
		if l.Achieved != "" {
			share = l.Share
		}
		for g := range size {
			var idx []int
			var sub []stats.LoadPoint
			for i := range sc.Columns {
				if sw.group[i] == g {
					idx = append(idx, i)
					sub = append(sub, points[i])
				}
			}
			k := -1
			if j := stats.KneeOf(sub, l.Bound, share); j >= 0 {
				k = idx[j]
			}
			sw.knees[row][g] = k
		}
		k := sw.knee(row)
		if next := sw.nextRate(k, sw.main); next >= 0 && l.CPU != "" {
			if cpu := sc.Cell(row, sc.Columns[next], l.CPU); cpu != nil {
				if need, have := cpuNeed(sw.rates[next], cpu); need > have {
					sw.over[row] = fmt.Sprintf("%s needs %.1f CPUs at %s per %s; the row has %g",
						rateText(sw.rates[next], l.What), need, units.Format(cpu.Summary.Median, l.CPU), strings.TrimSuffix(l.What, "s"), have)
				}
			}
		}
	}
	if set != nil {
		sw.ceiling = findCeiling(set, sc.Name, sw.main)
	}
	return sw
}

// knee is the row's knee: the column index of its knee in the main group,
// -1 for none (or a row the sweep does not know).
func (sw *sweep) knee(row string) int {
	if k, ok := sw.knees[row][sw.main]; ok {
		return k
	}
	return -1
}

// withoutKey drops parameter key from a column ("c=64/rate=20000" →
// "c=64"); key "" keeps nothing, so every column is one group.
func withoutKey(col, key string) string {
	if key == "" {
		return ""
	}
	var kept []string
	for _, kv := range strings.Split(col, "/") {
		if k, _, _ := strings.Cut(kv, "="); k != key && kv != "" {
			kept = append(kept, kv)
		}
	}
	return strings.Join(kept, "/")
}

// nextRate is the index of the lowest rate of group g above rates[k]
// (above none when k < 0), -1 when there is none.
func (sw *sweep) nextRate(k int, g string) int {
	best := -1
	for i, r := range sw.rates {
		if sw.group[i] != g {
			continue
		}
		if (k < 0 || r > sw.rates[k]) && (best < 0 || r < sw.rates[best]) {
			best = i
		}
	}
	return best
}

// columnParams turns a column ("n=1000/c=64") back into parameters.
func columnParams(col string) map[string]string {
	p := map[string]string{}
	for _, kv := range strings.Split(col, "/") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p[k] = v
		}
	}
	return p
}

// aboveKnee reports whether a latency figure of row in column col was
// taken above the row's knee in the column's group: at a rate higher than
// the highest it sustains there (any rate, when it sustains none).
func (sw *sweep) aboveKnee(row string, col int, unit string) bool {
	if u := units.Parse(unit); u.Kind != units.Time || u.Stat == "" {
		return false
	}
	return sw.overloaded(row, col)
}

// overloaded reports whether column col is above row's knee in its group,
// whatever the unit.
func (sw *sweep) overloaded(row string, col int) bool {
	if sw == nil || col < 0 || col >= len(sw.rates) {
		return false
	}
	k, ok := sw.knees[row][sw.group[col]]
	if !ok {
		return false
	}
	return k < 0 || sw.rates[col] > sw.rates[k]
}

// overloadFlag is the label of a latency figure taken above its row's
// knee, wherever one is shown.
const overloadFlag = "above saturation: a queue of work, not service time"

// kneeView is the knee table under a load-sweep scenario's heading, its
// rows ranked by knee, highest first.
type kneeView struct {
	What, Latency, Bound, Why, CPU string
	Achieved, Share                string // the achieved-rate rule, "" without one
	Main                           string // the main group's setting, "" for none
	Ceiling                        string // the generator's ceiling, "" when not recorded
	CeilingNote                    string
	// RankNote says how rows are ranked when some are ranked by their
	// estimated capacity (rank.go); "" when every row is ranked by its
	// knee.
	RankNote string
	Rows     []kneeRow
}

type kneeRow struct {
	Rank                     int
	Row, Knee, Detail, Other string
	GeneratorBound           bool
	// Estimate is the row's estimated capacity when it is ranked by it
	// (rankFigure), "" otherwise.
	Estimate string
}

func rateText(r float64, what string) string {
	return units.Format(r, what+"/s") + " " + what + "/s"
}

func (sw *sweep) view(sc *cells.Scenario) *kneeView {
	if sw == nil {
		return nil
	}
	l := sw.load
	kv := &kneeView{What: l.What, Latency: l.Latency, Bound: units.Format(l.Bound, l.Latency), Why: l.Why, CPU: l.CPU, Main: sw.main}
	if l.Achieved != "" {
		kv.Achieved, kv.Share = l.Achieved, fmt.Sprintf("%.0f%%", 100*l.Share)
	}
	if c := sw.ceiling; c != nil {
		kv.Ceiling = c.text
		kv.CeilingNote = fmt.Sprintf("A row whose knee is at or above %.0f%% of it (%s) is marked possibly generator-bound: the generator may be what falls behind there.", 100*genBound, rateText(genBound*c.rate, l.What))
	}
	for _, row := range sc.Rows {
		k := sw.knee(row)
		kr := kneeRow{Row: row}
		if k < 0 {
			kr.Knee = "none in this run"
			lowest := sw.nextRate(-1, sw.main)
			kr.Detail = "no figure at the lowest rate"
			if lowest >= 0 {
				kr.Detail = sw.failText(sc, row, lowest)
			}
			if why := sw.over[row]; why != "" {
				kr.Detail = why
			}
		} else {
			kr.Knee = rateText(sw.rates[k], l.What)
			c := sc.Cell(row, sc.Columns[k], l.Latency)
			kr.Detail = fmt.Sprintf("%s; %s %s there", sc.Columns[k], l.Latency, units.Format(c.Summary.Median, l.Latency))
			if l.Achieved != "" {
				if a := sc.Cell(row, sc.Columns[k], l.Achieved); a != nil {
					kr.Detail += fmt.Sprintf(", %s achieved", rateText(a.Summary.Median, l.What))
				}
			}
			if next := sw.nextRate(k, sw.main); next < 0 {
				kr.Detail += "; the highest rate of this run: the knee may lie higher"
			} else if why := sw.over[row]; why != "" {
				kr.Detail += "; next: " + why
			} else {
				kr.Detail += "; next: " + sw.failText(sc, row, next)
			}
			if c := sw.ceiling; c != nil && sw.rates[k] >= genBound*c.rate {
				kr.GeneratorBound = true
			}
		}
		kr.Other = sw.otherGroups(sc, row)
		kv.Rows = append(kv.Rows, kr)
	}
	// Rank by knee, or where the generator caps it by the server's
	// estimated capacity (rank.go); rows without a knee last, in display
	// order.
	ranked := sw.ranking(sc, sc.Rows)
	byRow := map[string]kneeRow{}
	for _, kr := range kv.Rows {
		byRow[kr.Row] = kr
	}
	kv.Rows = kv.Rows[:0]
	for _, r := range ranked {
		kr := byRow[r.row]
		kr.Rank = r.rank
		if r.fig.estimated {
			kr.Estimate = sw.estimateText(r.fig)
		}
		kv.Rows = append(kv.Rows, kr)
	}
	if estimated(ranked) {
		kv.RankNote = fmt.Sprintf("Rows whose knee is at or above %.0f%% of the generator's ceiling may be measuring the generator, so they are ranked above the others and among themselves by the busy time of their server's core per %s (%s, median over the runs) at the highest rate of the sweep below that mark, which they all sustained: the figure is 1e9 over it, the rate one core would sustain if every %s cost that much. It is a lower bound, for comparing rows at one rate: the cost per %s falls as the load rises (wake-ups and system calls are shared by more of them). A knee measured below the mark ranks its row as measured. Rows ranked alike whose intervals overlap (an estimate's 95%% CI, a knee's step to the next rate) are tied.",
			100*genBound, strings.TrimSuffix(l.What, "s"), sw.load.Capacity, strings.TrimSuffix(l.What, "s"), strings.TrimSuffix(l.What, "s"))
	}
	return kv
}

// failText says why row does not sustain column i: its latency over the
// bound, its achieved rate short of the share, or no figure.
func (sw *sweep) failText(sc *cells.Scenario, row string, i int) string {
	l := sw.load
	col := sc.Columns[i]
	at := rateText(sw.rates[i], l.What)
	c := sc.Cell(row, col, l.Latency)
	if c == nil {
		return "no figure at " + at
	}
	var why []string
	if c.Summary.Median > l.Bound {
		why = append(why, fmt.Sprintf("%s %s", l.Latency, units.Format(c.Summary.Median, l.Latency)))
	}
	if l.Achieved != "" {
		if a := sc.Cell(row, col, l.Achieved); a == nil {
			why = append(why, "no achieved rate")
		} else if a.Summary.Median < l.Share*sw.rates[i] {
			why = append(why, fmt.Sprintf("%s achieved (%.0f%%)", rateText(a.Summary.Median, l.What), 100*a.Summary.Median/sw.rates[i]))
		}
	}
	if len(why) == 0 {
		return "over the bound at " + at // the CPU rule (over) says more
	}
	return "over at " + at + ": " + strings.Join(why, ", ")
}

// otherGroups says, for the groups besides the main one, whether the row
// sustains each of their rates: "c=1 at 20.0k req/s: sustained".
func (sw *sweep) otherGroups(sc *cells.Scenario, row string) string {
	var parts []string
	for i, col := range sc.Columns {
		if sw.group[i] == sw.main {
			continue
		}
		state := "sustained"
		if sw.overloaded(row, i) {
			state = "not sustained"
		}
		if sc.Cell(row, col, sw.load.Latency) == nil {
			state = "no figure"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", col, state))
	}
	return strings.Join(parts, "; ")
}

// ceiling is the load generator's own ceiling as the run recorded it.
type ceiling struct {
	rate float64 // 0 when the measurement failed
	text string  // the config value after the scenario's name
}

// findCeiling returns the loadgen-ceiling config line of scenario bench at
// setting group ("Echo c=64: 241000 req/s (…)"), nil when the run has
// none. A line that records a failure ("Echo c=64: failed: …") is shown
// with no rate.
func findCeiling(set *cells.Set, bench, group string) *ceiling {
	for _, f := range set.Files {
		for _, kv := range f.Meta {
			if kv.Key != results.KeyLoadgenCeiling {
				continue
			}
			rest, ok := strings.CutPrefix(kv.Value, bench+" ")
			if !ok {
				continue
			}
			at, value, ok := strings.Cut(rest, ": ")
			if !ok || at != group {
				continue
			}
			c := &ceiling{text: value}
			if num, _, ok := strings.Cut(value, " "); ok {
				if r, err := strconv.ParseFloat(num, 64); err == nil && r > 0 {
					c.rate = r
					c.text = rateText(r, "req") + strings.TrimPrefix(value, num+" req/s")
				}
			}
			return c
		}
	}
	return nil
}

// mainColumns are the indices of the main group's columns, in column
// order.
func (sw *sweep) mainColumns() []int {
	var out []int
	for i, g := range sw.group {
		if g == sw.main {
			out = append(out, i)
		}
	}
	return out
}

// kneeChart draws the load sweep: the bound metric's median against the
// offered rate per row (the main group's columns), the bound, and each
// row's knee; with an achieved-rate metric, also the latency against the
// rate each row achieved (the throughput-latency curve).
func kneeChart(sc *cells.Scenario, sw *sweep, colors map[string]color.Color, outDir string) ([]chartView, error) {
	if sw == nil {
		return nil, nil
	}
	cols := sw.mainColumns()
	if len(cols) < 2 {
		return nil, nil
	}
	var cs []*cells.Cell
	for _, row := range sc.Rows {
		for _, i := range cols {
			if c := sc.Cell(row, sc.Columns[i], sw.load.Latency); c != nil {
				cs = append(cs, c)
			}
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	u := units.Parse(sw.load.Latency)
	scale := commonScale(u, cs, true)
	var xs []float64
	for _, i := range cols {
		xs = append(xs, sw.rates[i])
	}
	var series []plots.Series
	var knees []int
	for _, row := range sc.Rows {
		s := plots.Series{Label: row, Color: colors[row]}
		for _, i := range cols {
			s.Values = append(s.Values, plotValue(sc.Cell(row, sc.Columns[i], sw.load.Latency), scale))
		}
		series = append(series, s)
		knees = append(knees, slices.Index(cols, sw.knee(row)))
	}
	at := ""
	if sw.main != "" {
		at = " at " + sw.main
	}
	title := fmt.Sprintf("%s: %s against offered %s/s%s", sc.Name, sw.load.Latency, sw.load.What, at)
	ch, err := plots.Knee(title, "offered "+sw.load.What+"/s (log scale)", u.Label(scale)+" (log scale)", xs, series, sw.load.Bound/scale.Div, knees)
	if err != nil {
		return nil, err
	}
	pngName, svgName, err := ch.Save(outDir, slug(sc.Name)+"-knee")
	if err != nil {
		return nil, err
	}
	out := []chartView{{
		Caption: fmt.Sprintf("%s: each row's %s (median over runs, 95%% CI) against the offered rate%s; the dashed line is the bound of %s, the ring each row's knee: the highest rate at which it, and every lower rate, is sustained.", sc.Name, sw.load.Latency, at, units.Format(sw.load.Bound, sw.load.Latency)),
		PNG:     pngName, SVG: svgName, Alt: title,
	}}
	if sw.load.Achieved == "" {
		return out, nil
	}
	// Throughput against latency: x is what each row completed, so a
	// saturated row's curve stops moving right and climbs.
	var curves []plots.Curve
	for j, row := range sc.Rows {
		cv := plots.Curve{Series: series[j], Knee: knees[j]}
		for _, i := range cols {
			x := math.NaN()
			if a := sc.Cell(row, sc.Columns[i], sw.load.Achieved); a != nil {
				x = a.Summary.Median
			}
			cv.Xs = append(cv.Xs, x)
		}
		curves = append(curves, cv)
	}
	title = fmt.Sprintf("%s: %s against achieved %s/s%s", sc.Name, sw.load.Latency, sw.load.What, at)
	var ceil float64
	if sw.ceiling != nil {
		ceil = sw.ceiling.rate
	}
	ch, err = plots.Throughput(title, "achieved "+sw.load.What+"/s (log scale)", u.Label(scale)+" (log scale)", curves, sw.load.Bound/scale.Div, ceil)
	if err != nil {
		return nil, err
	}
	pngName, svgName, err = ch.Save(outDir, slug(sc.Name)+"-throughput")
	if err != nil {
		return nil, err
	}
	ceilText := ""
	if ceil > 0 {
		ceilText = fmt.Sprintf("; the dotted vertical line is the load generator's own ceiling (%s)", rateText(ceil, sw.load.What))
	}
	out = append(out, chartView{
		Caption: fmt.Sprintf("%s: throughput against latency: each row's %s against the rate it completed (medians over runs), one point per offered rate%s, the ring its knee; a row past saturation stops moving right and climbs. The dashed line is the bound of %s%s.", sc.Name, sw.load.Latency, at, units.Format(sw.load.Bound, sw.load.Latency), ceilText),
		PNG:     pngName, SVG: svgName, Alt: title,
	})
	return out, nil
}

// achievedText puts the offered rate beside an achieved-rate figure (the
// sweep's Achieved metric), as a share of it, and flags one taken above
// the row's knee.
func achievedText(cv *cellView, c *cells.Cell, sw *sweep, row string, col int) {
	if sw == nil || c == nil || sw.load.Achieved == "" || c.Unit != sw.load.Achieved {
		return
	}
	offered := sw.rates[col]
	cv.Ratios = append([]string{fmt.Sprintf("of %s offered: %.1f%%", rateText(offered, sw.load.What), 100*c.Summary.Median/offered)}, cv.Ratios...)
	if sw.overloaded(row, col) {
		cv.Flags = append(cv.Flags, "above saturation: not sustained at this rate")
	}
}

// chartedElsewhere reports whether a unit of a load sweep with a rate key
// needs no bar chart: its latency statistics are in each row's spectrum
// and the knee chart, its achieved rate in the throughput chart, and
// bars of every rate of the sweep would bury both.
func (sw *sweep) chartedElsewhere(unit string) bool {
	if sw == nil || sw.load.Key == "" {
		return false
	}
	u := units.Parse(unit)
	return unit == sw.load.Achieved || (u.Kind == units.Time && u.Stat != "")
}

// hasFigure reports whether row has a figure of the bound metric at some
// rate of group g.
func (sw *sweep) hasFigure(sc *cells.Scenario, row, g string) bool {
	for i, col := range sc.Columns {
		if sw.group[i] == g && sc.Cell(row, col, sw.load.Latency) != nil {
			return true
		}
	}
	return false
}
