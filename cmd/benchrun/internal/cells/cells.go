// Package cells reads corobench results files and groups their measurements
// into cells: one scenario × row (impl) × parameter setting × unit, each
// with its samples (one per repetition) and their statistical summary.
//
// Benchmark names have the form <Scenario>/impl=<row>[/<key>=<value>...].
// Grouping uses golang.org/x/perf/benchproc projections on ".name", "/impl"
// and every other "/key" seen, so it agrees with `benchstat -col /impl`.
// Values are kept in the units the file was written in (benchfmt tidies
// "ns/switch" into "sec/switch"; this package undoes that), so a report can
// print nanoseconds as nanoseconds.
package cells

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	// The built-in scenarios and rows fill the registry the display order
	// comes from.
	_ "github.com/corobench/corobench/scenarios/bodies"
	_ "github.com/corobench/corobench/scenarios/rows"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"
)

// RowOrder lists the implementations in display order, from the scenarios
// registry (scenarios.Rows, rows registered from another module included).
// Rows not in it (a file from another build) are shown after these, in the
// order first seen.
func RowOrder() []string { return scenarios.RowNames() }

// ScenarioOrder lists the benchmark names of the scenarios in display
// order, from the scenarios registry (scenarios.All). Others follow in the
// order first seen.
func ScenarioOrder() []string { return scenarios.Benches() }

// Per-cell configuration keys: they change between result lines, so they
// are kept per cell rather than as run metadata.
var perCellKeys = []string{results.KeyGOMAXPROCS, results.KeyGCPolicy, results.KeyTimerFloor}

// Set is everything read from one or more results files.
type Set struct {
	Files     []FileMeta
	Scenarios []*Scenario // in display order
	Notes     []Note      // every failed or unsupported cell, in file order
	// Annotations are the steal marks and repetition counts of cells that
	// have figures (results.Annotation), in file order.
	Annotations []Annotation
	// Warnings are problems that leave the figures read standing (a torn
	// last line): each names the file and line. Callers show them.
	Warnings []string
	units    benchfmt.UnitMetadataMap
}

// FileMeta is one input file and the run metadata in its config lines.
type FileMeta struct {
	Path string
	Meta []KV // run-wide config keys, in file order
	// Header is the file's leading comment block without the "# " (benchrun
	// writes a title and the command line there). Empty when the file
	// cannot be re-read, e.g. it came from a reader.
	Header []string
	// Results, Failed and Unsupported count the file's result lines and
	// its failed and unsupported cell notes.
	Results, Failed, Unsupported int
	// Incomplete is why the run stopped before its last cell, "" if it
	// did not (results.File.Incomplete).
	Incomplete string
	// Config is the file-level config in force at the end of the file
	// (results.File.Config), per-cell keys included in their file form:
	// what compare checks two runs agree on.
	Config []KV
	// Torn, when not "", says the file's last line was torn (a write cut
	// short) and was left out; the cells before it are read.
	Torn string
}

// KV is one configuration key and its value.
type KV struct{ Key, Value string }

// Note is a cell that produced no figure, with where it was recorded.
type Note struct {
	results.Note
	File     string
	Scenario string
	Row      string
	Column   string // parameter setting, as in Scenario.Columns
}

// Annotation is a steal mark or repetition count of one cell (a row and
// a parameter setting; every unit of it), with where it was recorded.
type Annotation struct {
	results.Annotation
	File     string
	Scenario string
	Row      string
	Column   string // parameter setting, as in Scenario.Columns
}

// Scenario is every cell of one benchmark name.
type Scenario struct {
	Name      string
	ParamKeys []string // the /key parameters besides impl, in name order
	// Columns are the distinct parameter settings, "" when the scenario has
	// no parameters, else "key=value[/key=value]" in numeric order.
	Columns []string
	Rows    []string // rows that have results or notes, in display order
	Units   []string // units as written in the file, in first-seen order
	cells   map[cellKey]*Cell
	notes   map[cellKey]*Note        // unit ""
	annots  map[cellKey][]Annotation // unit ""
}

type cellKey struct{ row, column, unit string }

// Cell holds the samples of one scenario × row × column × unit.
type Cell struct {
	Scenario, Row, Column, Unit string
	Values                      []float64 // in Unit, in file order
	Summary                     stats.Summary
	// Config holds the distinct values of each per-cell config key
	// (gomaxprocs, gc-policy, timer-floor) seen on this cell's lines.
	Config map[string][]string
	Lines  []string // "file:line" of each sample, for tracing a figure back
}

// Cell returns the cell, or nil when there is none.
func (s *Scenario) Cell(row, column, unit string) *Cell {
	return s.cells[cellKey{row, column, unit}]
}

