// Package report turns corobench results files into a self-contained HTML
// report: run metadata and measurement policy at the top, every failed or
// unsupported cell, the reference design's claims (docs/design.md §1) with measured figures and
// verdicts,
// quoted published anchors, the lines each scenario's blocking and
// state-machine bodies take (function colouring), then per scenario a table of rows × parameters
// (median ± 95% CI, ratios to goroutine-single and stackful-asm, CV and
// sample-count flags) with its charts as PNG and SVG beside the page. A
// scenario with a load sweep (scenarios.LoadSweep: Timer, Echo) also gets
// each row's knee, ranked, and every latency taken above a row's knee is
// labelled "above saturation", in its table and in the headline (knee.go).
//
// The page references nothing outside its directory: no CDN, no web fonts,
// no scripts. It is written as well-formed XHTML-style HTML5 (every element
// closed) so tools can check it with an XML parser.
package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/claims"
	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/scenarios"
)

// Baselines are the rows every other row is compared with in the tables.
var Baselines = []string{"goroutine-single", "stackful-asm"}

// Build reads the results files, writes outDir/index.html with its charts
// (<scenario>-<unit>-<kind>.png and .svg) beside it, copies each results
// file into outDir (unless it is already there) for the page to link to,
// and returns the path of index.html. Samples of the same cell in several
// files are pooled (a run split over files); each file's metadata is shown
// separately. outDir is created if needed; files of the same names in it
// are overwritten. A corrupt or truncated results file is an error naming
// the file and line, and no page is written.
//
// benchrun calls it at the end of a run as
// Build([]string{"results/<runstamp>.txt"}, "reports/<runstamp>"), and for
// `benchrun report FILE...` with the files given.
func Build(files []string, outDir string) (indexHTML string, err error) {
	indexHTML, _, err = BuildWarn(files, outDir)
	return indexHTML, err
}

// BuildWarn is Build that also returns the reader's warnings (a torn last
// line: the cells before it are reported), for the caller to print; the
// page shows them at its top too.
func BuildWarn(files []string, outDir string) (indexHTML string, warnings []string, err error) {
	set, err := cells.Load(files...)
	if err != nil {
		return "", nil, err
	}
	indexHTML, err = build(set, files, outDir)
	return indexHTML, set.Warnings, err
}

