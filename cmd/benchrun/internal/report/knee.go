package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/plots"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/scenarios"
)

// sweep is a scenario's load sweep as this run measured it: the offered
// rate of each column and each row's knee (scenarios.LoadSweep).
type sweep struct {
	load  *scenarios.LoadSweep
	rates []float64      // per column of the scenario, in its order
	knees map[string]int // row → column index of its knee, -1 for none
	// over says, per row, why the first rate past its knee is not
	// sustained when it is the CPU it needs (LoadSweep.CPU), else "".
	over map[string]string
}

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
// none or a column's rate cannot be computed.
func sweepOf(sc *cells.Scenario) *sweep {
	def, ok := scenarios.LookupBench(sc.Name)
	if !ok || def.Load == nil || def.Load.Rate == nil {
		return nil
	}
	sw := &sweep{load: def.Load, knees: map[string]int{}, over: map[string]string{}}
	for _, col := range sc.Columns {
		r := def.Load.Rate(columnParams(col))
		if !(r > 0) {
			return nil
		}
		sw.rates = append(sw.rates, r)
	}
	for _, row := range sc.Rows {
		lat := make([]float64, len(sc.Columns))
		for i, col := range sc.Columns {
			lat[i] = math.NaN()
			if c := sc.Cell(row, col, def.Load.Latency); c != nil {
				lat[i] = c.Summary.Median
			}
			if def.Load.CPU == "" {
				continue
			}
			// A rate the row cannot afford is not sustained: its
			// latency is left out (NaN), which ends the sustained run.
			if cpu := sc.Cell(row, col, def.Load.CPU); cpu != nil {
				if need, have := cpuNeed(sw.rates[i], cpu); need > have {
					lat[i] = math.NaN()
				}
			}
		}
		k := stats.Knee(sw.rates, lat, def.Load.Bound)
		sw.knees[row] = k
		if next := nextRate(sw.rates, k); next >= 0 && def.Load.CPU != "" {
			if cpu := sc.Cell(row, sc.Columns[next], def.Load.CPU); cpu != nil {
				if need, have := cpuNeed(sw.rates[next], cpu); need > have {
					sw.over[row] = fmt.Sprintf("%s needs %.1f CPUs at %s per %s; the row has %g",
						rateText(sw.rates[next], def.Load.What), need, units.Format(cpu.Summary.Median, def.Load.CPU), strings.TrimSuffix(def.Load.What, "s"), have)
				}
			}
		}
	}
	return sw
}

// nextRate is the index of the lowest rate above rates[k] (above none when
// k < 0), -1 when there is none.
func nextRate(rates []float64, k int) int {
	best := -1
	for i, r := range rates {
		if (k < 0 || r > rates[k]) && (best < 0 || r < rates[best]) {
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
// taken above the row's knee: at a rate higher than the highest it
// sustains (any rate, when it sustains none).
func (sw *sweep) aboveKnee(row string, col int, unit string) bool {
	if sw == nil {
		return false
	}
	if u := units.Parse(unit); u.Kind != units.Time || u.Stat == "" {
		return false
	}
	k, ok := sw.knees[row]
	if !ok {
		return false
	}
	return k < 0 || sw.rates[col] > sw.rates[k]
}

// kneeView is the knee table under a load-sweep scenario's heading.
type kneeView struct {
	What, Latency, Bound, Why, CPU string
	Rows                           []kneeRow
}

type kneeRow struct{ Row, Knee, Detail string }

func rateText(r float64, what string) string {
	return units.Format(r, what+"/s") + " " + what + "/s"
}

func (sw *sweep) view(sc *cells.Scenario) *kneeView {
	if sw == nil {
		return nil
	}
	kv := &kneeView{What: sw.load.What, Latency: sw.load.Latency, Bound: units.Format(sw.load.Bound, sw.load.Latency), Why: sw.load.Why, CPU: sw.load.CPU}
	for _, row := range sc.Rows {
		k := sw.knees[row]
		kr := kneeRow{Row: row}
		if k < 0 {
			kr.Knee = "none in this run"
			lowest := minIndex(sw.rates)
			kr.Detail = fmt.Sprintf("over the bound already at %s", rateText(sw.rates[lowest], sw.load.What))
			if c := sc.Cell(row, sc.Columns[lowest], sw.load.Latency); c == nil {
				kr.Detail = "no figure at the lowest rate"
			}
			if why := sw.over[row]; why != "" {
				kr.Detail = why
			}
		} else {
			kr.Knee = rateText(sw.rates[k], sw.load.What)
			c := sc.Cell(row, sc.Columns[k], sw.load.Latency)
			kr.Detail = fmt.Sprintf("%s; %s %s there", sc.Columns[k], sw.load.Latency, units.Format(c.Summary.Median, sw.load.Latency))
			if maxIndex(sw.rates) == k {
				kr.Detail += "; the highest rate of this run: the knee may lie higher"
			}
			if why := sw.over[row]; why != "" {
				kr.Detail += "; next: " + why
			}
		}
		kv.Rows = append(kv.Rows, kr)
	}
	return kv
}

func minIndex(xs []float64) int {
	best := -1
	for i, x := range xs {
		if best < 0 || x < xs[best] {
			best = i
		}
	}
	return best
}

func maxIndex(xs []float64) int {
	best := -1
	for i, x := range xs {
		if best < 0 || x > xs[best] {
			best = i
		}
	}
	return best
}

// kneeChart draws the load sweep: the bound metric's median against the
// offered rate per row, the bound, and each row's knee.
func kneeChart(sc *cells.Scenario, sw *sweep, colors map[string]color.Color, outDir string) ([]chartView, error) {
	if sw == nil || len(sw.rates) < 2 {
		return nil, nil
	}
	var cs []*cells.Cell
	for _, row := range sc.Rows {
		for _, col := range sc.Columns {
			if c := sc.Cell(row, col, sw.load.Latency); c != nil {
				cs = append(cs, c)
			}
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	u := units.Parse(sw.load.Latency)
	scale := commonScale(u, cs, true)
	var series []plots.Series
	var knees []int
	for _, row := range sc.Rows {
		s := plots.Series{Label: row, Color: colors[row]}
		for _, col := range sc.Columns {
			s.Values = append(s.Values, plotValue(sc.Cell(row, col, sw.load.Latency), scale))
		}
		series = append(series, s)
		knees = append(knees, sw.knees[row])
	}
	title := fmt.Sprintf("%s: %s against offered %s/s", sc.Name, sw.load.Latency, sw.load.What)
	ch, err := plots.Knee(title, "offered "+sw.load.What+"/s (log scale)", u.Label(scale)+" (log scale)", sw.rates, series, sw.load.Bound/scale.Div, knees)
	if err != nil {
		return nil, err
	}
	pngName, svgName, err := ch.Save(outDir, slug(sc.Name)+"-knee")
	if err != nil {
		return nil, err
	}
	return []chartView{{
		Caption: fmt.Sprintf("%s: each row's %s (median over runs, 95%% CI) against the offered rate; the dashed line is the bound of %s, the ring each row's knee: the highest rate whose figure, and every lower rate's, stays within it.", sc.Name, sw.load.Latency, units.Format(sw.load.Bound, sw.load.Latency)),
		PNG:     pngName, SVG: svgName, Alt: title,
	}}, nil
}
