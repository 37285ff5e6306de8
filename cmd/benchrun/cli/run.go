package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// runMain is `benchrun [flags]`: a benchmark run, or --list.
func runMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return ExitUsage
	}
	if cfg.list {
		listScenarios(stdout)
		return ExitOK
	}
	if err := harness.CheckEnv(os.Environ()); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return ExitUsage
	}
	ctx, stop := harness.SignalContext(context.Background())
	defer stop()
	return runBench(ctx, cfg, stdout, stderr)
}

// config is the parsed and validated command line of a benchmark run.
type config struct {
	scenarios []*scenarios.Scenario
	rows      []scenarios.Row
	overrides map[string][]string
	count     int
	timeout   time.Duration
	benchtime time.Duration
	quick     bool
	out       string
	noReport  bool
	gcOn      bool
	reports   string
	list      bool
	args      []string
	noise     noiseOptions
}

// paramFlags collects repeated --param key=v1,v2 flags.
type paramFlags map[string][]string

func (p paramFlags) String() string { return "" }

func (p paramFlags) Set(s string) error {
	k, vs, ok := strings.Cut(s, "=")
	if !ok || k == "" || vs == "" {
		return fmt.Errorf("want key=v1,v2,... (for example n=1000,100000), got %q", s)
	}
	values := strings.Split(vs, ",")
	for i, v := range values {
		if v == "" || strings.ContainsAny(v, " /=") {
			return fmt.Errorf("value %q of %s is empty or contains a space, '/' or '='", v, k)
		}
		if slices.Contains(values[:i], v) {
			return fmt.Errorf("value %s of %s is given twice: each cell would run twice; name it once", v, k)
		}
	}
	if _, dup := p[k]; dup {
		return fmt.Errorf("%s is given twice: give all its values in one --param %s=v1,v2", k, k)
	}
	p[k] = values
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }
	scenarioList := fs.String("scenario", "all", "scenarios to run: all, or a comma-separated list (see --list)")
	implList := fs.String("impl", "all", "rows to run: all, or a comma-separated list of "+strings.Join(scenarios.RowNames(), ", "))
	params := paramFlags{}
	fs.Var(params, "param", "override a sweep: key=v1,v2 (repeatable; applies to every selected scenario with that parameter)")
	count := fs.Int("count", 10, "repetitions of every cell (>= 6 gives benchstat a confidence interval); --quick defaults to 6")
	timeout := fs.Duration("timeout", 2*time.Minute, "wall-clock limit per cell; a cell past it is killed and marked failed")
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, fmt.Sprintf("minimum total duration of a cell's timed runs in one process (it makes %d, each at least 1/%d of it, and reports their median); --quick defaults to 10ms", driver.DefaultRuns, driver.DefaultRuns))
	quick := fs.Bool("quick", false, "small sweeps, short bench time and 6 repetitions: a smoke run of every cell")
	out := fs.String("out", harness.DefaultDir("results"), "directory for the results file and run log; the default is results/ at the root of the corobench checkout the working directory is in")
	noReport := fs.Bool("no-report", false, "do not write a report at the end of the run")
	gcOn := fs.Bool("gc-on", false, "leave the garbage collector on during timed runs, to show what it costs the GC-safe rows (stackful-asm reports not supported); default: forced GC, a warm heap, then the collector off, for every row")
	reports := fs.String("reports", harness.DefaultDir("reports"), "directory under which the run's report goes, as <runstamp>/index.html")
	list := fs.Bool("list", false, "list the scenarios, their parameters and units, and the rows, then exit")
	noise := addNoiseFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: benchrun takes flags only (or one of the subcommands %s); see -h", fs.Arg(0), strings.Join(visibleNames(), ", "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg := &config{overrides: params, count: *count, timeout: *timeout, benchtime: *benchtime,
		quick: *quick, out: *out, noReport: *noReport, gcOn: *gcOn, reports: *reports, list: *list, args: args}
	if *quick && !set["count"] {
		cfg.count = 6
	}
	if *quick && !set["benchtime"] {
		cfg.benchtime = 10 * time.Millisecond
	}
	var err error
	if cfg.noise, err = noise.resolve(cfg.count, *quick, set); err != nil {
		return nil, err
	}
	if cfg.scenarios, err = selectScenarios(*scenarioList); err != nil {
		return nil, err
	}
	if cfg.rows, err = selectRows(*implList); err != nil {
		return nil, err
	}
	if err := checkOverrides(cfg.scenarios, params); err != nil {
		return nil, err
	}
	if err := checkCells(cfg.scenarios, cfg.quick, params, memAvailable()); err != nil {
		return nil, err
	}
	switch {
	case cfg.count < 1:
		return nil, fmt.Errorf("--count %d: need at least 1 repetition (6 or more for a confidence interval)", cfg.count)
	case cfg.timeout <= 0:
		return nil, fmt.Errorf("--timeout %v: need a positive duration such as 2m", cfg.timeout)
	case cfg.benchtime <= 0:
		return nil, fmt.Errorf("--benchtime %v: need a positive duration such as 200ms", cfg.benchtime)
	case cfg.out == "":
		return nil, errors.New("--out is empty: name a directory, for example results")
	}
	return cfg, nil
}

