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
//   - a cell's notes (failed / unsupported) are comment lines that benchfmt
//     ignores, so the file stays valid benchfmt whatever happened.
package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

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

// File is a results file read back: its results in order, and its notes.
type File struct {
	Path    string
	Results []*benchfmt.Result
	Notes   []Note
	Units   benchfmt.UnitMetadataMap
}

// ReadFile reads a results file. A malformed benchmark line, a malformed
// note, or a file with neither results nor notes is an error naming the file
// and the line, so a truncated or corrupt file is never reported as a run.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a results file from r; name is used in errors.
func Read(r io.Reader, name string) (*File, error) {
	// The notes are comment lines that benchfmt skips, so read the text
	// once, take the notes out, and hand the same bytes to benchfmt.
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := &File{Path: name}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, notePrefix) {
			continue
		}
		n, ok := ParseNote(text)
		if !ok {
			return nil, fmt.Errorf("%s:%d: malformed corobench note %q (want %q)", name, line, text, notePrefix+"failed|unsupported Benchmark<Name>: <reason>")
		}
		n.Line = line
		out.Notes = append(out.Notes, n)
	}
	br := benchfmt.NewReader(strings.NewReader(string(data)), name)
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
	out.Units = br.Units()
	if len(out.Results) == 0 && len(out.Notes) == 0 {
		return nil, fmt.Errorf("%s: no benchmark results and no cell notes: not a corobench results file, or truncated before the first cell", name)
	}
	if !endsWithNewline(data) {
		return nil, fmt.Errorf("%s:%d: file is truncated (the last line has no newline)", name, strings.Count(string(data), "\n")+1)
	}
	return out, nil
}

func endsWithNewline(data []byte) bool {
	return len(data) > 0 && data[len(data)-1] == '\n'
}

// Writer appends results and notes to a results file as cells finish, so an
// interrupted run keeps every finished cell. It is not safe for concurrent
// use.
type Writer struct {
	w  io.Writer
	bw *benchfmt.Writer
}

// NewWriter returns a Writer that writes to w, starting with a header
// comment.
func NewWriter(w io.Writer, header string) (*Writer, error) {
	wr := &Writer{w: w, bw: benchfmt.NewWriter(w)}
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if _, err := fmt.Fprintf(w, "# %s\n", line); err != nil {
			return nil, err
		}
	}
	return wr, nil
}

// UnitBetter writes unit metadata saying whether higher or lower values of
// unit are better (benchstat uses it for the direction of a change).
func (w *Writer) UnitBetter(unit string, higher bool) error {
	better := "lower"
	if higher {
		better = "higher"
	}
	md := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}, OrigUnit: unit, Value: better}
	return w.bw.Write(md)
}

// Result writes one result line, preceded by whatever config lines changed.
func (w *Writer) Result(r *benchfmt.Result) error {
	if err := CheckName(string(r.Name)); err != nil {
		return err
	}
	return w.bw.Write(r)
}

// Note writes a note line for a cell without a figure.
func (w *Writer) Note(n Note) error {
	if n.Kind != NoteFailed && n.Kind != NoteUnsupported {
		return errors.New("results: note kind must be failed or unsupported")
	}
	_, err := io.WriteString(w.w, FormatNote(n))
	return err
}