func build(set *cells.Set, files []string, outDir string) (indexHTML string, err error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	raws, err := copyRaw(files, outDir)
	if err != nil {
		return "", err
	}
	page, err := buildPage(set, raws, outDir)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := pageTemplate().Execute(&buf, page); err != nil {
		return "", fmt.Errorf("rendering the report: %w", err)
	}
	indexHTML = filepath.Join(outDir, "index.html")
	if err := os.WriteFile(indexHTML, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return indexHTML, nil
}

// rawFile is a results file as linked from the page.
type rawFile struct {
	Href     string // relative to the page
	Original string // the path it was read from
}

// copyRaw copies each results file into outDir so the report stays whole
// when the directory is moved; a file already in outDir is linked in place.
func copyRaw(files []string, outDir string) ([]rawFile, error) {
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	var out []rawFile
	used := map[string]bool{}
	for i, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		if filepath.Dir(abs) == absOut {
			out = append(out, rawFile{Href: filepath.Base(abs), Original: f})
			used[filepath.Base(abs)] = true
			continue
		}
		name := filepath.Base(abs)
		if used[name] || name == "index.html" {
			name = strconv.Itoa(i+1) + "-" + name
		}
		used[name] = true
		if err := copyFile(abs, filepath.Join(outDir, name)); err != nil {
			return nil, err
		}
		out = append(out, rawFile{Href: name, Original: f})
	}
	return out, nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// ---- the page model ----

type page struct {
	Title string
	// Alerts head the page: a run that stopped before its last cell, a
	// results file whose torn last line was left out.
	Alerts    []string
	Headline  headlineView
	Files     []fileView
	Policy    policyView
	Notes     []cells.Note
	Claims    []claims.Result
	Anchors   []anchorTopic
	Colouring colouringView
	Noise     noiseView
	Scenarios []scenarioView
	Stats     statsView
}

type fileView struct {
	Raw    rawFile
	Meta   []cells.KV
	Header []string
}

type statsView struct {
	Confidence, Alpha, MaxCV float64
	MinSamples               int
}

type policyView struct {
	GCPolicies  []keyCells // gc-policy value → where
	GOMAXPROCS  []keyCells // row → values
	TimerFloors []keyCells // scenario/row → values
}

// keyCells is one line of the policy section: a label and its values.
type keyCells struct{ Key, Value string }

type anchorTopic struct {
	Topic   string
	Anchors []claims.Anchor
}

type scenarioView struct {
	Name, ID, About string
	Pool            string    // a pool scenario's rows against the thread hand-off floor (poolNote)
	Knee            *kneeView // a load sweep's knees, nil for other scenarios
	Tables          []tableView
	Charts          []chartView
}

type tableView struct {
	Unit, Label string // "ns/switch", "ns per switch"
	Higher      bool   // higher is better
	Columns     []string
	Rows        []rowView
}

type rowView struct {
	Row   string
	Cells []cellView
}

type cellView struct {
	Kind    string // "fig", "failed", "unsupported", "absent"
	Median  string
	CI      string
	Title   string
	Ratios  []string
	Detail  string // n and CV
	Flags   []string
	Noisy   bool   // CV over stats.MaxCV: the cell is marked
	Reps    string // how many repetitions and why they stopped ("18 reps: cap reached, CV over target")
	Floor   string // a latency against the OS timer floor ("×3.2 OS floor p50 (15.1µs)")
	Wake    string // a pool row's time per operation against the thread hand-off floor ("×1.9 thread hand-off floor p50 (34.0 µs)")
	Reason  string
	Missing bool
}

type chartView struct {
	Caption  string
	PNG, SVG string
	Alt      string
}

// about is the description shown under a scenario's heading, from the
// scenarios registry; "" for a scenario this build does not define.
func about(bench string) string {
	if s, ok := scenarios.LookupBench(bench); ok {
		return s.Summary
	}
	return ""
}

// latency reports whether a scenario's figures are latency distributions,
// which get a percentile chart besides their bar charts.
func latency(bench string) bool {
	s, ok := scenarios.LookupBench(bench)
	return ok && s.Latency
}

// rowColour gives each row of the registry the same colour in every chart.
func rowColour(row string) ([3]uint8, bool) {
	d, ok := scenarios.Row(row).Def()
	return d.Colour, ok && d.Colour != [3]uint8{}
}

// extraColors colour rows the registry does not know (a file from another
// build), in the order first seen.
var extraColors = [][3]uint8{{140, 86, 75}, {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}}

func buildPage(set *cells.Set, raws []rawFile, outDir string) (*page, error) {
	p := &page{
		Title:  "corobench report",
		Notes:  set.Notes,
		Claims: claims.Evaluate(set),
		Stats:  statsView{100 * stats.Confidence, stats.Alpha, 100 * stats.MaxCV, stats.MinSamples},
	}
	for i, f := range set.Files {
		if f.Incomplete != "" {
			p.Alerts = append(p.Alerts, fmt.Sprintf("Incomplete run: %s (%s). The figures below are the cells that finished; the cells it did not reach are missing from every table.", f.Incomplete, f.Path))
		}
		if f.Torn != "" {
			p.Alerts = append(p.Alerts, "Torn results file: "+f.Torn+". That line is left out; the cells before it are reported.")
		}
		p.Files = append(p.Files, fileView{Raw: raws[i], Meta: f.Meta, Header: f.Header})
		for _, kv := range f.Meta {
			if kv.Key == "runstamp" && i == 0 {
				p.Title = "corobench report: " + kv.Value
			}
		}
	}
	p.Policy = policy(set)
	p.Headline = headline(set)
	for _, a := range claims.Anchors {
		if n := len(p.Anchors); n == 0 || p.Anchors[n-1].Topic != a.Topic {
			p.Anchors = append(p.Anchors, anchorTopic{Topic: a.Topic})
		}
		p.Anchors[len(p.Anchors)-1].Anchors = append(p.Anchors[len(p.Anchors)-1].Anchors, a)
	}
	p.Colouring = colouring(set)
	p.Noise = noise(set)
	colors := colorMap(set)
	for _, sc := range set.Scenarios {
		sv := scenarioView{Name: sc.Name, ID: "s-" + slug(sc.Name), About: about(sc.Name), Pool: poolNote(sc, &p.Noise)}
		sw := sweepOf(set, sc)
		sv.Knee = sw.view(sc)
		if len(sc.Units) == 0 { // every cell failed or is unsupported
			sv.Tables = append(sv.Tables, table(set, sc, "", &p.Noise, sw))
		}
		for _, unit := range sc.Units {
			sv.Tables = append(sv.Tables, table(set, sc, unit, &p.Noise, sw))
			if sw.chartedElsewhere(unit) {
				continue // the knee, throughput and spectrum charts show it
			}
			charts, err := unitCharts(sc, unit, colors, outDir)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", sc.Name, unit, err)
			}
			sv.Charts = append(sv.Charts, charts...)
		}
		if latency(sc.Name) {
			charts, err := percentileCharts(sc, sw, colors, outDir)
			if err != nil {
				return nil, fmt.Errorf("%s percentiles: %w", sc.Name, err)
			}
			sv.Charts = append(sv.Charts, charts...)
		}
		knee, err := kneeChart(sc, sw, colors, outDir)
		if err != nil {
			return nil, fmt.Errorf("%s knee: %w", sc.Name, err)
		}
		sv.Charts = append(sv.Charts, knee...)
		p.Scenarios = append(p.Scenarios, sv)
	}
	return p, nil
}

