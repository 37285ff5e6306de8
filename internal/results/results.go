// Package results defines corobench's results file: the Go benchmark format
// (golang.org/x/perf/benchfmt) plus two kinds of comment line for cells that
// produced no figure.
//
// A results file is what `benchrun` writes to results/<runstamp>.txt and what
// `benchrun report` and `benchrun compare` read back. It is plain benchfmt, so
// `benchstat -col /impl FILE` compares rows directly:
//
//	goos: linux
//	goarch: amd64
//	cpu: Intel(R) Xeon(R) Processor @ 2.80GHz
//	...
//	gomaxprocs: 1
//	BenchmarkPingPong/impl=goroutine-single 2000000 152.3 ns/switch 0 allocs/switch
//	gomaxprocs: 2
//	BenchmarkPingPong/impl=goroutine-multi 1000000 301.9 ns/switch 0 allocs/switch
//	# corobench:unsupported BenchmarkPingPong/impl=stackful-asm: not supported: toolchain go1.27 is not gated
//	# corobench:failed BenchmarkPingPong/impl=stackless: timed out after 1m0s
//
// Invariants kept by this package:
//   - config keys are lower-case without spaces (benchstat silently drops
//     others), so "gomaxprocs", never "GOMAXPROCS";
//   - no name component ends in -<digits>, which benchfmt would read as a
//     GOMAXPROCS suffix (CheckName enforces it);
//   - a cell's notes (failed / unsupported), and the mark of a run that
//     stopped early ("# corobench:incomplete <why>"), are comment lines that
//     benchfmt ignores, so the file stays valid benchfmt whatever happened;
//   - the run's config lines come before its first cell, so a run in which
//     every cell failed still says which machine it ran on;
//   - the Writer writes whole records and cuts a failed one off, so a full
//     disk never tears a line; a file torn some other way reads back up to
//     its last whole line, with a *TornError saying so.
package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchfmt"
)

// Config keys written at the top of every results file. Every result line
// shares them; gomaxprocs and timer-floor hold one entry per row
// (FormatPerRow).
const (
	KeyGOOS       = "goos"
	KeyGOARCH     = "goarch"
	KeyCPU        = "cpu"
	KeyKernel     = "kernel"
	KeyGoVersion  = "go-version"
	KeyNumCPU     = "num-cpu"
	KeyCommit     = "commit"
	KeyRunstamp   = "runstamp"
	KeyVersion    = "corobench-version"
	KeyGOMAXPROCS = "gomaxprocs"
	KeyGCPolicy   = "gc-policy"
	KeyTimerFloor = "timer-floor"
	KeyBenchtime  = "benchtime"
	// KeyRuntimeEnv records the Go runtime variables every row's children
	// ran with (GOGC, GOMEMLIMIT, GOTRACEBACK…); KeyGODEBUG the GODEBUG
	// of each row's children (per row); KeyBuild how the binary was built
	// (GOAMD64, GOEXPERIMENT, -race, DefaultGODEBUG…).
	KeyRuntimeEnv = "runtime-env"
	KeyGODEBUG    = "godebug"
	KeyBuild      = "build"
	// KeyCPUPin records, per row, the CPU its single-P cells were pinned
	// to ("cpu1"), or why not ("unpinned": a multi-P row; "off": the run
	// was asked not to pin); KeyTimerFloorOS the machine's own timer floor
	// (the lateness of a short sleep on a plain thread, and the CPU time
	// each sleep costs that thread), measured once at
	// the start of the run; KeyThreadWakeFloorOS the machine's thread
	// hand-off floor (the round trip of two OS threads on two CPUs waking
	// each other through a futex, as a thread pool's submitter and worker
	// do), measured once after it, or "not measured: <why>".
	KeyCPUPin            = "cpu-pin"
	KeyTimerFloorOS      = "timer-floor-os"
	KeyThreadWakeFloorOS = "thread-wake-floor-os"
	// KeyCPUIdle records how the machine's idle CPUs wait (the cpuidle
	// driver, governor and states, a guest's halt polling) and whether
	// the kernel runs under a hypervisor: on a guest whose idle vCPUs
	// halt to the host, every wake from idle is a round trip through it,
	// which the timer and thread hand-off floors show.
	KeyCPUIdle = "cpuidle"
	// KeyCoreProbe records, when the core probe is on, the unshared
	// core's ratio of its throughput-bound loop to its latency-bound one
	// (the 2nd percentile of the readings on the cells' CPU at the start
	// of the run), how widely the unshared readings spread, and the limit
	// above which a run's core counts as shared; without the mark, that
	// the probe only records.
	KeyCoreProbe = "core-probe"
	// KeyThreadPool records the thread-pool size of the cells that run
	// their work on the runtime's pool (offload, fileio) and the
	// gomaxprocs they ran with; KeyIOUring whether the kernel offered
	// io_uring at the start of the run, and that it is not used.
	KeyThreadPool = "thread-pool"
	KeyIOUring    = "io-uring"
	// KeyLoadgenCeiling records the echo load generator's own ceiling
	// against a trivial server, measured once per run that has echo
	// cells: "<Bench> <setting>: <rate> req/s (how)".
	KeyLoadgenCeiling = "loadgen-ceiling"
)

