package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/plots"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
)

func colorMap(set *cells.Set) map[string]color.Color {
	m := map[string]color.Color{}
	extra := 0
	for _, sc := range set.Scenarios {
		for _, row := range sc.Rows {
			if _, ok := m[row]; ok {
				continue
			}
			rgb, ok := rowColour(row)
			if !ok {
				rgb = extraColors[extra%len(extraColors)]
				extra++
			}
			m[row] = color.RGBA{rgb[0], rgb[1], rgb[2], 255}
		}
	}
	return m
}

// commonScale picks one display scale for every figure of a chart: from
// the largest median on a linear axis; on a log axis (logAxis) from the
// geometric middle of the medians, so a 12 µs to 1.4 ms chart reads in µs
// rather than as 0.012 ms.
func commonScale(u units.Unit, cs []*cells.Cell, logAxis bool) units.Scale {
	lo, hi := math.Inf(1), 0.0
	for _, c := range cs {
		m := math.Abs(c.Summary.Median)
		hi = math.Max(hi, m)
		if m > 0 {
			lo = math.Min(lo, m)
		}
	}
	if logAxis && hi > 0 {
		return u.ScaleFor(math.Sqrt(lo * hi))
	}
	return u.ScaleFor(hi)
}

// span is the ratio of the highest median or interval top to the smallest
// median, 0 when some median is not positive: plots.Bars draws a log axis
// above plots.LogSpan, by the same rule.
func span(cs []*cells.Cell) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, c := range cs {
		m := c.Summary.Median
		if m <= 0 {
			return 0
		}
		top := m
		if h := c.Summary.Hi; !math.IsInf(c.Summary.CIPercent(), 0) && !math.IsNaN(h) && h > m {
			top = h
		}
		lo, hi = math.Min(lo, m), math.Max(hi, top)
	}
	if hi == 0 {
		return 0
	}
	return hi / lo
}

func plotValue(c *cells.Cell, scale units.Scale) plots.Value {
	if c == nil {
		return plots.Value{}
	}
	s := c.Summary
	return plots.Value{
		Median: s.Median / scale.Div, Lo: s.Lo / scale.Div, Hi: s.Hi / scale.Div, OK: true,
		// Each bar's label in its own scale, without the space: "1.33ms",
		// "20k", "4.74KiB": three significant digits and a unit, as narrow
		// as a figure gets (plots.Bars leaves labels out that still
		// overlap).
		Label: strings.ReplaceAll(units.Format(s.Median, c.Unit), " ", ""),
	}
}