// policy builds the measurement-policy section in three steps, each a
// walk over the run's cells (eachCell):
//
//  1. gcPolicies: each GC policy in use and where (the run-wide config
//     line, then any cell that ran under another);
//  2. gomaxprocsByRow: the GOMAXPROCS each row ran with;
//  3. timerFloors: each row's timer floor, one line per row when it is the
//     same in every scenario (the usual case: it is a property of the row's
//     clock and wait), else one per scenario and row.
func policy(set *cells.Set) policyView {
	return policyView{
		GCPolicies:  gcPolicies(set),
		GOMAXPROCS:  gomaxprocsByRow(set),
		TimerFloors: timerFloors(set),
	}
}

// eachCell calls fn for every cell of set: scenario by scenario, row by
// row in display order, column by column, unit by unit.
func eachCell(set *cells.Set, fn func(sc *cells.Scenario, row string, c *cells.Cell)) {
	for _, sc := range set.Scenarios {
		for _, row := range sc.Rows {
			for _, col := range sc.Columns {
				for _, unit := range sc.Units {
					if c := sc.Cell(row, col, unit); c != nil {
						fn(sc, row, c)
					}
				}
			}
		}
	}
}

// gcPolicies is step 1.
func gcPolicies(set *cells.Set) []keyCells {
	where := map[string][]string{}
	var order []string
	add := func(policy, place string) {
		if _, ok := where[policy]; !ok {
			order = append(order, policy)
		}
		where[policy] = appendNew(where[policy], place)
	}
	for _, f := range set.Files {
		for _, kv := range f.Meta {
			if kv.Key == "gc-policy" { // written once for the whole run
				add(kv.Value, "all cells")
			}
		}
	}
	eachCell(set, func(sc *cells.Scenario, row string, c *cells.Cell) {
		for _, v := range c.Config["gc-policy"] {
			add(v, sc.Name+"/"+row)
		}
	})
	var out []keyCells
	for _, v := range order {
		places := where[v]
		if len(order) == 1 {
			places = []string{"every cell"}
		}
		if len(places) > 6 {
			places = append(places[:6:6], fmt.Sprintf("and %d more", len(where[v])-6))
		}
		out = append(out, keyCells{v, strings.Join(places, ", ")})
	}
	return out
}

// gomaxprocsByRow is step 2.
func gomaxprocsByRow(set *cells.Set) []keyCells {
	byRow := map[string][]string{}
	eachCell(set, func(_ *cells.Scenario, row string, c *cells.Cell) {
		for _, v := range c.Config["gomaxprocs"] {
			byRow[row] = appendNew(byRow[row], v)
		}
	})
	var out []keyCells
	for _, r := range displayRows(mapKeys(byRow)) {
		out = append(out, keyCells{r, strings.Join(byRow[r], ", ")})
	}
	return out
}