// FormatPerRow renders a per-row fact as one config value, rows in the
// given order: "stackful-asm=1; goroutine-multi=2". Per-row facts share one
// line because benchstat splits tables by config: a line that changed
// between rows would split the rows apart.
func FormatPerRow(rows []string, values map[string]string) string {
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		if v, ok := values[r]; ok {
			parts = append(parts, r+"="+v)
		}
	}
	return strings.Join(parts, "; ")
}

// ParsePerRow is the inverse of FormatPerRow.
func ParsePerRow(value string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(value, "; ") {
		if r, v, ok := strings.Cut(part, "="); ok {
			out[r] = v
		}
	}
	return out
}

// Note kinds: the status of a cell that has no result line.
const (
	NoteFailed      = "failed"
	NoteUnsupported = "unsupported"
)

const notePrefix = "# corobench:"

// Note records a cell that produced no figure: it failed (crash, timeout,
// checksum mismatch) or its row does not support the scenario.
type Note struct {
	Kind   string // NoteFailed or NoteUnsupported
	Name   string // the benchmark name without the "Benchmark" prefix
	Reason string // one line
	Line   int    // line number in the file it was read from, 1-based
}

// Annotation kinds: facts about a cell that has figures, written as comment
// lines benchstat skips. They are not Notes: a Note is a cell without a
// figure, and readers count Notes as such.
const (
	// AnnotSteal marks one repetition of a cell taken while the hypervisor
	// stole more than a stated share of the CPU time (/proc/stat steal).
	AnnotSteal = "steal"
	// AnnotReps says how many repetitions a cell got and why it stopped
	// there (its CV reached the target, the cap, the time budget), and
	// how many of them were disturbed and not counted.
	AnnotReps = "reps"
	// AnnotDisturbed records one repetition whose process was disturbed
	// by the rest of the machine (most of its timed runs waited on a
	// runqueue): its figure is on the line, and it has no result line,
	// so no reader counts it as a sample of the cell. When a cell ends
	// with fewer than two undisturbed figures the harness writes the
	// disturbed ones as result lines after all, and says so in an
	// AnnotDisturbed line whose text starts with DisturbedKept.
	AnnotDisturbed = "disturbed"
)

// DisturbedKept starts the text of the AnnotDisturbed line that says a
// cell's disturbed figures were written as result lines.
const DisturbedKept = "kept:"

// CrossSlowMode names the reason in the text of an AnnotDisturbed line
// whose repetition was left out because the round trip of a cache line
// between the CPUs of a multi-P cell read the host's slow mode before or
// after its process (the run log has the probes of every multi-P
// repetition). A line without it was disturbed by a runqueue wait.
const CrossSlowMode = "cross-cpu slow mode"

