package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// Options configures a run.
type Options struct {
	Cells     []Cell
	Benchtime time.Duration
	Timeout   time.Duration // per cell
	// GCOn runs the timed regions with the collector on (GC-safe rows).
	GCOn     bool
	OutDir   string
	Runstamp string
	// Header is written as comment lines at the top of the results file
	// (the command line, for whoever reruns it).
	Header string
	// Machine is the run's config (MachineConfig), written once at the top.
	// It is the same for every result line on purpose: benchstat splits
	// its tables by config, so a per-row config line would put each row in
	// a table of its own instead of a column of one table. Per-row facts
	// (gomaxprocs, timer floor) are one line each, listing every row.
	Machine []benchfmt.Config
	// Command builds the child process for a cell. Nil means re-executing
	// this binary with the hidden `cell` subcommand.
	Command func(ctx context.Context, args []string) *exec.Cmd
	// Progress is told about every cell; nil means no progress output.
	Progress Progress
}

// Progress receives the run's progress. Implementations draw a bar on a
// terminal or print a line per cell.
type Progress interface {
	Start(total int)
	Cell(i int, c Cell, status string)
	Finish()
}

// Summary is what a run did.
type Summary struct {
	ResultsPath string
	LogPath     string
	Done        int // cells with a figure
	Failed      int
	Unsupported int // cells noted as not supported (repetitions skipped)
	Interrupted bool
}

// stderrTail is how much of a failed child's stderr the run log keeps.
const stderrTail = 4 << 10

// Run executes the cells in order. It returns an error only when it cannot
// write results at all; failed cells are counted in the Summary. When ctx is
// cancelled (Ctrl-C) it kills the running child, leaves that cell out, and
// returns with Interrupted set: everything finished is already on disk.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the output directory: %w (choose another with --out)", err)
	}
	sum := &Summary{
		ResultsPath: filepath.Join(opts.OutDir, opts.Runstamp+".txt"),
		LogPath:     filepath.Join(opts.OutDir, opts.Runstamp+".log"),
	}
	resFile, err := os.OpenFile(sum.ResultsPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot create the results file: %w", err)
	}
	defer resFile.Close()
	logFile, err := os.OpenFile(sum.LogPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot create the run log: %w", err)
	}
	defer logFile.Close()

	w, err := results.NewWriter(resFile, opts.Header)
	if err != nil {
		return nil, err
	}
	if err := writeUnitMetadata(w, opts.Cells); err != nil {
		return nil, err
	}
	command := opts.Command
	if command == nil {
		command = selfCommand
	}
	progress := opts.Progress
	if progress == nil {
		progress = nopProgress{}
	}
	progress.Start(len(opts.Cells))
	defer progress.Finish()

	unsupported := map[string]bool{}
	for i, c := range opts.Cells {
		if ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
		name := c.Name()
		if unsupported[name] {
			progress.Cell(i, c, "not supported")
			continue
		}
		out := runCell(ctx, command, c, opts)
		if ctx.Err() != nil && out.err != nil {
			// Killed by Ctrl-C: not a failure of the cell, and not a result.
			sum.Interrupted = true
			fmt.Fprintf(logFile, "%s rep %d: interrupted\n", name, c.Rep)
			break
		}
		var status string
		switch {
		case out.err != nil:
			sum.Failed++
			status = "FAILED"
			fmt.Fprintf(logFile, "%s rep %d: FAILED: %v\n%s\n", name, c.Rep, out.err, indent(out.stderrTail))
			if err := w.Note(results.Note{Kind: results.NoteFailed, Name: name, Reason: fmt.Sprintf("rep %d: %v", c.Rep, out.err)}); err != nil {
				return sum, err
			}
		case out.report.Unsupported != "":
			sum.Unsupported++
			unsupported[name] = true
			status = "not supported"
			fmt.Fprintf(logFile, "%s: not supported: %s\n", name, out.report.Unsupported)
			if err := w.Note(results.Note{Kind: results.NoteUnsupported, Name: name, Reason: out.report.Unsupported}); err != nil {
				return sum, err
			}
		default:
			sum.Done++
			status = "ok"
			if err := w.Result(resultFor(c, out.report, opts.Machine)); err != nil {
				return sum, err
			}
			fmt.Fprintf(logFile, "%s rep %d: ok in %v\n", name, c.Rep, out.wall.Round(time.Millisecond))
		}
		if err := resFile.Sync(); err != nil {
			return sum, fmt.Errorf("syncing %s: %w", sum.ResultsPath, err)
		}
		progress.Cell(i, c, status)
	}
	return sum, nil
}