func unitCells(sc *cells.Scenario, unit string) []*cells.Cell {
	var cs []*cells.Cell
	for _, row := range sc.Rows {
		for _, col := range sc.Columns {
			if c := sc.Cell(row, col, unit); c != nil {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// unitCharts draws the grouped bar chart of one scenario and unit, and the
// log-log sweep when the scenario sweeps one numeric parameter.
func unitCharts(sc *cells.Scenario, unit string, colors map[string]color.Color, outDir string) ([]chartView, error) {
	u := units.Parse(unit)
	cs := unitCells(sc, unit)
	if !slices.ContainsFunc(cs, func(c *cells.Cell) bool { return c.Summary.Median != 0 }) {
		return nil, nil // nothing to draw (e.g. 0 allocs everywhere): the table says it
	}
	scale := commonScale(u, cs, span(cs) > plots.LogSpan)
	yLabel := u.Label(scale)
	var rows []string
	for _, row := range sc.Rows {
		for _, c := range cs {
			if c.Row == row {
				rows = append(rows, row)
				break
			}
		}
	}
	var series []plots.Series
	for _, row := range rows {
		s := plots.Series{Label: row, Color: colors[row]}
		for _, col := range sc.Columns {
			s.Values = append(s.Values, plotValue(sc.Cell(row, col, unit), scale))
		}
		series = append(series, s)
	}
	base := slug(sc.Name) + "-" + slug(unit)
	title := fmt.Sprintf("%s: %s", sc.Name, unit)
	var out []chartView
	ch := plots.Bars(title+" (median, 95% CI)", yLabel, sc.Columns, series)
	pngName, svgName, err := ch.Save(outDir, base+"-bars")
	if err != nil {
		return nil, err
	}
	out = append(out, chartView{Caption: fmt.Sprintf("%s, %s: median per row with its 95%% confidence interval; n/a = no figure (see the table).", sc.Name, unit), PNG: pngName, SVG: svgName, Alt: title + " bar chart"})

	if key, xs := sweepKey(sc); key != "" {
		scale := commonScale(u, cs, true)
		yLabel := u.Label(scale)
		var lines []plots.Series
		for _, row := range rows {
			s := plots.Series{Label: row, Color: colors[row]}
			for _, col := range sc.Columns {
				s.Values = append(s.Values, plotValue(sc.Cell(row, col, unit), scale))
			}
			lines = append(lines, s)
		}
		ch, err := plots.Sweep(fmt.Sprintf("%s: %s against %s", sc.Name, unit, key), key+" (log scale)", yLabel+" (log scale)", xs, lines)
		if err != nil {
			return nil, err
		}
		pngName, svgName, err := ch.Save(outDir, base+"-sweep")
		if err != nil {
			return nil, err
		}
		out = append(out, chartView{Caption: fmt.Sprintf("%s, %s against %s on log-log axes: a flat line is a cost that does not grow with %s.", sc.Name, unit, key, key), PNG: pngName, SVG: svgName, Alt: title + " sweep"})
	}
	return out, nil
}

// sweepKey returns the swept parameter and its values when the scenario
// has exactly one parameter, it is numeric and has at least two values.
func sweepKey(sc *cells.Scenario) (string, []float64) {
	if len(sc.ParamKeys) != 1 || len(sc.Columns) < 2 {
		return "", nil
	}
	key := sc.ParamKeys[0]
	var xs []float64
	for _, col := range sc.Columns {
		x, err := strconv.ParseFloat(cells.Param(col, key), 64)
		if err != nil || x <= 0 {
			return "", nil
		}
		xs = append(xs, x)
	}
	return key, xs
}

// percentileCharts draws, per parameter setting, each row's latency
// statistics (the time units with a pNN- or max- prefix, after the plain
// one) as a percentile plot. For a load sweep with a rate key (sw), the
// settings compared are those outside the main sweep and its lowest rate,
// and each row gets a chart of its own with one line per offered rate of
// the sweep: how its spectrum moves with the load.
func percentileCharts(sc *cells.Scenario, sw *sweep, colors map[string]color.Color, outDir string) ([]chartView, error) {
	// Group time units by denominator ("wake", "req", "roundtrip").
	byPer := map[string][]string{}
	var pers []string
	for _, unit := range sc.Units {
		u := units.Parse(unit)
		if u.Kind != units.Time || strings.HasPrefix(unit, "cpu-") { // CPU time is no latency
			continue
		}
		if _, ok := byPer[u.Per]; !ok {
			pers = append(pers, u.Per)
		}
		byPer[u.Per] = append(byPer[u.Per], unit)
	}
	var out []chartView
	for _, per := range pers {
		us := byPer[per]
		hasStat := slices.ContainsFunc(us, func(unit string) bool { return units.Parse(unit).Stat != "" })
		if !hasStat {
			continue
		}
		sort.SliceStable(us, func(i, j int) bool { return statRank(us[i]) < statRank(us[j]) })
		var names []string
		for _, unit := range us {
			st := units.Parse(unit).Stat
			if st == "" {
				st = unit
			}
			names = append(names, st)
		}
		var swept []int // the main sweep's columns, when the rows get their own charts
		if sw != nil && sw.load.Key != "" {
			if cols := sw.mainColumns(); len(cols) >= 2 {
				swept = cols
			}
		}
		for ci, col := range sc.Columns {
			if slices.Contains(swept, ci) && ci != sw.nextRate(-1, sw.main) {
				continue // in the rows' own charts below
			}
			var all []*cells.Cell
			for _, unit := range us {
				for _, row := range sc.Rows {
					if c := sc.Cell(row, col, unit); c != nil {
						all = append(all, c)
					}
				}
			}
			if len(all) == 0 {
				continue
			}
			u := units.Parse(us[0])
			scale := commonScale(u, all, true)
			var series []plots.Series
			for _, row := range sc.Rows {
				s := plots.Series{Label: row, Color: colors[row]}
				any := false
				for _, unit := range us {
					v := plotValue(sc.Cell(row, col, unit), scale)
					any = any || v.OK
					s.Values = append(s.Values, v)
				}
				if any {
					series = append(series, s)
				}
			}
			title := sc.Name
			if col != "" {
				title += " " + col
			}
			ch, err := plots.Percentiles(title+": latency percentiles per "+per, scale.Symbol+" per "+per+" (log scale)", names, series)
			if err != nil {
				return nil, err
			}
			base := slug(sc.Name) + "-" + slug(col) + "-" + slug(per) + "-percentiles"
			base = strings.ReplaceAll(base, "--", "-")
			pngName, svgName, err := ch.Save(outDir, base)
			if err != nil {
				return nil, err
			}
			out = append(out, chartView{
				Caption: fmt.Sprintf("%s: per row, the median over runs of each latency statistic (%s), with 95%% CIs; log y scale, so the slope shows the tail; percentiles are placed at log10(1/(1−p)) as in HdrHistogram's and wrk2's plots, max a decade beyond the last.", title, strings.Join(names, ", ")),
				PNG:     pngName, SVG: svgName, Alt: title + " percentile plot",
			})
		}
		if len(swept) > 0 {
			rowCharts, err := rowSpectra(sc, sw, us, names, swept, per, outDir)
			if err != nil {
				return nil, err
			}
			out = append(out, rowCharts...)
		}
	}
	return out, nil
}

// rowSpectra draws each row's percentile spectrum at every offered rate of
// the main sweep (columns swept), one line per rate, from light (blue) to
// heavy (red); a rate above the row's knee is labelled so in the legend.
func rowSpectra(sc *cells.Scenario, sw *sweep, us, names []string, swept []int, per, outDir string) ([]chartView, error) {
	var out []chartView
	for _, row := range sc.Rows {
		var all []*cells.Cell
		for _, unit := range us {
			for _, ci := range swept {
				if c := sc.Cell(row, sc.Columns[ci], unit); c != nil {
					all = append(all, c)
				}
			}
		}
		if len(all) == 0 {
			continue
		}
		scale := commonScale(units.Parse(us[0]), all, true)
		var series []plots.Series
		for j, ci := range swept {
			label := rateText(sw.rates[ci], sw.load.What)
			if sw.overloaded(row, ci) {
				label += " (above saturation)"
			}
			s := plots.Series{Label: label, Color: rampColour(j, len(swept))}
			ok := false
			for _, unit := range us {
				v := plotValue(sc.Cell(row, sc.Columns[ci], unit), scale)
				ok = ok || v.OK
				s.Values = append(s.Values, v)
			}
			if ok {
				series = append(series, s)
			}
		}
		title := fmt.Sprintf("%s %s, %s: latency percentiles per %s at each offered rate", sc.Name, row, sw.main, per)
		ch, err := plots.Percentiles(title, scale.Symbol+" per "+per+" (log scale)", names, series)
		if err != nil {
			return nil, err
		}
		base := slug(sc.Name) + "-" + slug(row) + "-" + slug(per) + "-spectrum"
		pngName, svgName, err := ch.Save(outDir, base)
		if err != nil {
			return nil, err
		}
		out = append(out, chartView{
			Caption: fmt.Sprintf("%s: %s's latency spectrum (%s; medians over runs, 95%% CIs) at each offered rate of the sweep at %s, light load blue to heavy red; percentiles at log10(1/(1−p)) as in HdrHistogram's and wrk2's plots. A rate above the row's knee is marked in the legend: its figures are a queue, not the service time.", sc.Name, row, strings.Join(names, ", "), sw.main),
			PNG:     pngName, SVG: svgName, Alt: title,
		})
	}
	return out, nil
}

// rampColour is colour j of n on a ramp from blue (light load) to red
// (heavy load).
func rampColour(j, n int) color.Color {
	t := 0.0
	if n > 1 {
		t = float64(j) / float64(n-1)
	}
	lerp := func(a, b float64) uint8 { return uint8(math.Round(a + (b-a)*t)) }
	return color.RGBA{R: lerp(49, 215), G: lerp(104, 48), B: lerp(196, 39), A: 255}
}

// statRank orders statistics: the plain unit, then pNN by NN, then max.
func statRank(unit string) float64 {
	st := units.Parse(unit).Stat
	switch {
	case st == "":
		return -1
	case st == "max":
		return 1000
	case strings.HasPrefix(st, "p"):
		if v, err := strconv.ParseFloat(st[1:], 64); err == nil {
			return v
		}
	}
	return 999
}