// SharedCoreRuns is the phrase a disturbed line's text has when some of
// its timed runs were marked for a shared core (--core-mark): "; k on a
// shared core (core probe over the limit …)". A line without it was
// disturbed by a runqueue wait only.
const SharedCoreRuns = "on a shared core"

// Annotation is a comment line about a cell that has result lines.
type Annotation struct {
	Kind string // AnnotSteal, AnnotReps or AnnotDisturbed
	Name string // the benchmark name without the "Benchmark" prefix
	Text string // one line
	Line int    // line number in the file it was read from, 1-based
}

// FormatAnnotation renders a as the comment line written to a results file.
func FormatAnnotation(a Annotation) string {
	return fmt.Sprintf("%s%s Benchmark%s: %s\n", notePrefix, a.Kind, a.Name, strings.Join(strings.Fields(a.Text), " "))
}

var annotRE = regexp.MustCompile(`^# corobench:(steal|reps|disturbed) Benchmark(\S+): (.*)$`)

// ParseAnnotation reports whether line is an annotation and, if so,
// returns it.
func ParseAnnotation(line string) (Annotation, bool) {
	m := annotRE.FindStringSubmatch(line)
	if m == nil {
		return Annotation{}, false
	}
	return Annotation{Kind: m[1], Name: m[2], Text: m[3]}, true
}

// FormatNote renders n as the comment line written to a results file.
// Newlines in the reason are folded so the note stays on one line.
func FormatNote(n Note) string {
	reason := strings.Join(strings.Fields(n.Reason), " ")
	return fmt.Sprintf("%s%s Benchmark%s: %s\n", notePrefix, n.Kind, n.Name, reason)
}

var noteRE = regexp.MustCompile(`^# corobench:(failed|unsupported) Benchmark(\S+): (.*)$`)

// ParseNote reports whether line is a note and, if so, returns it.
func ParseNote(line string) (Note, bool) {
	m := noteRE.FindStringSubmatch(line)
	if m == nil {
		return Note{}, false
	}
	return Note{Kind: m[1], Name: m[2], Reason: m[3]}, true
}

var gomaxprocsSuffix = regexp.MustCompile(`-[0-9]+$`)

// CheckName reports an error if a benchmark name (without "Benchmark") or
// any of its /key=value parts ends in -<digits>, which benchfmt would take for
// a GOMAXPROCS suffix, or contains white space.
func CheckName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return fmt.Errorf("benchmark name %q is empty or contains white space", name)
	}
	for _, part := range strings.Split(name, "/") {
		if gomaxprocsSuffix.MatchString(part) {
			return fmt.Errorf("benchmark name part %q ends in -<digits>, which benchfmt reads as a GOMAXPROCS suffix; rename it", part)
		}
	}
	return nil
}

// File is a results file read back: its results in order, its notes, and
// whether the run that wrote it ended before its last cell.
type File struct {
	Path    string
	Results []*benchfmt.Result
	Notes   []Note
	// Annotations are the steal marks and repetition counts of cells
	// that have figures, in file order.
	Annotations []Annotation
	Units       benchfmt.UnitMetadataMap
	// Incomplete is the reason the run stopped early ("interrupted by
	// SIGINT after 12 of 200 cells"), or "" when it ran every cell.
	Incomplete string
	// Config is the file config in force after the last line: in a file
	// benchrun wrote, the run's machine metadata, there even when no cell
	// gave a figure.
	Config []benchfmt.Config
}

// TornError is what Read returns for a file whose last line has no newline:
// a write was cut short (a full disk, a killed writer). Read returns it
// together with the File of every whole line before it, so a caller may
// warn and go on with the cells that are intact, or reject the file.
type TornError struct {
	Name string
	Line int    // 1-based number of the torn line
	Text string // the torn line, possibly shortened
	Kept int    // results and notes read before it
}

func (e *TornError) Error() string {
	return fmt.Sprintf("%s:%d: file is truncated: the last line has no newline (%q), a write was cut short (a full disk or a killed writer); the %d cells before it are intact",
		e.Name, e.Line, e.Text, e.Kept)
}