type cellOutcome struct {
	report     childReport
	err        error
	stderrTail string
	wall       time.Duration
}

// runCell runs one child and interprets how it ended.
func runCell(ctx context.Context, command func(context.Context, []string) *exec.Cmd, c Cell, opts Options) cellOutcome {
	cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := command(cctx, childArgs(c, opts))
	cmd.Env = childEnv(cmd.Env, c.Row)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that ignores the kill's effect on its pipes (a grandchild
	// holding them) must not hang the run either.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	out := cellOutcome{wall: time.Since(start), stderrTail: tail(stderr.String(), stderrTail)}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		out.err = fmt.Errorf("timed out after %v (raise --timeout, or lower the sweep with --param)", opts.Timeout)
	case err != nil:
		out.err = fmt.Errorf("child %v: %s", err, lastLine(stderr.String()))
		// The runtime's own words for a fiber misuse (an overflow is
		// "stack size not a power of 2") cannot name our options; this
		// says what happened and which option to change.
		if why := fiber.ExplainCrash(stderr.String()); why != "" {
			out.err = fmt.Errorf("%w; %s", out.err, why)
		}
	default:
		if jerr := json.Unmarshal(stdout.Bytes(), &out.report); jerr != nil {
			out.err = fmt.Errorf("child wrote no valid report (%v): %q", jerr, tail(stdout.String(), 200))
		} else if out.report.Unsupported == "" && len(out.report.Values) != len(c.Scenario.Metrics) {
			out.err = fmt.Errorf("child reported %d values for %d metrics", len(out.report.Values), len(c.Scenario.Metrics))
		}
	}
	return out
}

// selfCommand re-executes this binary as a cell child.
func selfCommand(ctx context.Context, args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.CommandContext(ctx, exe, args...)
}

// childEnv is the environment a row's child runs with: the parent's, with
// GOMAXPROCS and GODEBUG set for the row.
func childEnv(base []string, row scenarios.Row) []string {
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+2)
	godebug := row.GODEBUG()
	for _, kv := range base {
		switch {
		case strings.HasPrefix(kv, "GOMAXPROCS="):
			continue
		case strings.HasPrefix(kv, "GODEBUG="):
			if godebug != "" {
				godebug = strings.TrimPrefix(kv, "GODEBUG=") + "," + godebug
				continue
			}
		}
		env = append(env, kv)
	}
	env = append(env, "GOMAXPROCS="+strconv.Itoa(row.GOMAXPROCS()))
	if godebug != "" {
		env = append(env, "GODEBUG="+godebug)
	}
	return env
}

// resultFor builds the result line for a cell's report.
func resultFor(c Cell, rep childReport, machine []benchfmt.Config) *benchfmt.Result {
	r := &benchfmt.Result{Name: benchfmt.Name(c.Name()), Iters: rep.Iters}
	for _, cfg := range machine {
		r.SetConfig(cfg.Key, string(cfg.Value))
	}
	for i, m := range c.Scenario.Metrics {
		r.Values = append(r.Values, benchfmt.Value{Value: rep.Values[i], Unit: m.Unit})
	}
	// SetConfig marks keys internal; the writer only writes file keys.
	for i := range r.Config {
		r.Config[i].File = true
	}
	return r
}

// writeUnitMetadata declares the throughput units as higher-is-better, so
// benchstat reads their changes in the right direction.
func writeUnitMetadata(w *results.Writer, cells []Cell) error {
	seen := map[string]bool{}
	for _, c := range cells {
		for _, m := range c.Scenario.Metrics {
			if m.HigherIsBetter && !seen[m.Unit] {
				seen[m.Unit] = true
				if err := w.UnitBetter(m.Unit, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lastLine picks the line of a child's stderr that says what went wrong: a
// Go fatal error's or panic's first line if there is one (the goroutine
// dump after it is noise in a one-line note), else the last line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return strings.TrimSpace(l)
		}
	}
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "(no stderr)"
}

func indent(s string) string {
	if s == "" {
		return "    (no stderr)"
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

type nopProgress struct{}

func (nopProgress) Start(int)              {}
func (nopProgress) Cell(int, Cell, string) {}
func (nopProgress) Finish()                {}
