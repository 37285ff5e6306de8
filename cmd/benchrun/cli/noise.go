package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
)

// Noise controls: the flags behind harness.Options' Pin, TargetCV, MaxCount
// and AdaptBudget, kept in this one block so they move together.
type noiseFlags struct {
	pin       *bool
	targetCV  *float64
	maxCount  *int
	budget    *time.Duration
	run       *time.Duration
	memProbe  *bool
	coreProbe *bool
	coreMark  *bool
}

type noiseOptions struct {
	pin       bool
	targetCV  float64 // a fraction
	maxCount  int
	budget    time.Duration
	run       time.Duration // the whole run's wall time, 0: none
	memProbe  bool
	coreProbe bool
	coreMark  bool
}

// Default run budgets: the full run's and --quick's time targets, which the
// extra repetitions must not push the run past.
const (
	defaultRunBudget      = 15 * time.Minute
	defaultQuickRunBudget = 90 * time.Second
)

// reportReserve is the part of --run-budget kept for the report that a
// run writes after its cells, so that the whole command, report included,
// ends within the budget: the cells' extra repetitions get the rest. Here
// (2 vCPUs) the report took 4 s after a --quick run (whose cells filled
// its 90 s: 1m33.6s in all) and 5.1 s after a full run's 3133 cells; 10 s
// leaves room for a slower machine.
const reportReserve = 10 * time.Second

// cellsBudget is the wall time the cells may take of a run budget of run
// (0: none): all of it with --no-report, else run less reportReserve
// (at least a second, so that a tiny budget still means "no extras"
// rather than "no limit").
func cellsBudget(run time.Duration, noReport bool) time.Duration {
	if run <= 0 || noReport {
		return run
	}
	return max(time.Second, run-reportReserve)
}

func addNoiseFlags(fs *flag.FlagSet) noiseFlags {
	return noiseFlags{
		pin:       fs.Bool("pin", true, "run the cells of single-P rows on one CPU (the last one allowed) and benchrun on the others; false lets the kernel place everything"),
		targetCV:  fs.Float64("target-cv", 100*harness.DefaultTargetCV, "coefficient of variation, in percent, a cell's headline figure should reach; a cell above it after --count repetitions gets more"),
		maxCount:  fs.Int("max-count", 0, "most repetitions a cell gets when its CV stays above --target-cv (default 3 × --count; at or below --count: no extra repetitions)"),
		budget:    fs.Duration("adapt-budget", 5*time.Minute, "wall time the extra repetitions of a run may take in all (0: none); --quick defaults to 15s"),
		run:       fs.Duration("run-budget", defaultRunBudget, "wall time the whole run should take, its report included (the cells get it less 10s unless --no-report): extra repetitions get at most what the planned ones leave of it (0: no limit but --adapt-budget); --quick defaults to 90s"),
		memProbe:  fs.Bool("mem-probe", false, "time a short chain of dependent loads from memory before and after each timed run and write it in the run log beside the run's figure (a record, not a mark; costs a few ms and 64 MiB per process, and evicts the caches before each run)"),
		coreProbe: fs.Bool("core-probe", true, "time two short register loops, one throughput-bound and one latency-bound, before and after each timed run and write their ratio in the run log beside the run's figure (~1.0 on an unshared core; higher when another tenant runs on the core's sibling hyperthread), and count in each cell's reps line its runs with a reading over 1.10 × the 2nd percentile of the run's ratios (the run log's last core probe line); a record, not a mark: --core-mark judges by it"),
		coreMark:  fs.Bool("core-mark", true, "as --core-probe, and a judged cell's timed run whose core probe says the core was shared (a ratio over the limit the run reads at its start: the core-probe line) is marked disturbed: re-taken, left out of the median, its process not counted when fewer than a majority of its runs are clean (a cell left with fewer than two clean figures writes its others after all); --core-mark=false counts shared runs as any other (on a host whose cores are shared nearly all the time the mark leaves most repetitions out)"),
	}
}

func (n noiseFlags) resolve(count int, quick bool, set map[string]bool) (noiseOptions, error) {
	o := noiseOptions{pin: *n.pin, targetCV: *n.targetCV / 100, maxCount: *n.maxCount, budget: *n.budget, run: *n.run, memProbe: *n.memProbe, coreProbe: *n.coreProbe, coreMark: *n.coreMark}
	switch {
	case !(*n.targetCV > 0):
		return o, fmt.Errorf("--target-cv %v: want a positive percentage, e.g. 5", *n.targetCV)
	case o.maxCount < 0:
		return o, fmt.Errorf("--max-count %d: want 0 or more repetitions", o.maxCount)
	case o.budget < 0:
		return o, fmt.Errorf("--adapt-budget %v: want 0 (no extra repetitions) or a positive duration", o.budget)
	case o.run < 0:
		return o, fmt.Errorf("--run-budget %v: want 0 (no run budget) or a positive duration", o.run)
	}
	if !set["max-count"] {
		o.maxCount = 3 * count
	}
	if quick && !set["adapt-budget"] {
		o.budget = 15 * time.Second
	}
	if quick && !set["run-budget"] {
		o.run = defaultQuickRunBudget
	}
	return o, nil
}