// timerFloors is step 3.
func timerFloors(set *cells.Set) []keyCells {
	type floors struct {
		scenario string
		values   []string
	}
	byRow := map[string][]floors{} // row → its floors, scenario by scenario
	eachCell(set, func(sc *cells.Scenario, row string, c *cells.Cell) {
		fs := byRow[row]
		if len(fs) == 0 || fs[len(fs)-1].scenario != sc.Name {
			fs = append(fs, floors{scenario: sc.Name})
		}
		last := &fs[len(fs)-1]
		for _, v := range c.Config["timer-floor"] {
			last.values = appendNew(last.values, v)
		}
		byRow[row] = fs
	})
	var out []keyCells
	for _, r := range displayRows(mapKeys(byRow)) {
		var lines []keyCells
		for _, f := range byRow[r] {
			if len(f.values) > 0 {
				lines = append(lines, keyCells{f.scenario, strings.Join(f.values, "; ")})
			}
		}
		if len(lines) == 0 {
			continue
		}
		if !slices.ContainsFunc(lines, func(k keyCells) bool { return k.Value != lines[0].Value }) {
			out = append(out, keyCells{r, lines[0].Value})
			continue
		}
		for _, k := range lines {
			out = append(out, keyCells{k.Key + " / " + r, k.Value})
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func displayRows(rows []string) []string {
	return cells.DisplayOrder(rows, cells.RowOrder())
}

func table(set *cells.Set, sc *cells.Scenario, unit string, nv *noiseView, sw *sweep) tableView {
	u := units.Parse(unit)
	tv := tableView{Unit: unit, Higher: set.HigherIsBetter(unit), Columns: sc.Columns}
	switch u.Kind {
	case units.Time:
		tv.Label = u.Label(units.Scale{Symbol: "time"})
	case units.Bytes:
		tv.Label = u.Label(units.Scale{Symbol: "bytes"})
	default:
		tv.Label = unit
	}
	bench, _ := scenarios.LookupBench(sc.Name)
	for _, row := range sc.Rows {
		rv := rowView{Row: row}
		pool := bench != nil && scenarios.Row(row).PoolCell(bench)
		for i, col := range sc.Columns {
			cv := cellFor(sc, row, col, unit, nv)
			if cv.Kind == "fig" && sw.aboveKnee(row, i, unit) {
				cv.Flags = append(cv.Flags, overloadFlag)
			}
			if cv.Kind == "fig" {
				achievedText(&cv, sc.Cell(row, col, unit), sw, row, i)
				if pool {
					cv.Wake = wakeFloorText(unit, sc.Cell(row, col, unit).Summary.Median, nv)
				}
			}
			rv.Cells = append(rv.Cells, cv)
		}
		tv.Rows = append(tv.Rows, rv)
	}
	return tv
}

func cellFor(sc *cells.Scenario, row, col, unit string, nv *noiseView) cellView {
	c := sc.Cell(row, col, unit)
	if c == nil {
		if n := sc.Note(row, col); n != nil {
			return cellView{Kind: n.Kind, Reason: n.Reason}
		}
		return cellView{Kind: "absent", Missing: true}
	}
	s := c.Summary
	scale := units.Parse(unit).ScaleFor(s.Median)
	cv := cellView{Kind: "fig", Median: scale.Format(s.Median), CI: ciText(s), Flags: s.Flags(), Noisy: s.Noisy}
	cv.Floor = floorText(unit, s.Median, nv)
	cv.Detail = fmt.Sprintf("n=%d", s.N)
	if !math.IsNaN(s.CV) {
		cv.Detail += fmt.Sprintf(" · CV %.1f%%", 100*s.CV)
	}
	ciRange := "none (too few samples)"
	if !math.IsInf(s.CIPercent(), 0) {
		ciRange = fmt.Sprintf("[%s, %s] at %.1f%% confidence", scale.Format(s.Lo), scale.Format(s.Hi), 100*s.Confidence)
	}
	spread := ""
	if s.N >= 4 {
		// The middle half of the runs: how much a rerun may move.
		q1, err1 := stats.Percentile(c.Values, 25)
		q3, err3 := stats.Percentile(c.Values, 75)
		if err1 == nil && err3 == nil {
			spread = fmt.Sprintf("; middle half of runs (p25–p75) %s–%s", scale.Format(q1), scale.Format(q3))
		}
	}
	cv.Title = fmt.Sprintf("median %s; 95%% CI %s; min %s, max %s%s; samples from %s", scale.Format(s.Median), ciRange, scale.Format(s.Min), scale.Format(s.Max), spread, c.Lines[0])
	for _, base := range Baselines {
		if base == row {
			continue
		}
		b := sc.Cell(base, col, unit)
		if b == nil || b.Summary.Median == 0 {
			continue
		}
		ratio := s.Median / b.Summary.Median
		text := fmt.Sprintf("×%s vs %s", ratioText(ratio), base)
		if cmp := stats.Compare(b.Values, c.Values); !cmp.Significant {
			text += " (~)"
		}
		cv.Ratios = append(cv.Ratios, text)
	}
	cellNoise(&cv, sc.Annotations(row, col))
	return cv
}

func ciText(s stats.Summary) string {
	pct := s.CIPercent()
	if math.IsInf(pct, 0) {
		return "±∞"
	}
	if pct == 0 {
		return "±0%"
	}
	if pct < 0.01 {
		return fmt.Sprintf("±%.1f%%", 100*pct)
	}
	return fmt.Sprintf("±%.0f%%", 100*pct)
}

func ratioText(r float64) string {
	switch {
	case r >= 100:
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64)
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	case r >= 0.1:
		return strconv.FormatFloat(r, 'f', 2, 64)
	}
	return strconv.FormatFloat(r, 'g', 2, 64)
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
}
