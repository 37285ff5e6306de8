package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Sweep draws cost against a swept parameter on log-log axes: one line per
// series through its medians at xs (e.g. n = 2, 64, 4096), with CI error
// bars. Figures that are missing or not positive are left out of the line.
func Sweep(title, xLabel, yLabel string, xs []float64, series []Series) (*Chart, error) {
	ch := newChart(title, xLabel, yLabel)
	ch.plot.X.Tick.Marker = plot.ConstantTicks(sweepTicks(xs))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	// Half a step of room either side, in log space.
	ch.plot.X.Min, ch.plot.X.Max = lo/1.5, hi*1.5
	if err := ch.addLines(series, func(i, _ int) float64 { return xs[i] }); err != nil {
		return nil, err
	}
	return ch, nil
}

// minTickGap is the least distance, in decades, between two labelled
// ticks of a log x axis: closer labels of a chart Width wide would run
// into each other ("160k200k240k").
const minTickGap = 0.11

// sweepTicks marks every x and labels those at least minTickGap from the
// last labelled one, in rising order.
func sweepTicks(xs []float64) []plot.Tick {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	var ticks []plot.Tick
	last := math.Inf(-1)
	for _, x := range sorted {
		t := plot.Tick{Value: x}
		if math.Log10(x)-last >= minTickGap {
			t.Label, last = formatN(x), math.Log10(x)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// Percentiles draws latency statistics per row on a log y axis, as a
// percentile spectrum (wrk2's and HdrHistogram's plots): when every
// statistic is a percentile ("p50", "p99.9") or "max", a statistic p sits
// at x = log10(1/(1−p)), so p90, p99, p99.9 are one decade apart and the
// tail gets the room it needs; max sits one decade right of the highest
// percentile. Otherwise the statistics are evenly spaced categories. Each
// series is a line through its medians with CI error bars, so a row's tail
// shows as the line's slope; series are nudged apart horizontally so
// whiskers don't hide each other.
func Percentiles(title, yLabel string, statNames []string, series []Series) (*Chart, error) {
	xs, spectrum := spectrumXs(statNames)
	xLabel := "statistic (each point: median over runs)"
	if spectrum {
		xLabel = "percentile, log scale in 1/(1−p) (each point: median over runs)"
	}
	ch := newChart(title, xLabel, yLabel)
	var ticks []plot.Tick
	for i, s := range statNames {
		ticks = append(ticks, plot.Tick{Value: xs[i], Label: s})
	}
	ch.plot.X.Tick.Marker = plot.ConstantTicks(ticks)
	step := 1.0 // the smallest gap between two statistics
	for i := 1; i < len(xs); i++ {
		step = math.Min(step, xs[i]-xs[i-1])
	}
	ch.plot.X.Min, ch.plot.X.Max = xs[0]-0.4*step, xs[len(xs)-1]+0.4*step
	k := float64(len(series))
	if err := ch.addLines(series, func(i, j int) float64 { return xs[i] + (float64(j)-(k-1)/2)*0.06*step }); err != nil {
		return nil, err
	}
	return ch, nil
}

// SpectrumX is the x position of percentile statistic stat ("p99.9") on a
// percentile spectrum: log10(1/(1−p)), p as a fraction. ok is false for
// anything but pNN with 0 < NN < 100.
func SpectrumX(stat string) (x float64, ok bool) {
	if len(stat) < 2 || stat[0] != 'p' {
		return 0, false
	}
	nn, err := strconv.ParseFloat(stat[1:], 64)
	if err != nil || nn <= 0 || nn >= 100 {
		return 0, false
	}
	return math.Log10(100 / (100 - nn)), true
}

// spectrumXs places statNames: on a percentile spectrum (SpectrumX, max a
// decade past the last percentile) when they are percentiles in rising
// order and at most a trailing max, else at 0, 1, 2, ….
func spectrumXs(statNames []string) (xs []float64, spectrum bool) {
	spectrum = len(statNames) > 0
	last := math.Inf(-1)
	for i, s := range statNames {
		x, ok := SpectrumX(s)
		if !ok && s == "max" && i == len(statNames)-1 && i > 0 {
			x, ok = last+1, true
		}
		if !ok || x <= last {
			spectrum = false
			break
		}
		xs, last = append(xs, x), x
	}
	if !spectrum {
		xs = xs[:0]
		for i := range statNames {
			xs = append(xs, float64(i))
		}
	}
	return xs, spectrum
}

func (ch *Chart) addLines(series []Series, xAt func(i, j int) float64) error {
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for j, s := range series {
		var pts plotter.XYs
		var errs plotter.YErrors
		var errPts plotter.XYs
		for i, v := range s.Values {
			if !v.OK || v.Median <= 0 {
				continue
			}
			x := xAt(i, j)
			pts = append(pts, plotter.XY{X: x, Y: v.Median})
			ylo, yhi = math.Min(ylo, v.Median), math.Max(yhi, v.Median)
			if v.hasCI() && v.Lo > 0 {
				errPts = append(errPts, plotter.XY{X: x, Y: v.Median})
				errs = append(errs, struct{ Low, High float64 }{v.Median - v.Lo, v.Hi - v.Median})
				ylo, yhi = math.Min(ylo, v.Lo), math.Max(yhi, v.Hi)
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Label, err)
		}
		line.Color, line.Width = s.Color, 2.5
		points.Color, points.Shape, points.Radius = s.Color, draw.CircleGlyph{}, 4
		ch.plot.Add(line, points)
		if len(errPts) > 0 {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{errPts, errs})
			if err != nil {
				return fmt.Errorf("series %s: %w", s.Label, err)
			}
			eb.Color, eb.Width, eb.CapWidth = s.Color, 1.3, 8
			ch.plot.Add(eb)
		}
		ch.addLegend(s.Label, swatch{color: s.Color, line: true})
	}
	if math.IsInf(ylo, 0) {
		return fmt.Errorf("no positive figure to plot")
	}
	ch.plot.Y.Scale = plot.LogScale{}
	// Room above and below so the whiskers' caps and the points' glyphs
	// stay inside the axes, then out to the next labelled tick so both
	// ends of the axis carry a number.
	ch.plot.Y.Min, ch.plot.Y.Max = niceLogRange(ylo/1.2, yhi*1.2)
	ch.plot.Y.Tick.Marker = logTicks{}
	return nil
}

// logTicks labels a log axis at 1-2-5 steps when it spans few decades and
// at powers of ten otherwise, so short ranges still get labelled ticks
// (gonum's LogTicks labels powers of ten only).
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	decades := math.Log10(max / min)
	steps := []float64{1, 2, 5}
	if decades > 3 {
		steps = []float64{1}
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < min || v > max {
				continue
			}
			label := ""
			for _, s := range steps {
				if m == s {
					label = formatN(v)
				}
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// linearTicks labels a linear axis at the finest 1-2-5 step that gives at
// most seven labelled ticks, with four minor ticks between (gonum's default often
// labels only the ends of a short axis).
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: formatN(lo)}}
	}
	raw := (hi - lo) / 7
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	var ticks []plot.Tick
	minor := step / 5
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		label := ""
		if r := math.Remainder(v, step); math.Abs(r) < minor*1e-6 {
			// As many decimals as the step has: 0.6, never 0.6000000000000001.
			decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
			label = strconv.FormatFloat(v, 'f', decimals, 64)
			if math.Abs(v) < minor*1e-6 {
				label = "0"
			}
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// niceLogRange widens [lo, hi] to the labelled ticks logTicks would put
// just outside it.
func niceLogRange(lo, hi float64) (float64, float64) {
	steps := []float64{1, 2, 5, 10}
	if math.Log10(hi/lo) > 3 {
		steps = []float64{1, 10}
	}
	down := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)))
		best := p
		for _, s := range steps {
			if s*p <= v {
				best = s * p
			}
		}
		return best
	}
	up := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)))
		for _, s := range steps {
			if s*p >= v {
				return s * p
			}
		}
		return 10 * p
	}
	return down(lo), up(hi)
}

