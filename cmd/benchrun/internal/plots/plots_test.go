package plots

import (
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255},
}

func testSeries() []Series {
	inf := math.Inf(1)
	return []Series{
		{"stackful-asm", palette[0], []Value{{10, 9.5, 10.5, true, "10.0"}, {12, 11, 13, true, "12.0"}, {15, 14, 16, true, "15.0"}}},
		{"stackful-coro", palette[1], []Value{{40, 39, 41, true, "40.0"}, {41, 40, 43, true, "41.0"}, {55, 50, 60, true, "55.0"}}},
		{"stackless", palette[2], []Value{{3, 2.9, 3.1, true, "3.00"}, {3, 2.9, 3.2, true, "3.00"}, {4, -inf, inf, true, "4.00"}}},
		{"goroutine-single", palette[3], []Value{{150, 140, 160, true, "150"}, {152, 150, 170, true, "152"}, {180, 170, 200, true, "180"}}},
		{"goroutine-multi", palette[4], []Value{{300, 280, 340, true, "300"}, {310, 300, 330, true, "310"}, {}}},
	}
}

// outDir returns where charts go: a temp dir, or $PLOTS_OUT to look at them.
func outDir(t *testing.T) string {
	if d := os.Getenv("PLOTS_OUT"); d != "" {
		return d
	}
	return t.TempDir()
}

func checkFiles(t *testing.T, dir, pngName, svgName string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, pngName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", pngName, err)
	}
	if b := img.Bounds(); b.Dx() != int(float64(Width/vg.Inch)*DPI) || b.Dy() != int(float64(Height/vg.Inch)*DPI) {
		t.Errorf("%s is %v", pngName, b)
	}
	svg, err := os.ReadFile(filepath.Join(dir, svgName))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", svgName, err)
		}
	}
	if !strings.Contains(string(svg), "sans-serif") || strings.Contains(string(svg), "font-family:Liberation Sans;") {
		t.Errorf("%s: font family without fallbacks", svgName)
	}
}

func TestBars(t *testing.T) {
	s := testSeries()
	ch := Bars("Yield: ns per switch", "ns per switch", []string{"n=2", "n=64", "n=4096"}, s)
	// No clipping: the y axis reaches above every whisker and below the
	// lowest (the 3 ns to 310 ns span makes it a log axis).
	if ch.plot.Y.Max <= 340 || ch.plot.Y.Min > 2.9 {
		t.Errorf("y range [%v, %v] clips the bars [2.9, 340]", ch.plot.Y.Min, ch.plot.Y.Max)
	}
	linear := Bars("Yield without stackless and stackful-asm", "ns per switch", []string{"n=2", "n=64", "n=4096"}, []Series{s[1], s[3], s[4]})
	if _, ok := linear.plot.Y.Scale.(plot.LinearScale); !ok || linear.plot.Y.Max <= 340 || linear.plot.Y.Min != 0 {
		t.Errorf("linear chart: scale %T, y range [%v, %v]; want linear from 0 past 340", linear.plot.Y.Scale, linear.plot.Y.Min, linear.plot.Y.Max)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "bars")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)

	single := Bars("PingPong: ns per switch", "ns per switch", []string{""}, firstOnly(s))
	if single.legendEntries != 0 {
		t.Error("a single-group chart has a legend: its bars are labelled on the axis")
	}
	if p, v, err = single.Save(dir, "bars-single"); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
}

func firstOnly(s []Series) []Series {
	out := make([]Series, len(s))
	for i := range s {
		out[i] = s[i]
		out[i].Values = s[i].Values[:1]
	}
	return out
}

func TestLogBars(t *testing.T) {
	s := []Series{
		{"stackful-asm", palette[0], []Value{{24000, 23000, 25000, true, "24.0k"}, {35, 34, 36, true, "35"}}},
		{"goroutine-single", palette[3], []Value{{360, 350, 370, true, "360"}, {350, 340, 360, true, "350"}}},
	}
	ch := Bars("Spawn: ns per spawn", "ns per spawn", []string{"pool=cold", "pool=warm"}, s)
	if _, ok := ch.plot.Y.Scale.(plot.LogScale); !ok {
		t.Fatal("a 700× span of medians is drawn on a linear axis")
	}
	if ch.plot.Y.Min > 34 || ch.plot.Y.Max <= 25000 {
		t.Errorf("y range [%v, %v] clips [34, 25000]", ch.plot.Y.Min, ch.plot.Y.Max)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "bars-log")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
}

