package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// groupWidth is the fraction of a group's slot its bars take.
const groupWidth = 0.8

// Bars draws a grouped bar chart: one group per entry of groups (e.g. the
// parameter settings "n=64", "n=4096"), one bar per series in each, each
// with its confidence interval as an error bar and, when there is room, its
// value printed on top. A series without a figure in a group gets "n/a" at
// the baseline. With a single group the bars are labelled by series under
// the axis and there is no legend. When the positive medians span more than
// LogSpan (a 24 µs cold spawn beside a 35 ns warm one, or one interval
// reaching 40 ms over 100 µs medians), the y axis is logarithmic and the
// bars rise from its bottom, so small figures stay visible. Value labels
// are drawn only when every one fits its bar's slot (at 10 pt, else 8 pt):
// labels that would run into each other are left out, and the table beside
// the chart has the figures.
func Bars(title, yLabel string, groups []string, series []Series) *Chart {
	b := &barGroups{groups: groups, series: series}
	b.log = b.span() > LogSpan
	if b.log {
		yLabel += " (log scale)"
	}
	ch := newChart(title, "", yLabel)
	b.labelStyle = text.Style{Color: color.Gray{Y: 40}, Font: font.From(sans, 10), XAlign: draw.XCenter, YAlign: draw.YBottom, Handler: ch.plot.TextHandler}
	bars := len(groups) * len(series)
	b.labels = bars <= 16
	ch.plot.Add(b)

	var ticks []plot.Tick
	if len(groups) == 1 {
		for j, s := range series {
			ticks = append(ticks, plot.Tick{Value: b.center(0, j), Label: s.Label})
		}
	} else {
		for i, g := range groups {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: g})
		}
		for _, s := range series {
			ch.addLegend(s.Label, swatch{color: s.Color})
		}
	}
	ch.plot.X.Tick.Marker = plot.ConstantTicks(ticks)
	ch.plot.X.Min, ch.plot.X.Max = -0.5, float64(len(groups))-0.5

	// Pad the top so the highest whisker and its label stay inside: 12%
	// of the axis for the label's height (the chart is 4.5 in tall and a
	// label ~0.2 in), or the same share of the decades on a log axis. With
	// several groups the labels may have to stand upright (fitLabels): 25%
	// leaves room for a 7-character label at 8 pt.
	_, _, lo, hi := b.DataRange()
	share := 0.12
	if len(groups) > 1 {
		share = 0.25
	}
	if b.log {
		lo, hi = niceLogRange(lo/1.3, hi)
		ch.plot.Y.Min, ch.plot.Y.Max = lo, hi*math.Pow(hi/lo, share)
		ch.plot.Y.Scale = plot.LogScale{}
		ch.plot.Y.Tick.Marker = logTicks{}
		return ch
	}
	pad := 0.04
	if b.labels {
		pad = share
	}
	ch.plot.Y.Min, ch.plot.Y.Max = lo, hi+pad*(hi-lo)
	ch.plot.Y.Tick.Marker = linearTicks{}
	return ch
}

// LogSpan is the ratio (1.5 decades) of the highest point a bar chart must
// show (a median or the top of its interval) to its smallest positive
// median above which the chart switches to a log axis: on a linear axis
// the smallest bar would be under 3% of the axis, too flat to read.
const LogSpan = 31.6

// span returns the ratio of the highest median or interval top to the
// smallest median, or 0 when some median is not positive (a log axis
// cannot show it).
func (b *barGroups) span() float64 {
	lo, hi := math.Inf(1), 0.0
	for _, s := range b.series {
		for _, v := range s.Values {
			if !v.OK {
				continue
			}
			if v.Median <= 0 {
				return 0
			}
			lo, hi = math.Min(lo, v.Median), math.Max(hi, v.top())
		}
	}
	if hi == 0 {
		return 0
	}
	return hi / lo
}

type barGroups struct {
	groups     []string
	series     []Series
	log        bool // log y axis: bars rise from the axis bottom
	labels     bool
	labelStyle text.Style
}

func (b *barGroups) barWidth() float64 { return groupWidth / float64(len(b.series)) }

// center is the x of series j's bar in group i.
func (b *barGroups) center(i, j int) float64 {
	return float64(i) - groupWidth/2 + (float64(j)+0.5)*b.barWidth()
}