// formatN prints an axis number compactly: 2, 64, 4096, 10k, 262k, 1M, 0.5.
func formatN(v float64) string {
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(math.Round(v/1e3), 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Knee draws a load sweep: each series' latency medians (with CIs) against
// the offered rate xs on log-log axes, as Sweep does, plus a dashed line at
// the latency bound and a ring around each series' knee (knees[j] is the
// index into xs of series j's knee, -1 for none).
func Knee(title, xLabel, yLabel string, xs []float64, series []Series, bound float64, knees []int) (*Chart, error) {
	if len(knees) != len(series) {
		return nil, fmt.Errorf("plots.Knee: %d knees for %d series", len(knees), len(series))
	}
	ch, err := Sweep(title, xLabel, yLabel, xs, series)
	if err != nil {
		return nil, err
	}
	if err := ch.addBound(bound); err != nil {
		return nil, err
	}
	var rings plotter.XYs
	for j, k := range knees {
		if k < 0 || k >= len(xs) || k >= len(series[j].Values) || !series[j].Values[k].OK {
			continue
		}
		rings = append(rings, plotter.XY{X: xs[k], Y: series[j].Values[k].Median})
	}
	if len(rings) > 0 {
		sc, err := plotter.NewScatter(rings)
		if err != nil {
			return nil, err
		}
		sc.Shape, sc.Radius, sc.Color = draw.RingGlyph{}, vg.Points(9), color.Black
		ch.plot.Add(sc)
		ch.addLegend("knee (highest rate sustained)", ringSwatch{})
	}
	return ch, nil
}

// ringSwatch is the legend thumbnail of a knee: the ring drawn around it.
type ringSwatch struct{}

func (ringSwatch) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.RingGlyph{}},
		vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
}