// Note returns the failed/unsupported note for a row and column, or nil.
func (s *Scenario) Note(row, column string) *Note {
	return s.notes[cellKey{row, column, ""}]
}

// Annotations returns the steal marks and repetition counts recorded for
// a row and column, in file order; nil when there are none.
func (s *Scenario) Annotations(row, column string) []Annotation {
	return s.annots[cellKey{row, column, ""}]
}

// Param returns the value of key in a column string, or "".
func Param(column, key string) string {
	for _, kv := range strings.Split(column, "/") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Scenario returns the scenario with this benchmark name, or nil.
func (s *Set) Scenario(name string) *Scenario {
	for _, sc := range s.Scenarios {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

// HigherIsBetter reports whether larger values of unit (as written, e.g.
// "req/s") are better: from the file's unit metadata when present, else
// true exactly for rates ("/s").
func (s *Set) HigherIsBetter(unit string) bool {
	_, tidied := benchunit.Tidy(1, unit)
	if s.units != nil {
		if md := s.units.Get(tidied, "better"); md != nil {
			return md.Value == "higher"
		}
	}
	return strings.HasSuffix(unit, "/s")
}

// Load reads the results files at paths with results.ReadChecked (the one
// reader check, report and compare share) and groups them. Samples of the
// same cell in several files are pooled. Errors from a corrupt file name
// the file and the line; a torn last line is a warning in Set.Warnings and
// FileMeta.Torn, and the cells before it are read.
func Load(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no results files given")
	}
	var files []*results.File
	var torn []*results.TornError
	for _, p := range paths {
		f, t, err := results.ReadChecked(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		torn = append(torn, t)
	}
	set, err := Group(files)
	if err != nil {
		return nil, err
	}
	for i, t := range torn {
		if t != nil {
			set.Files[i].Torn = t.Error()
			set.Warnings = append(set.Warnings, t.Error())
		}
	}
	return set, nil
}

// Group groups files already read with the results package. It reads like
// benchproc's pipeline, one function per step:
//
//  1. paramKeys finds the parameter keys besides impl in every benchmark
//     name, and whether each one's values are all numeric (then its columns
//     sort numerically, else in seen order).
//  2. newPlacer parses the benchproc projections that place a result:
//     ".name" gives its scenario, "/impl" its row, the other keys its column.
//  3. grouper.addFile puts each value of each result into its cell (one per
//     scenario × row × column × unit, in the unit as written) and records
//     each failed or unsupported note.
//  4. grouper.finish indexes the notes, sorts each scenario's columns, puts
//     its rows and the scenarios in display order, and summarises each cell.
func Group(files []*results.File) (*Set, error) {
	keys, numeric := paramKeys(files)
	place, err := newPlacer(keys, numeric)
	if err != nil {
		return nil, err
	}
	g := &grouper{set: &Set{units: benchfmt.UnitMetadataMap{}}, place: place,
		byName: map[string]*Scenario{}, colKeys: map[*Scenario][]benchproc.Key{}}
	for _, f := range files {
		if err := g.addFile(f); err != nil {
			return nil, err
		}
	}
	return g.finish(keys), nil
}

// paramKeys is step 1: the parameter keys besides impl (and gomaxprocs),
// in first-seen order, and whether every value of each is a number.
func paramKeys(files []*results.File) (keys []string, numeric map[string]bool) {
	numeric = map[string]bool{}
	see := func(name string) {
		_, parts := benchfmt.Name(name).Parts()
		for _, p := range parts {
			k, v, ok := strings.Cut(strings.TrimPrefix(string(p), "/"), "=")
			if !ok || k == "impl" || k == "gomaxprocs" {
				continue
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
				numeric[k] = true
			}
			if !isNumber(v) {
				numeric[k] = false
			}
		}
	}
	for _, f := range files {
		for _, r := range f.Results {
			see(string(r.Name))
		}
		for _, n := range f.Notes {
			see(n.Name)
		}
	}
	return keys, numeric
}

// placer is step 2: the projections that say where a result belongs.
type placer struct {
	scenario, row, col *benchproc.Projection // col is nil without parameters
}

// place is where one result belongs.
type place struct {
	scenario, row string
	col           benchproc.Key
}

func newPlacer(keys []string, numeric map[string]bool) (*placer, error) {
	var pp benchproc.ProjectionParser
	filter, _ := benchproc.NewFilter("*")
	var p placer
	var err error
	if p.scenario, err = pp.Parse(".name", filter); err != nil {
		return nil, err
	}
	if p.row, err = pp.Parse("/impl", filter); err != nil {
		return nil, err
	}
	var colExpr []string
	for _, k := range keys {
		if numeric[k] {
			colExpr = append(colExpr, "/"+k+"@num")
		} else {
			colExpr = append(colExpr, "/"+k)
		}
	}
	if len(colExpr) > 0 {
		if p.col, err = pp.Parse(strings.Join(colExpr, ","), filter); err != nil {
			return nil, fmt.Errorf("parameter keys %v: %w", keys, err)
		}
	}
	return &p, nil
}

func (p *placer) locate(r *benchfmt.Result) place {
	l := place{scenario: p.scenario.Project(r).Get(p.scenario.Fields()[0]), row: p.row.Project(r).Get(p.row.Fields()[0])}
	if p.col != nil {
		l.col = p.col.Project(r)
	}
	return l
}

// column renders a column key as "key=value[/key=value]", "" for none.
func (p *placer) column(k benchproc.Key) string {
	if k.IsZero() {
		return ""
	}
	var parts []string
	for _, f := range p.col.Fields() {
		if v := k.Get(f); v != "" {
			parts = append(parts, f.Name[1:]+"="+v)
		}
	}
	return strings.Join(parts, "/")
}

// grouper carries steps 3 and 4.
type grouper struct {
	set     *Set
	place   *placer
	byName  map[string]*Scenario
	colKeys map[*Scenario][]benchproc.Key
	order   []string // scenario names in first-seen order
}

// scenario returns the scenario a result or note at l belongs to, creating
// it, and notes l's row and column as seen.
func (g *grouper) scenario(l place) *Scenario {
	sc := g.byName[l.scenario]
	if sc == nil {
		sc = &Scenario{Name: l.scenario, cells: map[cellKey]*Cell{}, notes: map[cellKey]*Note{}, annots: map[cellKey][]Annotation{}}
		g.byName[l.scenario] = sc
		g.order = append(g.order, l.scenario)
	}
	if !slices.Contains(sc.Rows, l.row) {
		sc.Rows = append(sc.Rows, l.row)
	}
	if !l.col.IsZero() && !slices.Contains(g.colKeys[sc], l.col) {
		g.colKeys[sc] = append(g.colKeys[sc], l.col)
	}
	return sc
}

// addFile is step 3 for one file.
func (g *grouper) addFile(f *results.File) error {
	fm := FileMeta{Path: f.Path, Meta: fileMeta(f), Header: header(f.Path), Results: len(f.Results), Incomplete: f.Incomplete}
	for _, c := range f.Config {
		if c.File {
			fm.Config = append(fm.Config, KV{c.Key, string(c.Value)})
		}
	}
	for _, n := range f.Notes {
		if n.Kind == results.NoteFailed {
			fm.Failed++
		} else {
			fm.Unsupported++
		}
	}
	g.set.Files = append(g.set.Files, fm)
	for k, v := range f.Units {
		g.set.units[k] = v
	}
	for _, r := range f.Results {
		if err := g.addResult(r); err != nil {
			return err
		}
	}
	for _, n := range f.Notes {
		l := g.place.locate(&benchfmt.Result{Name: benchfmt.Name(n.Name)})
		if l.row == "" {
			return fmt.Errorf("%s:%d: note for %q has no /impl=<row> part", f.Path, n.Line, n.Name)
		}
		sc := g.scenario(l)
		g.set.Notes = append(g.set.Notes, Note{Note: n, File: f.Path, Scenario: sc.Name, Row: l.row, Column: g.place.column(l.col)})
	}
	for _, a := range f.Annotations {
		l := g.place.locate(&benchfmt.Result{Name: benchfmt.Name(a.Name)})
		if l.row == "" {
			return fmt.Errorf("%s:%d: %s line for %q has no /impl=<row> part", f.Path, a.Line, a.Kind, a.Name)
		}
		sc := g.scenario(l)
		an := Annotation{Annotation: a, File: f.Path, Scenario: sc.Name, Row: l.row, Column: g.place.column(l.col)}
		g.set.Annotations = append(g.set.Annotations, an)
		k := cellKey{an.Row, an.Column, ""}
		sc.annots[k] = append(sc.annots[k], an)
	}
	return nil
}

// addResult puts each value of r into its cell, in the unit as written
// (benchfmt's tidied unit is undone), with the per-cell config it ran under.
func (g *grouper) addResult(r *benchfmt.Result) error {
	l := g.place.locate(r)
	file, line := r.Pos()
	if l.row == "" {
		return fmt.Errorf("%s:%d: benchmark %q has no /impl=<row> part; corobench names are <Scenario>/impl=<row>[/<key>=<value>]", file, line, r.Name)
	}
	sc := g.scenario(l)
	col := g.place.column(l.col)
	for _, v := range r.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		key := cellKey{l.row, col, unit}
		c := sc.cells[key]
		if c == nil {
			c = &Cell{Scenario: sc.Name, Row: l.row, Column: col, Unit: unit, Config: map[string][]string{}}
			sc.cells[key] = c
			if !slices.Contains(sc.Units, unit) {
				sc.Units = append(sc.Units, unit)
			}
		}
		c.Values = append(c.Values, val)
		c.Lines = append(c.Lines, fmt.Sprintf("%s:%d", file, line))
		for _, k := range perCellKeys {
			if cv := forRow(r.GetConfig(k), l.row); cv != "" && !slices.Contains(c.Config[k], cv) {
				c.Config[k] = append(c.Config[k], cv)
			}
		}
	}
	return nil
}

// finish is step 4.
func (g *grouper) finish(keys []string) *Set {
	// Index the notes only now: set.Notes was reallocated while growing.
	for i := range g.set.Notes {
		n := &g.set.Notes[i]
		g.byName[n.Scenario].notes[cellKey{n.Row, n.Column, ""}] = n
	}
	rowOrder := RowOrder()
	for _, sc := range g.byName {
		ks := g.colKeys[sc]
		benchproc.SortKeys(ks)
		for _, k := range ks {
			sc.Columns = append(sc.Columns, g.place.column(k))
		}
		if len(ks) == 0 {
			sc.Columns = []string{""}
		}
		for _, k := range keys {
			for _, c := range sc.Columns {
				if Param(c, k) != "" && !slices.Contains(sc.ParamKeys, k) {
					sc.ParamKeys = append(sc.ParamKeys, k)
				}
			}
		}
		sc.Rows = DisplayOrder(sc.Rows, rowOrder)
		for _, c := range sc.cells {
			c.Summary = stats.Summarize(c.Values)
		}
	}
	for _, name := range DisplayOrder(g.order, ScenarioOrder()) {
		g.set.Scenarios = append(g.set.Scenarios, g.byName[name])
	}
	return g.set
}

// DisplayOrder returns seen sorted with the members of known first, in
// known's order, then the others in seen order.
func DisplayOrder(seen, known []string) []string {
	var out []string
	for _, k := range known {
		if slices.Contains(seen, k) {
			out = append(out, k)
		}
	}
	for _, s := range seen {
		if !slices.Contains(known, s) {
			out = append(out, s)
		}
	}
	return out
}

// forRow resolves a per-row config value. benchrun writes some per-row
// keys once for the whole run as "row=value; row=value" (e.g. "gomaxprocs:
// stackful-asm=1; goroutine-multi=2"); such a value yields the part for
// row. Any other value (one config line per cell) is returned as is.
func forRow(value, row string) string {
	parts := strings.Split(value, "; ")
	perRow := map[string]string{}
	for _, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.ContainsAny(k, " \t") || !(slices.Contains(RowOrder(), k) || k == row) {
			return value // not a row=value list
		}
		perRow[k] = v
	}
	if v, ok := perRow[row]; ok {
		return v
	}
	return ""
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

var configLine = regexp.MustCompile(`^([^\s:A-Z][^\s:]*):\s+(.*)$`)

// fileMeta returns the run-wide configuration of a file: every config key
// whose value is the same on all its results, minus the per-cell keys. A
// file with notes but no results has no result configs to read, so its
// "key: value" lines are read directly.
func fileMeta(f *results.File) []KV {
	var out []KV
	if len(f.Results) == 0 {
		return scanConfig(f.Path)
	}
	for _, c := range f.Results[0].Config {
		if slices.Contains(perCellKeys, c.Key) || !c.File {
			continue
		}
		same := true
		for _, r := range f.Results[1:] {
			if r.GetConfig(c.Key) != string(c.Value) {
				same = false
				break
			}
		}
		if same {
			out = append(out, KV{c.Key, string(c.Value)})
		}
	}
	return out
}

// header returns the comment lines at the top of the file at path.
func header(path string) []string {
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") || strings.HasPrefix(line, "# corobench:") {
			break
		}
		out = append(out, strings.TrimSpace(strings.TrimPrefix(line, "#")))
	}
	return out
}

func scanConfig(path string) []KV {
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out []KV
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		m := configLine.FindStringSubmatch(sc.Text())
		if m == nil || slices.Contains(perCellKeys, m[1]) {
			continue
		}
		out = append(out, KV{m[1], m[2]})
	}
	return out
}