func selectScenarios(list string) ([]*scenarios.Scenario, error) {
	return selectNamed(list, "scenario", "--scenario", scenarios.All, scenarios.Lookup, scenarios.Names())
}

func selectRows(list string) ([]scenarios.Row, error) {
	return selectNamed(list, "row", "--impl", scenarios.Rows, scenarios.ParseRow, scenarios.RowNames())
}

// selectNamed resolves a flag's "all" or comma-separated list of names;
// an unknown name is an error that lists the valid ones.
func selectNamed[T any](list, kind, flagName string, all []T, lookup func(string) (T, bool), names []string) ([]T, error) {
	if list == "all" {
		return all, nil
	}
	var out []T
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		v, ok := lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown %s %q for %s; valid: all, %s", kind, name, flagName, strings.Join(names, ", "))
		}
		// Refused rather than de-duplicated: a repeated name is more likely a
		// typo for another than a wish to run each cell twice (--count does that).
		if seen[name] {
			return nil, fmt.Errorf("%s %s names %s %q twice: each of its cells would run twice; name it once (--count sets the repetitions)", flagName, list, kind, name)
		}
		seen[name] = true
		out = append(out, v)
	}
	return out, nil
}

// checkCells checks every planned cell's parameters against their declared
// type and range, and its memory estimate against the machine's available
// memory (available <= 0: unknown, not checked), so that a bad --param
// exits before any cell runs instead of failing, hanging or running the
// machine out of memory in every cell.
func checkCells(ss []*scenarios.Scenario, quick bool, overrides map[string][]string, available int64) error {
	for _, s := range ss {
		for _, combo := range s.Combos(quick, overrides) {
			if err := s.CheckCell(combo, available); err != nil {
				return err
			}
		}
	}
	return nil
}

// memAvailable is MemAvailable from /proc/meminfo in bytes (the kernel's
// estimate of memory a new process can use without swapping), or 0 when
// it cannot be read.
func memAvailable() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// checkOverrides rejects a --param whose key no selected scenario has.
func checkOverrides(ss []*scenarios.Scenario, overrides map[string][]string) error {
	var keys []string
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		valid := map[string]bool{}
		for _, s := range ss {
			for _, p := range s.Params {
				valid[p.Key+" ("+s.Name+")"] = true
				if p.Key == k {
					found = true
				}
			}
		}
		if !found {
			names := make([]string, 0, len(valid))
			for v := range valid {
				names = append(names, v)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return fmt.Errorf("unknown parameter %q: the selected scenarios take no parameters", k)
			}
			return fmt.Errorf("unknown parameter %q; the selected scenarios take: %s", k, strings.Join(names, ", "))
		}
	}
	return nil
}