// Curve is one series of a Throughput chart: its values (y) at its own xs,
// one per point (NaN: no x, the point is left out), and the index of its
// knee among them (-1 for none).
type Curve struct {
	Series
	Xs   []float64
	Knee int
}

// Throughput draws latency against achieved throughput on log-log axes:
// one line per curve through its points at its own xs (a saturated row's
// line stops moving right and climbs), a ring at each curve's knee, a
// dashed line at the latency bound (when > 0) and a dotted vertical line
// at the load generator's ceiling (when > 0).
func Throughput(title, xLabel, yLabel string, curves []Curve, bound, ceiling float64) (*Chart, error) {
	ch := newChart(title, xLabel, yLabel)
	ch.plot.X.Scale = plot.LogScale{}
	ch.plot.X.Tick.Marker = logTicks{}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	var series []Series
	for _, cv := range curves {
		if len(cv.Xs) != len(cv.Values) {
			return nil, fmt.Errorf("plots.Throughput: curve %s has %d xs for %d values", cv.Label, len(cv.Xs), len(cv.Values))
		}
		s := cv.Series
		s.Values = slices.Clone(s.Values)
		for i, x := range cv.Xs {
			if !(x > 0) {
				s.Values[i].OK = false // no x: no point
				continue
			}
			if s.Values[i].OK {
				xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
			}
		}
		series = append(series, s)
	}
	if ceiling > 0 {
		xlo, xhi = math.Min(xlo, ceiling), math.Max(xhi, ceiling)
	}
	if math.IsInf(xlo, 0) {
		return nil, fmt.Errorf("plots.Throughput: no point with a positive x")
	}
	ch.plot.X.Min, ch.plot.X.Max = niceLogRange(xlo/1.2, xhi*1.2)
	if err := ch.addLines(series, func(i, j int) float64 { return curves[j].Xs[i] }); err != nil {
		return nil, err
	}
	if err := ch.addBound(bound); err != nil {
		return nil, err
	}
	if ceiling > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: ceiling, Y: ch.plot.Y.Min}, {X: ceiling, Y: ch.plot.Y.Max}})
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = color.RGBA{R: 180, G: 40, B: 40, A: 255}, 1.5
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		ch.plot.Add(line)
		ch.addLegend("generator ceiling", swatch{color: line.Color, line: true})
	}
	var rings plotter.XYs
	for j, cv := range curves {
		k := cv.Knee
		if k < 0 || k >= len(cv.Xs) || !series[j].Values[k].OK || !(cv.Xs[k] > 0) {
			continue
		}
		rings = append(rings, plotter.XY{X: cv.Xs[k], Y: series[j].Values[k].Median})
	}
	if len(rings) > 0 {
		sc, err := plotter.NewScatter(rings)
		if err != nil {
			return nil, err
		}
		sc.Shape, sc.Radius, sc.Color = draw.RingGlyph{}, vg.Points(9), color.Black
		ch.plot.Add(sc)
		ch.addLegend("knee (highest rate sustained)", ringSwatch{})
	}
	return ch, nil
}

// addBound draws a latency bound (bound > 0) as a dashed horizontal line
// across the chart, widening the log y range to hold it, with its legend
// entry. Knee and Throughput charts share it.
func (ch *Chart) addBound(bound float64) error {
	if bound <= 0 {
		return nil
	}
	ch.plot.Y.Min, ch.plot.Y.Max = niceLogRange(math.Min(ch.plot.Y.Min, bound/1.2), math.Max(ch.plot.Y.Max, bound*1.2))
	line, err := plotter.NewLine(plotter.XYs{{X: ch.plot.X.Min, Y: bound}, {X: ch.plot.X.Max, Y: bound}})
	if err != nil {
		return err
	}
	line.Color, line.Width = color.Gray{Y: 90}, 1.5
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	ch.plot.Add(line)
	ch.addLegend("latency bound", swatch{color: color.Gray{Y: 90}, line: true})
	return nil
}
