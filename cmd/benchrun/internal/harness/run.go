package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/results"
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
	// Command builds the child process for a cell, with
	// exec.CommandContext(ctx, ...): the run kills it through ctx (timeout,
	// Ctrl-C) and sets its death signal and process group itself. Nil means
	// re-executing this binary with the hidden `cell` subcommand.
	Command func(ctx context.Context, args []string) *exec.Cmd
	// Progress is told about every cell; nil means no progress output.
	Progress Progress
	// LockPath is the machine lock's file; "" means DefaultLockPath().
	LockPath string
	// Stderr receives messages outside the progress output (waiting for
	// the machine lock); nil means os.Stderr.
	Stderr io.Writer
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
	// Checked here too, not only by the command: Run must not measure
	// under settings it cannot record (childEnv drops them anyway).
	if err := CheckEnv(os.Environ()); err != nil {
		return nil, err
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	lockPath := opts.LockPath
	if lockPath == "" {
		lockPath = DefaultLockPath()
	}
	lock, err := acquireLock(ctx, lockPath, opts.Runstamp, stderr)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
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

	// Every record goes to disk whole and synced (results.Writer): a write
	// that fails (a full disk) is cut off, and the cells before it stay
	// readable.
	writeErr := func(err error) error {
		return fmt.Errorf("writing %s: %w; the %d cells finished before it are kept", sum.ResultsPath, err, sum.Done+sum.Failed+sum.Unsupported)
	}
	w, err := results.NewWriter(resFile, opts.Header)
	if err != nil {
		return sum, writeErr(err)
	}
	// The machine's config first, so that even a run in which no cell
	// gives a figure says where it ran.
	if err := w.Config(opts.Machine); err != nil {
		return sum, writeErr(err)
	}
	if err := writeUnitMetadata(w, opts.Cells); err != nil {
		return sum, writeErr(err)
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
	ran := 0 // cells ended before an interruption
	for i, c := range opts.Cells {
		ran = i
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
		// A cell counts once its record is on disk: a failed write
		// leaves it out of the file, so out of the summary too.
		var status string
		switch {
		case out.err != nil:
			status = "FAILED"
			fmt.Fprintf(logFile, "%s rep %d: FAILED: %v\n%s\n", name, c.Rep, out.err, indent(out.stderrTail))
			if err := w.Note(results.Note{Kind: results.NoteFailed, Name: name, Reason: fmt.Sprintf("rep %d: %v", c.Rep, out.err)}); err != nil {
				return sum, writeErr(err)
			}
			sum.Failed++
		case out.report.Unsupported != "":
			unsupported[name] = true
			status = "not supported"
			fmt.Fprintf(logFile, "%s: not supported: %s\n", name, out.report.Unsupported)
			if err := w.Note(results.Note{Kind: results.NoteUnsupported, Name: name, Reason: out.report.Unsupported}); err != nil {
				return sum, writeErr(err)
			}
			sum.Unsupported++
		default:
			status = "ok"
			if err := w.Result(resultFor(c, out.report, opts.Machine)); err != nil {
				return sum, writeErr(err)
			}
			sum.Done++
			fmt.Fprintf(logFile, "%s rep %d: ok in %v\n", name, c.Rep, out.wall.Round(time.Millisecond))
		}
		progress.Cell(i, c, status)
	}
	if sum.Interrupted {
		why := "interrupted"
		var sig *Signalled
		if errors.As(context.Cause(ctx), &sig) {
			why = sig.Error()
		}
		if err := w.Incomplete(fmt.Sprintf("%s after %d of %d cells", why, ran, len(opts.Cells))); err != nil {
			return sum, writeErr(err)
		}
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
	err := startChild(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	out := cellOutcome{wall: time.Since(start), stderrTail: tail(stderr.String(), stderrTail)}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		out.err = fmt.Errorf("timed out after %v (raise --timeout, or lower the sweep with --param)", opts.Timeout)
	case err != nil:
		reason := failureReason(stderr.String())
		var exit *exec.ExitError
		if reason == noStderr && errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				// Nothing printed, killed from outside: most often the
				// kernel's OOM killer (dmesg says), or a kill -9.
				reason = "killed by SIGKILL without a word (the kernel's OOM killer, or kill -9)"
			}
		}
		out.err = fmt.Errorf("%s (child %v)", reason, err)
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
