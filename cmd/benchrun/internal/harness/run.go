package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// The OS timer floor each run records (timerfloor.go): 100 windows of
// Timer's n=1 schedule, about 440 sleeps, take about 1.2 s, in the full
// run and with --quick alike.
const timerFloorWindows = 100

// The thread hand-off floor each run records (threadfloor.go): 2000 timed
// round trips after 200 untimed ones, about 0.1 s at 50 µs each.
const threadFloorRounds, threadFloorWarmup = 2000, 200

// procStat is where steal time is read (steal.go); tests point it at a
// file of their own.
var procStat = "/proc/stat"

// Options configures a run.
type Options struct {
	Cells     []Cell
	Benchtime time.Duration
	Timeout   time.Duration // per cell
	// GCOn runs the timed regions with the collector on (GC-safe rows).
	GCOn bool
	// MemProbe has each child read the memory probe before and after each
	// timed run (driver.Options.MemProbe); the run log shows the readings
	// beside the run's figure. Off by default: a record for whoever wants
	// to compare a run's figure with how fast memory was then, not a mark.
	MemProbe bool
	// CoreProbe has each child read the core probe before and after each
	// timed run (driver.Options.CoreProbe); the run log shows the
	// readings beside the run's figure.
	CoreProbe bool
	// CoreMark has each child read the core probe and mark a timed run
	// whose core was shared disturbed (driver.Options.CoreMark).
	CoreMark bool
	// coreLimit is the core probe's limit for the run, set by Run from
	// the base it reads (corebase.go) and passed to each child.
	coreLimit float64
	OutDir    string
	Runstamp  string
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
	// Pin runs the cells of single-P rows on one chosen CPU, with
	// benchrun's own threads on the others (pin.go); the choice is recorded
	// in the cpu-pin config line. False runs everything where the kernel
	// puts it.
	Pin bool
	// TargetCV, MaxCount and AdaptBudget govern extra repetitions
	// (adapt.go): a cell whose headline CV is above TargetCV (0 means
	// DefaultTargetCV) after its planned repetitions gets more, up to
	// MaxCount repetitions in all, while the run's extra repetitions have
	// taken less than AdaptBudget. MaxCount 0 or a zero budget turns extra
	// repetitions off. Either way the results file says how many
	// repetitions each cell got.
	TargetCV    float64
	MaxCount    int
	AdaptBudget time.Duration
	// RunBudget, when positive, is the wall time the whole run should
	// take once it holds the machine lock: the extra repetitions get what
	// the start (timer floor, generator ceiling) and the planned ones left of it,
	// at most AdaptBudget (runAdaptBudget). The planned repetitions are
	// never cut short by it: they are what --count asked for.
	RunBudget time.Duration
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
	Extra       int // extra repetitions run for cells above the target CV
	Stolen      int // cells marked as taken under steal
	Disturbed   int // repetitions not counted: their process was disturbed (in Done too)
	CrossSlow   int // of Disturbed, those taken in the cross-CPU slow mode (crosscpu.go)
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
	switch {
	case opts.TargetCV < 0 || math.IsNaN(opts.TargetCV):
		return nil, fmt.Errorf("harness: Options.TargetCV %v: want a positive fraction, or 0 for DefaultTargetCV (--target-cv)", opts.TargetCV)
	case opts.MaxCount < 0:
		return nil, fmt.Errorf("harness: Options.MaxCount %d: want 0 or more repetitions (--max-count)", opts.MaxCount)
	case opts.AdaptBudget < 0:
		return nil, fmt.Errorf("harness: Options.AdaptBudget %v: want 0 or a positive duration (--adapt-budget)", opts.AdaptBudget)
	case opts.RunBudget < 0:
		return nil, fmt.Errorf("harness: Options.RunBudget %v: want 0 (none) or a positive duration (--run-budget)", opts.RunBudget)
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
	// The run budget counts from here: a wait for the machine lock is not
	// the run's, but the timer floor and the generator's ceiling are.
	runStart := time.Now()
	// Placement and the timer floor, before any file is made: a machine
	// that refuses them refuses the run.
	pins, err := newPinPlan(opts.Pin)
	if err != nil {
		return nil, err
	}
	if err := pins.keepParentOff(); err != nil {
		return nil, fmt.Errorf("keeping benchrun off the cells' CPU: %w (run with --pin=false)", err)
	}
	defer pins.restore()
	floor, err := measureTimerFloor(timerFloorWindows, pins.cpu, &pins.rest)
	if err != nil {
		return nil, err
	}
	// Unlike the timer floor, a machine that refuses this one does not
	// refuse the run: the line says why instead, and only the pool
	// scenarios' comparison with it is lost.
	wake, err := measureThreadWakeFloor(threadFloorRounds, threadFloorWarmup, &pins.orig, pins.cpu)
	machine := slices.Clone(opts.Machine)
	var markBase []float64 // the readings before the first cell, with the mark
	switch {
	case opts.CoreMark:
		// The children judge their runs as they end: they need the limit
		// now. It is taken again as the run's readings come in
		// (runCoreBase.refresh).
		base := measureCoreBase(pins.cpu)
		opts.coreLimit, markBase = base.limit(), base.values
		machine = append(machine, benchfmt.Config{Key: results.KeyCoreProbe, Value: []byte(base.config(opts.coreLimit)), File: true})
	case opts.CoreProbe:
		// A record: the reps lines judge against the run's own readings
		// once every cell is done (runCoreBase).
		machine = append(machine, benchfmt.Config{Key: results.KeyCoreProbe, Value: []byte(coreRecordConfig), File: true})
	}
	machine = append(machine,
		benchfmt.Config{Key: results.KeyCPUPin, Value: []byte(pins.config()), File: true},
		benchfmt.Config{Key: results.KeyTimerFloorOS, Value: []byte(floor.config()), File: true},
		benchfmt.Config{Key: results.KeyThreadWakeFloorOS, Value: []byte(threadWakeFloorConfig(wake, err)), File: true})
	machine = append(machine, loadgenCeiling(ctx, opts.Cells, pins)...) // ceiling.go
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
	if err := w.Config(machine); err != nil {
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

	// Per cell (name): what its repetitions gave, for the extra rounds.
	states := map[string]*cellState{}
	planned := map[string]int{} // repetitions in the plan, per cell
	for _, c := range opts.Cells {
		planned[c.Name()]++
	}
	var order []string
	unsupported := map[string]bool{}
	idx := 0 // cells ended, planned and extra
	// The cross-CPU round trip's readings so far, its fast level
	// (crosscpu.go). Until the planned repetitions are done (resolved)
	// the counted multi-P repetitions wait for their verdict (pending):
	// a run that starts in a slow stretch has no fast level to judge by.
	var modes crossModes
	resolved := false
	// coreBase gathers every core probe reading of the run: the record's
	// base without the mark; with it, the readings the limit is taken
	// again from every coreRefreshCells cells, seeded with the ones read
	// before the first cell.
	coreBase := runCoreBase{readings: slices.Clone(markBase)}
	sinceRefresh := 0
	// count writes a repetition's result line and counts its figure.
	count := func(st *cellState, rec *benchfmt.Result, rep childReport) error {
		if err := w.Result(rec); err != nil {
			return writeErr(err)
		}
		st.values = append(st.values, rep.Values[0])
		st.dropped += rep.droppedRuns()
		st.seg.add(rep)
		return nil
	}
	// leaveOut writes a repetition that is not a sample of its cell (its
	// process was disturbed, or it ran in the cross-CPU slow mode): its
	// figure goes on a comment line, and the cell gets another repetition
	// in its place (adapt.go). A repetition in the slow mode is one
	// disturbed by the host.
	leaveOut := func(st *cellState, c Cell, rec *benchfmt.Result, rep childReport, cross crossReading) error {
		text := disturbedText(c, rep)
		if cross.slow() {
			st.crossSlow++
			sum.CrossSlow++
			text = crossSlowText(c, rep, cross)
		}
		st.disturbed++
		st.held = append(st.held, rec)
		sum.Disturbed++
		if err := w.Annotate(results.Annotation{Kind: results.AnnotDisturbed, Name: c.Name(), Text: text}); err != nil {
			return writeErr(err)
		}
		return nil
	}
	// resolve judges the pending repetitions against the fast level of
	// every reading the planned repetitions took, and counts or leaves
	// out each.
	resolve := func() error {
		resolved = true
		level := modes.level()
		for _, name := range order {
			st := states[name]
			for _, p := range st.pending {
				p.cross.judgeAt(level)
				if !p.cross.slow() {
					if err := count(st, p.rec, p.report); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(logFile, "%s rep %d: %s, not counted (judged after the planned repetitions): %s\n", name, p.cell.Rep, results.CrossSlowMode, p.cross.text())
				if err := leaveOut(st, p.cell, p.rec, p.report, p.cross); err != nil {
					return err
				}
			}
			st.pending = nil
		}
		return nil
	}
	// runOne runs cell c and writes its record. It returns false when the
	// run was interrupted (the cell is left out).
	runOne := func(c Cell) (bool, error) {
		name := c.Name()
		st := states[name]
		if st == nil {
			st = &cellState{first: c, planned: planned[name]}
			states[name] = st
			order = append(order, name)
		}
		if unsupported[name] {
			progress.Cell(idx, c, "not supported")
			idx++
			return true, nil
		}
		if err := pins.keepParentOff(); err != nil {
			return true, fmt.Errorf("keeping benchrun off the cells' CPU: %w (run with --pin=false)", err)
		}
		if opts.CoreMark && sinceRefresh >= coreRefreshCells {
			sinceRefresh = 0
			if limit := coreBase.refresh(); limit != opts.coreLimit {
				opts.coreLimit = limit
				fmt.Fprintf(logFile, "core probe: limit now %.3f for the cells from here (%s)\n", limit, coreBase.limitText())
			}
		}
		sinceRefresh++
		out := runCell(ctx, command, c, opts, pins)
		if ctx.Err() != nil && out.err != nil {
			// Killed by Ctrl-C: not a failure of the cell, and not a result.
			fmt.Fprintf(logFile, "%s rep %d: interrupted\n", name, c.Rep)
			return false, nil
		}
		// The probes count into the run's fast level whatever the cell
		// gave: they read the machine, not the cell. Before the planned
		// repetitions are done the verdict waits (resolve).
		out.cross.sizeOnly = sizeFigure(c.Scenario.Metrics[0].Unit)
		modes.judge(&out.cross)
		if !resolved {
			out.cross.slowBefore, out.cross.slowAfter = false, false
		}
		st.reps++
		st.wall += out.wall
		if out.err == nil {
			st.core.add(out.report)
			coreBase.add(out.report)
		}
		// A cell counts once its record is on disk: a failed write
		// leaves it out of the file, so out of the summary too.
		var status string
		switch {
		case out.err != nil:
			status = "FAILED"
			st.failed = true
			fmt.Fprintf(logFile, "%s rep %d: FAILED: %v\n%s\n", name, c.Rep, out.err, indent(out.stderrTail))
			if err := w.Note(results.Note{Kind: results.NoteFailed, Name: name, Reason: fmt.Sprintf("rep %d: %v", c.Rep, out.err)}); err != nil {
				return true, writeErr(err)
			}
			sum.Failed++
		case out.report.Unsupported != "":
			unsupported[name] = true
			status = "not supported"
			fmt.Fprintf(logFile, "%s: not supported: %s\n", name, out.report.Unsupported)
			if err := w.Note(results.Note{Kind: results.NoteUnsupported, Name: name, Reason: out.report.Unsupported}); err != nil {
				return true, writeErr(err)
			}
			sum.Unsupported++
		default:
			status = "ok"
			rec := resultFor(c, out.report, machine)
			switch {
			case out.report.Disturbed || out.cross.slow():
				status = "disturbed, not counted"
				if out.cross.slow() {
					status = results.CrossSlowMode + ", not counted"
				}
				if err := leaveOut(st, c, rec, out.report, out.cross); err != nil {
					return true, err
				}
			case !resolved && out.cross.judgeable():
				// Judged with the rest once the planned repetitions
				// have shown the run's fast level (resolve).
				status = "ok, pending the cross-cpu verdict"
				out.cross.pending = true
				st.pending = append(st.pending, pendingRep{cell: c, rec: rec, report: out.report, cross: out.cross})
			default:
				if err := count(st, rec, out.report); err != nil {
					return true, err
				}
			}
			sum.Done++
			cross := ""
			if t := out.cross.text(); t != "" {
				cross = ", " + t
			}
			fmt.Fprintf(logFile, "%s rep %d: %s in %v, steal %v (%.2f%% on %s), context switches %d voluntary %d involuntary, cpu %v, others' cpu %v (%.1f%%)%s\n",
				name, c.Rep, status, out.wall.Round(time.Millisecond), out.stolen, 100*out.stealShare, out.stealOn, out.nvcsw, out.nivcsw,
				out.cpu.Round(time.Millisecond), out.others.Round(time.Millisecond), 100*out.othersShare, cross)
			for i, r := range out.report.Runs {
				mark := ""
				if r.Disturbed {
					mark = " DISTURBED"
				}
				fmt.Fprintf(logFile, "    run %d: %.6g %s, wall %v, run delay %v (%.1f%%), all threads' %v, cpu %v, own threads' %v, wait for others %.1f%%, nivcsw %d%s\n",
					i, r.Value, c.Scenario.Metrics[0].Unit, time.Duration(r.Wall), time.Duration(r.RunDelay), 100*float64(r.RunDelay)/float64(max(1, r.Wall)), time.Duration(r.AllDelay), time.Duration(r.CPU), time.Duration(r.Own), 100*r.waitShare(), r.Nivcsw, r.segments()+r.memProbe()+r.coreProbe()+mark)
			}
			if out.stealShare > stealMark {
				text := fmt.Sprintf("rep %d: steal %v = %.1f%% of %v wall on %s (marked above %.0f%%)", c.Rep, out.stolen, 100*out.stealShare, out.wall.Round(time.Millisecond), out.stealOn, 100*stealMark)
				if err := w.Annotate(results.Annotation{Kind: results.AnnotSteal, Name: name, Text: text}); err != nil {
					return true, writeErr(err)
				}
				sum.Stolen++
				status += ", under steal"
			}
		}
		progress.Cell(idx, c, status)
		idx++
		return true, nil
	}

	interrupted := func() {
		sum.Interrupted = true
	}
	for _, c := range opts.Cells {
		if ctx.Err() != nil {
			interrupted()
			break
		}
		ok, err := runOne(c)
		if err != nil {
			return sum, err
		}
		if !ok {
			interrupted()
			break
		}
	}
	plannedCells := idx
	if err := resolve(); err != nil {
		return sum, err
	}

	// Extra rounds (adapt.go): only the cells whose CV is still above the
	// target, one repetition each per round, in plan order.
	rule := adaptRule{targetCV: opts.TargetCV, maxReps: opts.MaxCount, asked: opts.AdaptBudget,
		budget: runAdaptBudget(opts.AdaptBudget, opts.RunBudget, time.Since(runStart))}
	if rule.targetCV <= 0 {
		rule.targetCV = DefaultTargetCV
	}
	adaptOn := rule.budget > 0 && rule.maxReps > 0
	extraStart := time.Now()
	budgetSpent := false
rounds:
	for adaptOn && !sum.Interrupted {
		var round []Cell
		for _, name := range order {
			st := states[name]
			if unsupported[name] {
				continue
			}
			if v, _ := st.rule(rule).decide(st.values, st.reps, st.planned, st.failed); v.wantsMore() {
				next := st.first
				next.Rep = st.reps
				round = append(round, next)
			}
		}
		if len(round) == 0 {
			break
		}
		if e, ok := progress.(extender); ok {
			e.Extend(len(round))
		}
		for _, c := range round {
			if ctx.Err() != nil {
				interrupted()
				break rounds
			}
			st := states[c.Name()]
			if !rule.fits(time.Since(extraStart), st.wall/time.Duration(st.reps)) {
				budgetSpent = true
				fmt.Fprintf(logFile, "time budget of %v for extra repetitions spent after %v\n", rule.budget, time.Since(extraStart).Round(time.Millisecond))
				break rounds
			}
			ok, err := runOne(c)
			if err != nil {
				return sum, err
			}
			if !ok {
				interrupted()
				break rounds
			}
			sum.Extra++
		}
	}
	if !sum.Interrupted {
		coreBase.settle()
		if opts.CoreProbe && !opts.CoreMark && len(coreBase.readings) > 0 {
			fmt.Fprintf(logFile, "core probe: a timed run with a reading over %.3f (%s) counts as on a shared core in the reps lines\n", coreBase.limit(), coreBase.limitText())
		}
		// Every cell says how many repetitions it got and why no more.
		for _, name := range order {
			st := states[name]
			if unsupported[name] || st.reps == 0 {
				continue
			}
			r := st.rule(rule)
			v, c := r.decide(st.values, st.reps, st.planned, st.failed)
			if !adaptOn && v == verdictCap {
				v = verdictMore // no cap was in play: extra repetitions are off
			}
			text := repsText(st.reps, v, c, r, budgetSpent, len(st.values), st.planned, st.disturbed, st.dropped, st.crossSlow) + st.seg.text() + st.core.text(opts.CoreMark, coreBase)
			if err := w.Annotate(results.Annotation{Kind: results.AnnotReps, Name: name, Text: text}); err != nil {
				return sum, writeErr(err)
			}
		}
	}
	// Interrupted or not, a cell short of undisturbed figures keeps its
	// disturbed ones rather than none.
	for _, name := range order {
		if err := states[name].keepDisturbed(w, name); err != nil {
			return sum, writeErr(err)
		}
	}
	if sum.Interrupted {
		why := "interrupted"
		var sig *Signalled
		if errors.As(context.Cause(ctx), &sig) {
			why = sig.Error()
		}
		ran := min(idx, plannedCells)
		total := len(opts.Cells)
		if idx > plannedCells {
			why += " during the extra repetitions"
			ran, total = idx, idx
		}
		if err := w.Incomplete(fmt.Sprintf("%s after %d of %d cells", why, ran, total)); err != nil {
			return sum, writeErr(err)
		}
	}
	return sum, nil
}

// cellState is what the repetitions of one cell gave so far.
type cellState struct {
	first   Cell      // its first repetition, the template for extra ones
	values  []float64 // headline figures of the counted repetitions
	reps    int       // repetitions ended (failed and disturbed ones too)
	planned int       // repetitions in the plan (--count)
	failed  bool
	wall    time.Duration // wall time of its repetitions, in all
	// disturbed counts the repetitions not counted (their process had
	// no clean majority of timed runs, or ran in the cross-CPU slow mode:
	// crossSlow of them), whose result lines wait in held; dropped counts
	// the disturbed timed runs the counted repetitions left out of their
	// medians.
	disturbed, dropped, crossSlow int
	// seg sums the counted repetitions' timed segments (segTotals).
	seg segTotals
	// core counts its timed runs on a shared core (coreTotals).
	core coreTotals
	// pending holds the planned multi-P repetitions waiting for their
	// cross-CPU verdict (resolve), in the order they ran.
	pending []pendingRep
	held    []*benchfmt.Result
}

// pendingRep is a counted multi-P repetition waiting for its cross-CPU
// verdict (resolve).
type pendingRep struct {
	cell   Cell
	rec    *benchfmt.Result
	report childReport
	cross  crossReading
}

// minFigures is the fewest figures a cell keeps: with fewer undisturbed
// ones than this at the end of the run, its disturbed figures are written
// as result lines after all (keepDisturbed), so that a cell of a run taken
// on a busy machine still has a figure and a spread, said to be disturbed.
const minFigures = 2

// keepDisturbed writes the held result lines of a cell left with fewer
// than minFigures undisturbed figures, and a line saying so.
func (st *cellState) keepDisturbed(w *results.Writer, name string) error {
	if len(st.values) >= minFigures || len(st.held) == 0 {
		return nil
	}
	for _, r := range st.held {
		if err := w.Result(r); err != nil {
			return err
		}
	}
	text := fmt.Sprintf("%s %d disturbed repetitions written as result lines: the cell has %d undisturbed figures, fewer than %d", results.DisturbedKept, len(st.held), len(st.values), minFigures)
	return w.Annotate(results.Annotation{Kind: results.AnnotDisturbed, Name: name, Text: text})
}

// disturbedText is the text of a disturbed repetition's line: its figure,
// and what marked its timed runs.
func disturbedText(c Cell, rep childReport) string {
	var shares []string
	shared := 0
	for _, r := range rep.Runs {
		if r.Disturbed {
			shares = append(shares, fmt.Sprintf("%.0f%%", 100*r.waitShare()))
			if r.CoreShared {
				shared++
			}
		}
	}
	core := ""
	if shared > 0 {
		core = fmt.Sprintf("; %d %s (core probe over the run's limit: the %s line's, or the run log's last before the cell)", shared, results.SharedCoreRuns, results.KeyCoreProbe)
	}
	figure := fmt.Sprintf("rep %d: %s %s not counted: %d of %d timed runs disturbed", c.Rep, strconv.FormatFloat(rep.Values[0], 'g', 6, 64), c.Scenario.Metrics[0].Unit, len(shares), len(rep.Runs))
	if c.Scenario.NotJudged != "" {
		// The core mark alone judged it (driver.coreJudged): a runqueue
		// wait is no verdict here, so none is quoted.
		return fmt.Sprintf("%s (%s; the runqueue wait does not judge %s)", figure, strings.TrimPrefix(core, "; "), c.Scenario.Name)
	}
	return fmt.Sprintf("%s (runqueue wait %s of wall, marked above %.0f%%%s)", figure, strings.Join(shares, " "), 100*driver.DisturbedShare, core)
}

// crossSlowText is the text of the disturbed line of a repetition taken in
// the cross-CPU slow mode: its figure and the two probes. A process that
// was disturbed by a runqueue wait too says both.
func crossSlowText(c Cell, rep childReport, cross crossReading) string {
	if rep.Disturbed {
		return disturbedText(c, rep) + "; and " + cross.notCounted()
	}
	return fmt.Sprintf("rep %d: %s %s not counted: %s",
		c.Rep, strconv.FormatFloat(rep.Values[0], 'g', 6, 64), c.Scenario.Metrics[0].Unit, cross.notCounted())
}

// rule is the run's rule with the cap lowered to the scenario's own cap
// for this cell's parameter values, if it has one (expensive cells).
func (st *cellState) rule(r adaptRule) adaptRule {
	if max, ok := st.first.Scenario.MaxCount[scenarios.FormatParams(st.first.Params)]; ok && max < r.maxReps {
		r.maxReps = max
	}
	return r
}

// extender is a Progress that can take more cells than it started with.
type extender interface{ Extend(more int) }

type cellOutcome struct {
	report     childReport
	err        error
	stderrTail string
	wall       time.Duration
	// Steal over the child's life, on the CPU it was pinned to or over
	// the whole machine (stealOn says which).
	stolen     time.Duration
	stealShare float64
	stealOn    string
	// Context switches of the child (getrusage of the waited child):
	// involuntary ones are preemptions, another task taking its CPU.
	nvcsw, nivcsw int64
	// The child's CPU time, and what the rest of the machine ran on the
	// same CPUs over its life (othersOver).
	cpu, others time.Duration
	othersShare float64
	// cross is the cross-CPU round trip just before and after a multi-P
	// cell's child (crosscpu.go); not measured for a cell on one P.
	cross crossReading
}

// runCell runs one child and interprets how it ended.
func runCell(ctx context.Context, command func(context.Context, []string) *exec.Cmd, c Cell, opts Options, pins *pinPlan) cellOutcome {
	cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := command(cctx, childArgs(c, opts))
	cmd.Env = childEnv(cmd.Env, c)
	if pins.poolPlaced(c.Scenario, c.Row) {
		cmd.Env = append(cmd.Env, scenarios.PoolCPUsEnv+"="+pins.poolCPUs())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that ignores the kill's effect on its pipes (a grandchild
	// holding them) must not hang the run either.
	cmd.WaitDelay = 2 * time.Second
	stealCPU, stealOn := -1, "all CPUs"
	if pins.pinned(c.Scenario, c.Row) {
		stealCPU, stealOn = pins.cpu, fmt.Sprintf("cpu%d", pins.cpu)
	}
	// The round trip between the CPUs a multi-P cell spans, measured
	// while no child runs (crosscpu.go).
	var cross crossReading
	cross.a, cross.b, cross.measured = pins.crossPair()
	cross.measured = cross.measured && c.Row.CellGOMAXPROCS(c.Scenario) > 1
	if cross.measured {
		cross.before, cross.err = crossProbe(cross.a, cross.b)
	}
	// A machine without the counter (not Linux /proc) has no mark.
	before, stealErr := readSteal(procStat, stealCPU)
	start := time.Now()
	err := startChild(cmd, pins.childAffinity(c.Scenario, c.Row), &pins.rest)
	var placeErr error
	if errors.Is(err, errAffinityAfterStart) {
		placeErr, err = err, nil
	}
	if err == nil {
		err = cmd.Wait()
	}
	out := cellOutcome{wall: time.Since(start), stderrTail: tail(stderr.String(), stderrTail), stealOn: stealOn, cross: cross}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			out.nvcsw, out.nivcsw = ru.Nvcsw, ru.Nivcsw
			out.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if after, err := readSteal(procStat, stealCPU); err == nil && stealErr == nil {
		out.stolen, out.stealShare = stealOver(before, after, out.wall)
		out.others, out.othersShare = othersOver(before, after, out.cpu, out.wall)
	} else {
		out.stealOn = "(no /proc/stat)"
	}
	if out.cross.measured && out.cross.err == nil {
		out.cross.after, out.cross.err = crossProbe(out.cross.a, out.cross.b)
	}
	switch {
	case placeErr != nil:
		out.err = placeErr
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