// DataRange implements plot.DataRanger: y from 0 (or the lowest negative
// figure) to the highest bar or error-bar top; on a log axis from the
// lowest positive figure or interval bottom.
func (b *barGroups) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = -0.5, float64(len(b.groups))-0.5
	if b.log {
		ymin = math.Inf(1)
		for _, s := range b.series {
			for _, v := range s.Values {
				if v.OK {
					ymin = math.Min(ymin, v.Median)
					if v.hasCI() && v.Lo > 0 {
						ymin = math.Min(ymin, v.Lo)
					}
					ymax = math.Max(ymax, v.top())
				}
			}
		}
		return
	}
	for _, s := range b.series {
		for _, v := range s.Values {
			if !v.OK {
				continue
			}
			ymax = math.Max(ymax, v.top())
			ymin = math.Min(ymin, v.Median)
		}
	}
	if ymax == ymin {
		ymax = ymin + 1 // all zero (e.g. 0 allocs): still draw an axis
	}
	return
}

// Plot implements plot.Plotter.
func (b *barGroups) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	base := c.Min.Y // on a log axis bars rise from its bottom
	if !b.log {
		base = trY(0)
	}
	half := b.barWidth() / 2
	labels := b.fitLabels(trX(b.barWidth())-trX(0), b.labelRoom(c, trY))
	outline := draw.LineStyle{Color: color.Gray{Y: 60}, Width: 0.6}
	whisker := draw.LineStyle{Color: color.Black, Width: 1.3}
	na := b.labelStyle
	na.Color = color.Gray{Y: 110}
	for i := range b.groups {
		for j, s := range b.series {
			if i >= len(s.Values) {
				continue
			}
			v := s.Values[i]
			x := b.center(i, j)
			x0, x1 := trX(x-half*0.92), trX(x+half*0.92)
			if !v.OK {
				c.FillText(na, vg.Point{X: trX(x), Y: base + 2}, "n/a")
				continue
			}
			y0, y1 := base, trY(v.Median)
			rect := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			c.FillPolygon(s.Color, c.ClipPolygonXY(rect))
			c.StrokeLines(outline, c.ClipLinesXY(append(rect, rect[0]))...)
			top := y1
			if v.hasCI() && (!b.log || v.Lo > 0) {
				xc, lo, hi := trX(x), trY(v.Lo), trY(v.Hi)
				capw := (x1 - x0) * 0.25
				c.StrokeLine2(whisker, xc, lo, xc, hi)
				c.StrokeLine2(whisker, xc-capw, lo, xc+capw, lo)
				c.StrokeLine2(whisker, xc-capw, hi, xc+capw, hi)
				top = max(top, hi)
			}
			if labels != nil && v.Label != "" {
				c.FillText(*labels, vg.Point{X: trX(x), Y: top + 3}, v.Label)
			}
		}
	}
}

// fitLabels returns the style in which every value label fits: across one
// bar's slot (the bar and its share of the gap) with 3 pt to spare between
// neighbours, at 10 pt then 8 pt; else upright (rotated a quarter turn) at
// 8 pt, when the slot is wide enough for the text's height and every label
// fits the room above its bar (room, from labelRoom). nil when the labels
// are off or would touch or leave the chart in every way.
func (b *barGroups) fitLabels(slot vg.Length, room func(series, group int) vg.Length) *text.Style {
	if !b.labels {
		return nil
	}
	all := func(fits func(st text.Style, label string, room vg.Length) bool, st text.Style) bool {
		for j, s := range b.series {
			for i, v := range s.Values {
				if v.OK && !fits(st, v.Label, room(j, i)) {
					return false
				}
			}
		}
		return true
	}
	for _, size := range []vg.Length{10, 8} {
		st := b.labelStyle
		st.Font = font.From(sans, size)
		if all(func(st text.Style, l string, _ vg.Length) bool { return st.Width(l)+3 <= slot }, st) {
			return &st
		}
	}
	st := b.labelStyle
	st.Font = font.From(sans, 8)
	st.Rotation, st.XAlign, st.YAlign = math.Pi/2, draw.XLeft, draw.YCenter
	if st.Height("0")+3 <= slot && all(func(st text.Style, l string, room vg.Length) bool { return st.Width(l) <= room }, st) {
		return &st
	}
	return nil
}

// labelRoom returns, for the bar of series j in group i, the height between
// the top of its bar or whisker (plus the 3 pt gap the label keeps) and the
// top of the canvas: how long an upright label may be.
func (b *barGroups) labelRoom(c draw.Canvas, trY func(float64) vg.Length) func(j, i int) vg.Length {
	return func(j, i int) vg.Length {
		v := b.series[j].Values[i]
		top := trY(v.Median)
		if v.hasCI() && (!b.log || v.Lo > 0) {
			top = max(top, trY(v.Hi))
		}
		return c.Max.Y - top - 3
	}
}