// ReadFile reads a results file. A malformed benchmark line, a malformed
// note, or a file with neither results nor notes is an error naming the file
// and the line, so a corrupt file is never reported as a run. A torn last
// line is a *TornError returned with the cells before it (see Read).
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a results file from r; name is used in errors. It returns a
// nil File with any error except a *TornError, which comes with the File
// of every whole line before the torn one.
func Read(r io.Reader, name string) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkText(data, name); err != nil {
		return nil, err
	}
	// A torn last line is set aside before parsing: benchfmt would report
	// it as a syntax error (or, cut after a unit, read a wrong value).
	var torn *TornError
	if len(data) > 0 && data[len(data)-1] != '\n' {
		cut := strings.LastIndexByte(string(data), '\n') + 1
		torn = &TornError{Name: name, Line: strings.Count(string(data), "\n") + 1, Text: shorten(string(data[cut:]), 60)}
		data = data[:cut]
	}
	// The notes are comment lines that benchfmt skips, so read the text
	// once, take the notes out, and hand the same bytes to benchfmt.
	out := &File{Path: name}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, notePrefix) {
			continue
		}
		if m := incompleteRE.FindStringSubmatch(text); m != nil {
			out.Incomplete = m[1]
			continue
		}
		if a, ok := ParseAnnotation(text); ok {
			a.Line = line
			out.Annotations = append(out.Annotations, a)
			continue
		}
		n, ok := ParseNote(text)
		if !ok {
			return nil, fmt.Errorf("%s:%d: malformed corobench note %q (want %q)", name, line, text, notePrefix+"failed|unsupported|steal|reps|disturbed Benchmark<Name>: <text>")
		}
		n.Line = line
		out.Notes = append(out.Notes, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A last benchmark line of our own, after every line of the file,
	// carries the config in force at the end (benchfmt hands config out
	// only with results); it is taken off the results again.
	br := benchfmt.NewReader(strings.NewReader(string(data)+configProbe), name)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, rec
		case *benchfmt.Result:
			out.Results = append(out.Results, rec.Clone())
		}
	}
	if err := br.Err(); err != nil {
		return nil, err
	}
	if n := len(out.Results); n > 0 {
		out.Config = out.Results[n-1].Config
		out.Results = out.Results[:n-1]
	}
	out.Units = br.Units()
	if len(out.Results) == 0 && len(out.Notes) == 0 {
		if torn != nil {
			return nil, torn
		}
		return nil, fmt.Errorf("%s: no benchmark results and no cell notes: not a corobench results file, or truncated before the first cell", name)
	}
	if torn != nil {
		torn.Kept = len(out.Results) + len(out.Notes)
		return out, torn
	}
	return out, nil
}

// maxLine is the longest line benchfmt's reader takes (bufio.Scanner's
// default token size).
const maxLine = bufio.MaxScanTokenSize

// checkText rejects what is not text in the benchmark format at all (a
// binary, an archive, a line no reader takes) with an error that says so,
// instead of a scanner's "token too long" or a syntax error deep inside.
func checkText(data []byte, name string) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("%s: not a results file: it holds binary data (a NUL byte at offset %d)", name, i)
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return fmt.Errorf("%s: not a results file: it is not UTF-8 text (at offset %d)", name, i)
	}
	for line, rest := 1, data; len(rest) > 0; line++ {
		n := bytes.IndexByte(rest, '\n')
		if n < 0 {
			n = len(rest)
		}
		if n >= maxLine {
			return fmt.Errorf("%s:%d: not a results file: the line is %d bytes long (a results file's lines are under %d)", name, line, n, maxLine)
		}
		rest = rest[min(n+1, len(rest)):]
	}
	return nil
}

