// Command benchrun runs corobench's scenarios on every row and writes the
// results in the Go benchmark format (results/<runstamp>.txt), readable by
// benchstat:
//
//	go run ./cmd/benchrun --scenario all
//	benchstat -col /impl results/<runstamp>.txt
//
// Each cell (scenario × row × parameter values) runs in a fresh child
// process, rows interleaved round-robin, --count times. See -h for flags,
// `benchrun report FILE...` to rebuild a report, and `benchrun compare OLD
// NEW` to compare two runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK        = 0
	exitFailed    = 1 // a cell failed, or the run could not be written
	exitUsage     = 2 // bad flags or arguments
	exitInterrupt = 130
)

// run is main without the process: tests call it directly.
func run(args []string, stdout, stderr io.Writer) int {
	// The echo scenario's load generator runs in a process of its own: this
	// binary again, with the hidden loadgen subcommand.
	scenarios.LoadgenCommand = scenarios.ReexecLoadgen("loadgen")
	if len(args) > 0 {
		switch args[0] {
		case "loadgen":
			return loadgen.Main(args[1:], stdout, stderr)
		case harness.ChildSubcommand:
			return harness.ChildMain(args[1:], stdout, stderr)
		case "report":
			return runReport(args[1:], stdout, stderr)
		case "compare":
			return runCompare(args[1:], stdout, stderr)
		case "check":
			return runCheck(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return exitUsage
	}
	if cfg.list {
		listScenarios(stdout)
		return exitOK
	}
	if err := harness.CheckEnv(os.Environ()); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return exitUsage
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

// Noise controls: the flags behind harness.Options' Pin, TargetCV, MaxCount
// and AdaptBudget, kept in this one block so they move together.
type noiseFlags struct {
	pin      *bool
	targetCV *float64
	maxCount *int
	budget   *time.Duration
}

type noiseOptions struct {
	pin      bool
	targetCV float64 // a fraction
	maxCount int
	budget   time.Duration
}

func addNoiseFlags(fs *flag.FlagSet) noiseFlags {
	return noiseFlags{
		pin:      fs.Bool("pin", true, "run the cells of single-P rows on one CPU (the last one allowed) and benchrun on the others; false lets the kernel place everything"),
		targetCV: fs.Float64("target-cv", 100*harness.DefaultTargetCV, "coefficient of variation, in percent, a cell's headline figure should reach; a cell above it after --count repetitions gets more"),
		maxCount: fs.Int("max-count", 0, "most repetitions a cell gets when its CV stays above --target-cv (default 3 × --count; at or below --count: no extra repetitions)"),
		budget:   fs.Duration("adapt-budget", 5*time.Minute, "wall time the extra repetitions of a run may take in all (0: none); --quick defaults to 15s"),
	}
}

func (n noiseFlags) resolve(count int, quick bool, set map[string]bool) (noiseOptions, error) {
	o := noiseOptions{pin: *n.pin, targetCV: *n.targetCV / 100, maxCount: *n.maxCount, budget: *n.budget}
	switch {
	case !(*n.targetCV > 0):
		return o, fmt.Errorf("--target-cv %v: want a positive percentage, e.g. 5", *n.targetCV)
	case o.maxCount < 0:
		return o, fmt.Errorf("--max-count %d: want 0 or more repetitions", o.maxCount)
	case o.budget < 0:
		return o, fmt.Errorf("--adapt-budget %v: want 0 (no extra repetitions) or a positive duration", o.budget)
	}
	if !set["max-count"] {
		o.maxCount = 3 * count
	}
	if quick && !set["adapt-budget"] {
		o.budget = 15 * time.Second
	}
	return o, nil
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
	for _, v := range values {
		if v == "" || strings.ContainsAny(v, " /=") {
			return fmt.Errorf("value %q of %s is empty or contains a space, '/' or '='", v, k)
		}
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
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, "minimum duration of one timed run inside a cell; --quick defaults to 10ms")
	quick := fs.Bool("quick", false, "small sweeps, short bench time and 6 repetitions: a smoke run of every cell")
	out := fs.String("out", harness.DefaultDir("results"), "directory for the results file and run log; the default is results/ at the root of the corobench checkout the working directory is in")
	noReport := fs.Bool("no-report", false, "do not write a report at the end of the run")
	gcOn := fs.Bool("gc-on", false, "leave the garbage collector on during timed runs, to show what it costs the GC-safe rows (stackful-asm reports not supported); default: forced GC, then off, for every row")
	reports := fs.String("reports", harness.DefaultDir("reports"), "directory under which the run's report goes, as <runstamp>/index.html")
	list := fs.Bool("list", false, "list the scenarios, their parameters and units, and the rows, then exit")
	noise := addNoiseFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: benchrun takes flags only (or the subcommands report and compare); see -h", fs.Arg(0))
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
	for _, name := range strings.Split(list, ",") {
		v, ok := lookup(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("unknown %s %q for %s; valid: all, %s", kind, name, flagName, strings.Join(names, ", "))
		}
		out = append(out, v)
	}
	return out, nil
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

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, `benchrun runs corobench's scenarios on every row and writes results/<runstamp>.txt
(Go benchmark format: benchstat -col /impl FILE).

usage:
  benchrun [flags]              run scenarios
  benchrun report FILE...       rebuild a report from results files
  benchrun compare OLD NEW      compare two runs, benchstat-style
  benchrun check FILE...        validate results files (exit 1 naming file:line if not)

flags:
`)
	fs.PrintDefaults()
}

// runCheck validates results files: each must read back as benchfmt with
// well-formed cell notes.
func runCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "benchrun check: name at least one results file, e.g. benchrun check results/<runstamp>.txt")
		return exitUsage
	}
	code := exitOK
	for _, path := range args {
		f, err := results.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun check: %v\n", err)
			code = exitFailed
			continue
		}
		failed := 0
		for _, n := range f.Notes {
			if n.Kind == results.NoteFailed {
				failed++
			}
		}
		fmt.Fprintf(stdout, "%s: %d results, %d failed cells, %d not supported\n", path, len(f.Results), failed, len(f.Notes)-failed)
	}
	return code
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
			fmt.Fprintf(w, "      --param %s=%s (quick: %s)\n", p.Key, strings.Join(p.Full, ","), strings.Join(p.Quick, ","))
		}
	}
	fmt.Fprintf(w, "rows: %s\n", strings.Join(scenarios.RowNames(), ", "))
}

func runBench(ctx context.Context, cfg *config, stdout, stderr io.Writer) int {
	start := time.Now()
	runstamp := harness.NewRunstamp(start)
	cells := harness.Plan(cfg.scenarios, cfg.rows, cfg.quick, cfg.overrides, cfg.count)
	terminal := false
	if f, ok := stderr.(*os.File); ok {
		terminal = term.IsTerminal(int(f.Fd()))
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
		// noiseFlags
		Pin:         cfg.noise.pin,
		TargetCV:    cfg.noise.targetCV,
		MaxCount:    cfg.noise.maxCount,
		AdaptBudget: cfg.noise.budget,
	})
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		if sum != nil {
			fmt.Fprintf(stderr, "benchrun: the cells finished so far are in %s\n", sum.ResultsPath)
		}
		if ctx.Err() != nil {
			return harness.InterruptStatus(ctx)
		}
		return exitFailed
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
		return exitFailed
	case reportFailed:
		return exitFailed
	}
	return exitOK
}