func TestLinearTicks(t *testing.T) {
	var labels []string
	for _, tk := range (linearTicks{}).Ticks(0, 27.5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "0,5,10,15,20,25" {
		t.Errorf("labels %s", got)
	}
	labels = nil
	for _, tk := range (linearTicks{}).Ticks(0, 1.1) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "0,0.2,0.4,0.6,0.8,1.0" {
		t.Errorf("labels %s", got)
	}
}

func TestSweep(t *testing.T) {
	ch, err := Sweep("Yield: cost against n", "n (coroutines)", "ns per switch", []float64{2, 64, 4096}, testSeries())
	if err != nil {
		t.Fatal(err)
	}
	if ch.plot.Y.Max < 340 || ch.plot.Y.Min > 2.9 {
		t.Errorf("y range [%v, %v] clips error bars [2.9, 340]", ch.plot.Y.Min, ch.plot.Y.Max)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
}

func TestPercentiles(t *testing.T) {
	ch, err := Percentiles("Timer n=1000: lateness", "µs per wake", []string{"p50", "p99", "max"}, testSeries())
	if err != nil {
		t.Fatal(err)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "percentiles")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
	if _, err := Percentiles("empty", "", []string{"p50"}, []Series{{Label: "x", Values: []Value{{}}}}); err == nil {
		t.Error("a chart with no figure gave no error")
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(1.5, 60) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "2,5,10,20,50" {
		t.Errorf("labels %s", got)
	}
	if lo, hi := niceLogRange(2.4, 340); lo != 2 || hi != 500 {
		t.Errorf("niceLogRange(2.4, 340) = %v, %v; want 2, 500", lo, hi)
	}
	if lo, hi := niceLogRange(3, 40000); lo != 1 || hi != 1e5 {
		t.Errorf("niceLogRange(3, 40000) = %v, %v; want 1, 1e5", lo, hi)
	}
	if formatN(262144) != "262k" || formatN(1e6) != "1M" || formatN(4096) != "4096" || formatN(1e4) != "10k" {
		t.Errorf("formatN: %s %s %s", formatN(262144), formatN(1e6), formatN(4096))
	}
}

// TestLogForAWideInterval: medians within 2× of each other but one
// interval reaching 200× above them (a noisy echo cell) make a log axis,
// so that interval does not flatten every bar.
func TestLogForAWideInterval(t *testing.T) {
	s := []Series{
		{"a", palette[0], []Value{{200e3, 190e3, 210e3, true, "200µs"}}},
		{"b", palette[1], []Value{{300e3, 100e3, 40e6, true, "300µs"}}},
	}
	if ch := Bars("Echo", "ns", []string{""}, s); !isLog(ch) {
		t.Error("a 40 ms interval over 200 µs medians is drawn on a linear axis")
	}
	s[1].Values[0].Hi = 320e3
	if ch := Bars("Echo", "ns", []string{""}, s); isLog(ch) {
		t.Error("medians and intervals within 2× drawn on a log axis")
	}
}

func isLog(ch *Chart) bool {
	_, ok := ch.plot.Y.Scale.(plot.LogScale)
	return ok
}

// TestLabelsThatWouldOverlapAreLeftOut: labels wider than a bar's slot are
// not drawn (they ran into each other: "1331212578"); narrow ones are.
func TestLabelsThatWouldOverlapAreLeftOut(t *testing.T) {
	wide := make([]Series, 5)
	for j := range wide {
		wide[j] = Series{fmt.Sprint("row", j), palette[j], []Value{
			{1331e3, 1300e3, 1400e3, true, "1331212.578µs"}, {1, 0.9, 1.1, true, "1.00"}, {2, 1.9, 2.1, true, "2.00"}}}
	}
	b := &barGroups{groups: []string{"n=1", "n=1000", "n=10000"}, series: wide, labels: true}
	b.labelStyle = Bars("t", "y", b.groups, wide).plot.Title.TextStyle
	room := func(int, int) vg.Length { return 30 } // above every bar
	if st := b.fitLabels(20, room); st != nil {
		t.Error("labels 13 characters wide fit a 20 pt slot and 30 pt of room above")
	}
	for j := range wide {
		wide[j].Values[0].Label = "1.33ms"
	}
	if st := b.fitLabels(40, room); st == nil || st.Rotation != 0 {
		t.Error("6-character labels do not fit a 40 pt slot")
	}
	if st := b.fitLabels(20, room); st == nil || st.Rotation == 0 {
		t.Error("6-character labels in a 20 pt slot with room above are not stood upright")
	}
}

// TestSpectrumX checks the percentile spectrum's x positions by hand:
// log10(1/(1−p)).
func TestSpectrumX(t *testing.T) {
	for stat, want := range map[string]float64{"p50": math.Log10(2), "p90": 1, "p99": 2, "p99.9": 3, "p99.99": 4} {
		x, ok := SpectrumX(stat)
		if !ok || math.Abs(x-want) > 1e-9 {
			t.Errorf("SpectrumX(%q) = %v, %v; want %v", stat, x, ok, want)
		}
	}
	for _, bad := range []string{"max", "p100", "p0", "mean", "p", "pxx"} {
		if _, ok := SpectrumX(bad); ok {
			t.Errorf("SpectrumX(%q) is ok", bad)
		}
	}
	xs, spectrum := spectrumXs([]string{"p50", "p90", "p99", "p99.9", "max"})
	if want := []float64{math.Log10(2), 1, 2, 3, 4}; !spectrum || len(xs) != 5 || math.Abs(xs[0]-want[0]) > 1e-9 || xs[1] != 1 || math.Abs(xs[3]-3) > 1e-9 || math.Abs(xs[4]-4) > 1e-9 {
		t.Errorf("spectrumXs = %v, %v; want %v, true", xs, spectrum, want)
	}
	// A plain unit or an out-of-order list falls back to categories.
	for _, names := range [][]string{{"ns/op", "p50", "p99"}, {"p99", "p50"}, {"max"}} {
		xs, spectrum := spectrumXs(names)
		if spectrum || len(xs) != len(names) || xs[len(xs)-1] != float64(len(names)-1) {
			t.Errorf("spectrumXs(%v) = %v, %v; want categories", names, xs, spectrum)
		}
	}
}

func TestKneeChart(t *testing.T) {
	s := testSeries()
	knees := make([]int, len(s))
	knees[0] = 1
	knees[len(knees)-1] = -1
	ch, err := Knee("Timer: p99 against offered wakes/s", "offered wakes/s", "µs per wake", []float64{396, 396e3, 3.96e6}[:len(s[0].Values)], s, 500, knees)
	if err != nil {
		t.Fatal(err)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "knee")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
	if _, err := Knee("x", "", "", []float64{1}, s, 1, nil); err == nil {
		t.Error("knees that do not match the series gave no error")
	}
}

// TestThroughputChart draws latency against each series' own achieved
// rates (a missing x leaves its point out), with the bound, the ceiling and
// the knees; xs that do not match a series' values are an error, and so is
// a chart with no point to place.
func TestThroughputChart(t *testing.T) {
	s := testSeries()
	var curves []Curve
	for j, se := range s {
		xs := make([]float64, len(se.Values))
		for i := range xs {
			xs[i] = float64(i+1) * 10e3 * (1 + 0.1*float64(j))
		}
		if j == 0 {
			xs[len(xs)-1] = math.NaN()
		}
		curves = append(curves, Curve{Series: se, Xs: xs, Knee: 0})
	}
	ch, err := Throughput("Echo: p99 against achieved req/s", "achieved req/s", "µs per req", curves, 500, 45e3)
	if err != nil {
		t.Fatal(err)
	}
	dir := outDir(t)
	p, v, err := ch.Save(dir, "throughput")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, p, v)
	bad := []Curve{{Series: s[0], Xs: []float64{1}}}
	if _, err := Throughput("x", "", "", bad, 1, 0); err == nil {
		t.Error("xs that do not match the values gave no error")
	}
	none := []Curve{{Series: s[0], Xs: make([]float64, len(s[0].Values))}}
	if _, err := Throughput("x", "", "", none, 1, 0); err == nil {
		t.Error("a chart without a positive x gave no error")
	}
}

// TestSweepTicksDoNotCollide: every rate of a sweep gets a tick; labels
// closer than minTickGap to the last labelled one are left out.
func TestSweepTicksDoNotCollide(t *testing.T) {
	var got []string
	for _, tk := range sweepTicks([]float64{320e3, 20e3, 40e3, 80e3, 120e3, 160e3, 200e3, 240e3}) {
		got = append(got, tk.Label)
	}
	want := []string{"20k", "40k", "80k", "120k", "160k", "", "240k", "320k"}
	if !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
}