// Check applies the rules a corobench results file keeps beyond the
// benchmark format: every result and every note names its row
// (<Scenario>/impl=<row>[/<key>=<value>]...). Plain `go test -bench` output
// is valid benchfmt but fails here. check, report and compare are meant to
// share this one verdict.
func (f *File) Check() error {
	for _, r := range f.Results {
		if !hasRow(string(r.Name)) {
			_, line := r.Pos()
			return fmt.Errorf("%s:%d: benchmark %q has no /impl=<row> part: not a corobench results file (corobench names are <Scenario>/impl=<row>[/<key>=<value>]; plain go test -bench output is for benchstat)", f.Path, line, "Benchmark"+string(r.Name))
		}
	}
	for _, n := range f.Notes {
		if !hasRow(n.Name) {
			return fmt.Errorf("%s:%d: note for %q has no /impl=<row> part", f.Path, n.Line, n.Name)
		}
	}
	for _, a := range f.Annotations {
		if !hasRow(a.Name) {
			return fmt.Errorf("%s:%d: %s line for %q has no /impl=<row> part", f.Path, a.Line, a.Kind, a.Name)
		}
	}
	return nil
}

func hasRow(name string) bool {
	_, parts := benchfmt.Name(name).Parts()
	for _, p := range parts {
		if strings.HasPrefix(string(p), "/impl=") && len(p) > len("/impl=") {
			return true
		}
	}
	return false
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

const configProbe = "BenchmarkCorobenchConfigProbe 1 0 probe\n"

var incompleteRE = regexp.MustCompile(`^# corobench:incomplete (.*)$`)

// Writer appends results and notes to a results file as cells finish, so an
// interrupted run keeps every finished cell. It is not safe for concurrent
// use.
//
// Every record (a result with the config lines before it, a note, a unit
// line, a block of config lines) goes out in one Write call. When the
// destination is a file (it has Sync and Truncate, as *os.File does), each
// record is synced to disk before the call returns, and a failed write or
// sync truncates the file back to the end of the last whole record: a full
// disk or an I/O error never leaves a torn line, so every record written
// before the failure reads back. After a failure the Writer refuses every
// further record with the same error.
type Writer struct {
	w   io.Writer
	f   syncTruncater // w as a file, or nil
	off int64         // end of the last whole record in f
	buf bytes.Buffer  // the record being built

	// The file config in force: what a reader applies to the next result.
	config map[string]string
	order  []string
	// afterResult says a result line was written since the last config
	// block, so a new block starts with a blank line (as benchfmt does).
	afterResult bool
	err         error // sticky
}

type syncTruncater interface {
	Sync() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// NewWriter returns a Writer that writes to w, starting with a header
// comment.
func NewWriter(w io.Writer, header string) (*Writer, error) {
	wr := &Writer{w: w, config: map[string]string{}}
	if f, ok := w.(syncTruncater); ok {
		// Records are appended at the file's current offset; a failed
		// record is cut back to it.
		if off, err := f.Seek(0, io.SeekCurrent); err == nil {
			wr.f, wr.off = f, off
		}
	}
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		fmt.Fprintf(&wr.buf, "# %s\n", line)
	}
	if err := wr.commit(); err != nil {
		return nil, err
	}
	return wr, nil
}

// commit writes the record in buf as one Write, syncs it when the
// destination is a file, and on failure cuts the file back to the last
// whole record.
func (w *Writer) commit() error {
	defer w.buf.Reset()
	if w.err != nil {
		return w.err
	}
	b := w.buf.Bytes()
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err == nil && w.f != nil {
		err = w.f.Sync()
	}
	if err == nil {
		w.off += int64(n)
		return nil
	}
	w.err = fmt.Errorf("results: writing a record: %w", err)
	if w.f != nil {
		// Truncating frees space, so it succeeds on a full disk.
		if terr := w.f.Truncate(w.off); terr != nil {
			w.err = fmt.Errorf("%w; cutting the torn record off also failed: %v", w.err, terr)
		} else if _, serr := w.f.Seek(w.off, io.SeekStart); serr != nil {
			w.err = fmt.Errorf("%w; seeking back also failed: %v", w.err, serr)
		}
	}
	return w.err
}

// Config writes file config lines for every key in cfg whose value differs
// from the config in force, without a result. Written at the top of a run,
// it puts the machine's metadata in the file even if no cell gives a
// figure. Keys not in cfg stay as they are.
func (w *Writer) Config(cfg []benchfmt.Config) error {
	w.writeConfig(cfg, false)
	if w.buf.Len() == 0 {
		return nil
	}
	return w.commit()
}

// writeConfig appends to buf the config lines that bring the config in
// force to cfg; with replace, keys in force but absent from cfg are
// deleted ("key:" with no value, as benchfmt writes it).
func (w *Writer) writeConfig(cfg []benchfmt.Config, replace bool) {
	var lines []string
	want := map[string]bool{}
	for _, c := range cfg {
		if !c.File {
			continue
		}
		want[c.Key] = true
		if have, ok := w.config[c.Key]; ok && have == string(c.Value) {
			continue
		}
		if _, ok := w.config[c.Key]; !ok {
			w.order = append(w.order, c.Key)
		}
		w.config[c.Key] = string(c.Value)
		lines = append(lines, c.Key+": "+string(c.Value))
	}
	if replace {
		kept := w.order[:0]
		for _, k := range w.order {
			if !want[k] {
				delete(w.config, k)
				lines = append(lines, k+":")
				continue
			}
			kept = append(kept, k)
		}
		w.order = kept
	}
	if len(lines) == 0 {
		return
	}
	if w.afterResult {
		w.buf.WriteByte('\n')
		w.afterResult = false
	}
	for _, l := range lines {
		w.buf.WriteString(l)
		w.buf.WriteByte('\n')
	}
	w.buf.WriteByte('\n')
}

// UnitBetter writes unit metadata saying whether higher or lower values of
// unit are better (benchstat uses it for the direction of a change).
func (w *Writer) UnitBetter(unit string, higher bool) error {
	better := "lower"
	if higher {
		better = "higher"
	}
	fmt.Fprintf(&w.buf, "Unit %s better=%s\n", unit, better)
	return w.commit()
}

// Result writes one result line, preceded by whatever file config lines
// changed (r's file config replaces the config in force).
func (w *Writer) Result(r *benchfmt.Result) error {
	if err := CheckName(string(r.Name)); err != nil {
		return err
	}
	w.writeConfig(r.Config, true)
	// The same line benchfmt.Writer writes.
	fmt.Fprintf(&w.buf, "Benchmark%s %d", r.Name, r.Iters)
	for _, v := range r.Values {
		if v.OrigUnit == "" {
			fmt.Fprintf(&w.buf, " %v %s", v.Value, v.Unit)
		} else {
			fmt.Fprintf(&w.buf, " %v %s", v.OrigValue, v.OrigUnit)
		}
	}
	w.buf.WriteByte('\n')
	w.afterResult = true
	return w.commit()
}

// Note writes a note line for a cell without a figure.
func (w *Writer) Note(n Note) error {
	if n.Kind != NoteFailed && n.Kind != NoteUnsupported {
		return errors.New("results: note kind must be failed or unsupported")
	}
	w.buf.WriteString(FormatNote(n))
	return w.commit()
}

// Annotate writes an annotation line about a cell that has figures.
func (w *Writer) Annotate(a Annotation) error {
	if a.Kind != AnnotSteal && a.Kind != AnnotReps && a.Kind != AnnotDisturbed {
		return errors.New("results: annotation kind must be steal, reps or disturbed")
	}
	// Not CheckName: a failed cell's name may be one benchfmt would misread
	// (its notes are written all the same); only white space would make
	// the line unreadable.
	if a.Name == "" || strings.ContainsAny(a.Name, " \t\n") {
		return fmt.Errorf("results: annotation name %q is empty or contains white space", a.Name)
	}
	w.buf.WriteString(FormatAnnotation(a))
	return w.commit()
}

// Incomplete marks the file as the record of a run that stopped before its
// last cell, saying why in one line. Readers set File.Incomplete from it;
// benchstat skips it as it skips every line it does not know.
func (w *Writer) Incomplete(reason string) error {
	fmt.Fprintf(&w.buf, "%sincomplete %s\n", notePrefix, strings.Join(strings.Fields(reason), " "))
	return w.commit()
}
