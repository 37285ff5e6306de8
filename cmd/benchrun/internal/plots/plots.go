// Package plots draws the report's charts with gonum.org/v1/plot and saves
// each as PNG (for the page and for sharing) and SVG (for print and zoom).
//
// Three chart kinds: grouped bars with confidence-interval error bars
// (Bars), a log-log line chart of cost against a swept parameter (Sweep),
// and a percentile plot of latency statistics per row (Percentiles). The
// y range always includes every error bar's top and the value labels, so no
// bar or whisker is clipped. Charts work in display units: callers scale
// values (ns → µs, B → KiB) before handing them over.
package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Value is one plotted figure: a median and its confidence interval. Lo or
// Hi may be infinite (too few samples): then no error bar is drawn.
type Value struct {
	Median, Lo, Hi float64
	OK             bool   // false: no figure (failed, unsupported, absent)
	Label          string // text printed on a bar, e.g. "12.3"
}

// Series is one row (implementation) across the groups or points of a chart.
type Series struct {
	Label  string
	Color  color.Color
	Values []Value // one per group (Bars) or per X (Sweep, Percentiles)
}

// Size of every chart. PNGs are rendered at DPI so they stay sharp when a
// page scales them to its width.
const (
	Width  = 9 * vg.Inch
	Height = 4.5 * vg.Inch
	DPI    = 144
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// Chart is a plot with its legend, drawn to the plot's right so it never
// covers data.
type Chart struct {
	plot   *plot.Plot
	legend plot.Legend
	// legendEntries counts the entries: 0 means no legend strip.
	legendEntries int
	yLabel        string
	yLabelStyle   text.Style
}

func newChart(title, xLabel, yLabel string) *Chart {
	p := plot.New()
	p.BackgroundColor = color.White
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansBold, 15)
	p.Title.Padding = 8
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 13)
		ax.Tick.Label.Font = font.From(sans, 11.5)
		ax.Padding = 4
	}
	p.X.Label.Text = xLabel
	// The y label is drawn by Chart.Draw, not by gonum: gonum reserves room
	// for it at the data midpoint 0.5·(min+max), which on a log axis lies
	// near the top and squeezes the plot down.
	p.Add(plotter.NewGrid())
	ylab := text.Style{Color: color.Black, Font: font.From(sans, 13), Rotation: math.Pi / 2,
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: p.TextHandler}
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 12)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = 18
	l.Padding = 5
	return &Chart{plot: p, legend: l, yLabel: yLabel, yLabelStyle: ylab}
}

func (ch *Chart) addLegend(label string, th plot.Thumbnailer) {
	ch.legend.Add(label, th)
	ch.legendEntries++
}

// Draw draws the chart onto c.
func (ch *Chart) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if ch.yLabel != "" {
		h := ch.yLabelStyle.Height(ch.yLabel)
		ch.yLabelStyle.Handler = ch.plot.TextHandler
		c.FillText(ch.yLabelStyle, vg.Point{X: c.Min.X + 4, Y: (c.Min.Y + c.Max.Y) / 2}, ch.yLabel)
		c = draw.Crop(c, h+10, 0, 0, 0)
	}
	if ch.legendEntries == 0 {
		ch.plot.Draw(c)
		return
	}
	r := ch.legend.Rectangle(c)
	strip := r.Max.X - r.Min.X + 16
	ch.plot.Draw(draw.Crop(c, 0, -strip, 0, 0))
	lc := draw.Crop(c, c.Max.X-c.Min.X-strip+10, 0, 0, -36)
	ch.legend.Draw(lc)
}

// Save writes the chart to dir/base.png and dir/base.svg and returns the
// two file names (relative to dir).
func (ch *Chart) Save(dir, base string) (pngName, svgName string, err error) {
	pngName, svgName = base+".png", base+".svg"

	img := vgimg.NewWith(vgimg.UseWH(Width, Height), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	ch.Draw(draw.New(img))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pb); err != nil {
		return "", "", fmt.Errorf("rendering %s: %w", pngName, err)
	}
	if err := os.WriteFile(filepath.Join(dir, pngName), pb.Bytes(), 0o644); err != nil {
		return "", "", err
	}

	svg := vgsvg.New(Width, Height)
	ch.Draw(draw.New(svg))
	var sb bytes.Buffer
	if _, err := svg.WriteTo(&sb); err != nil {
		return "", "", fmt.Errorf("rendering %s: %w", svgName, err)
	}
	if err := os.WriteFile(filepath.Join(dir, svgName), []byte(fallbackFonts(sb.String())), 0o644); err != nil {
		return "", "", err
	}
	return pngName, svgName, nil
}

// fallbackFonts gives the SVG's font families metric-compatible fallbacks.
// gonum lays text out with Liberation Sans but names only that family; a
// viewer without it would substitute a serif font of other widths. Embedding
// the font would add ~400 KB per chart, so name Arial (same metrics) and a
// generic family instead; the page itself shows the PNG, whose text is
// rasterised with the exact font.
func fallbackFonts(svg string) string {
	return strings.ReplaceAll(svg, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")
}

// swatch is a legend thumbnail: a filled square, or a line with a dot.
type swatch struct {
	color color.Color
	line  bool
}

func (s swatch) Thumbnail(c *draw.Canvas) {
	if s.line {
		y := (c.Min.Y + c.Max.Y) / 2
		c.StrokeLine2(draw.LineStyle{Color: s.color, Width: 2.5}, c.Min.X, y, c.Max.X, y)
		c.DrawGlyph(draw.GlyphStyle{Color: s.color, Radius: 3.5, Shape: draw.CircleGlyph{}}, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: y})
		return
	}
	c.FillPolygon(s.color, c.ClipPolygonY([]vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}}))
}

// top returns the highest point a value reaches: its median or the top of
// its error bar when that is finite.
func (v Value) top() float64 {
	if !math.IsInf(v.Hi, 0) && !math.IsNaN(v.Hi) && v.Hi > v.Median {
		return v.Hi
	}
	return v.Median
}

func (v Value) hasCI() bool {
	return !math.IsInf(v.Lo, 0) && !math.IsInf(v.Hi, 0) && !math.IsNaN(v.Lo) && !math.IsNaN(v.Hi)
}