func listScenarios(w io.Writer) {
	fmt.Fprintln(w, "scenarios:")
	for _, s := range scenarios.All {
		units := make([]string, len(s.Metrics))
		for i, m := range s.Metrics {
			units[i] = m.Unit
		}
		fmt.Fprintf(w, "  %-12s Benchmark%s  [%s]\n      %s\n", s.Name, s.Bench, strings.Join(units, ", "), s.Doc)
		for _, p := range s.Params {
			fmt.Fprintf(w, "      --param %s=%s (quick: %s; valid: %s)\n", p.Key, strings.Join(p.Full, ","), strings.Join(p.Quick, ","), p.Range())
		}
		listGrids(w, s) // list.go
		listMark(w, s)  // list.go
	}
	fmt.Fprintf(w, "rows: %s\n", strings.Join(scenarios.RowNames(), ", "))
	for _, r := range scenarios.Rows {
		d, _ := r.Def()
		fmt.Fprintf(w, "  %-16s %s\n", r, d.Doc)
	}
}

func runBench(ctx context.Context, cfg *config, stdout, stderr io.Writer) int {
	start := time.Now()
	runstamp := harness.NewRunstamp(start)
	cells := harness.Plan(cfg.scenarios, cfg.rows, cfg.quick, cfg.overrides, cfg.count)
	terminal := false
	if f, ok := stderr.(*os.File); ok {
		terminal = term.IsTerminal(int(f.Fd()))
	}
	if note := harness.FuncAlignNote(); note != "" {
		fmt.Fprintf(stderr, "benchrun: warning: %s\n", note)
	}
	sum, err := harness.Run(ctx, harness.Options{
		Cells:     cells,
		Benchtime: cfg.benchtime,
		Timeout:   cfg.timeout,
		GCOn:      cfg.gcOn,
		OutDir:    cfg.out,
		Runstamp:  runstamp,
		Header:    "corobench results\nbenchrun " + strings.Join(cfg.args, " "),
		Machine:   harness.MachineConfig(runstamp, cfg.benchtime, cfg.gcOn),
		Progress:  harness.NewProgress(stderr, terminal),
		Stderr:    stderr,
		// The noise controls (noise.go).
		Pin:         cfg.noise.pin,
		TargetCV:    cfg.noise.targetCV,
		MaxCount:    cfg.noise.maxCount,
		AdaptBudget: cfg.noise.budget,
		RunBudget:   cellsBudget(cfg.noise.run, cfg.noReport),
		MemProbe:    cfg.noise.memProbe,
		CoreProbe:   cfg.noise.coreProbe,
		CoreMark:    cfg.noise.coreMark,
	})
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		if sum != nil {
			fmt.Fprintf(stderr, "benchrun: the cells finished so far are in %s\n", sum.ResultsPath)
		}
		if ctx.Err() != nil {
			return harness.InterruptStatus(ctx)
		}
		return ExitFailed
	}
	fmt.Fprintf(stderr, "benchrun: %d cells ok, %d failed, %d not supported in %v; run log %s\n",
		sum.Done, sum.Failed, sum.Unsupported, time.Since(start).Round(time.Second), sum.LogPath)
	reportFailed := false
	if !cfg.noReport {
		if err := writeReport(sum.ResultsPath, cfg.reports, runstamp, stderr); err != nil {
			// The results are complete on disk; say how to retry the report.
			fmt.Fprintf(stderr, "benchrun: report: %v (rebuild it with: benchrun report %s)\n", err, sum.ResultsPath)
			reportFailed = true
		}
	}
	fmt.Fprintln(stdout, sum.ResultsPath)
	switch {
	case sum.Interrupted:
		fmt.Fprintf(stderr, "benchrun: %v; the finished cells are kept, and the results marked incomplete\n", context.Cause(ctx))
		return harness.InterruptStatus(ctx)
	case sum.Failed > 0:
		fmt.Fprintf(stderr, "benchrun: %d cells failed; see %s\n", sum.Failed, sum.LogPath)
		return ExitFailed
	case reportFailed:
		return ExitFailed
	}
	return ExitOK
}
