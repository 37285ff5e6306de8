package harness

import (
	"fmt"
	"math"
	"time"

	"github.com/corobench/corobench/cmd/benchrun/internal/stats"
	"github.com/corobench/corobench/internal/results"
)

// Repetitions that earn their confidence interval: after the planned
// --count repetitions, a cell whose coefficient of variation (CV, the
// sample standard deviation over the mean of its headline metric, as
// stats.Summarize computes it for the report) is still above the target
// gets more repetitions, one per round, until its CV reaches the target,
// it reaches the cap, or the run's time budget for extra repetitions is
// spent. The extra rounds run only the cells that need them, in plan order,
// so the rows of one parameter combination stay interleaved among
// themselves, as in the planned repetitions.

// DefaultTargetCV is the CV a cell's headline metric should reach (5%, the
// report's noisy mark, stats.MaxCV).
const DefaultTargetCV = stats.MaxCV

// adaptRule decides whether a cell gets another repetition.
type adaptRule struct {
	targetCV float64       // a cell at or below it is stable
	maxReps  int           // no cell gets more repetitions than this
	budget   time.Duration // wall time the extra repetitions may take in all
	asked    time.Duration // --adapt-budget, before the run budget cut it to budget
}

// adaptVerdict is the decision for one cell.
type adaptVerdict int

const (
	verdictMore     adaptVerdict = iota // CV above target, under the cap
	verdictStable                       // CV at or below the target
	verdictCap                          // CV above target, cap reached
	verdictTooFew                       // fewer than 2 figures: no CV to judge
	verdictFailures                     // a repetition failed: more would not help
	verdictShort                        // fewer undisturbed figures than planned, under the cap
)

// decide returns the verdict for a cell with these headline figures (its
// undisturbed repetitions') after reps repetitions (reps counts failed and
// disturbed ones too), of which want were planned, and the CV it read
// (NaN when it has none). A cell with fewer figures than planned (its
// disturbed repetitions were not counted) gets more while under the cap,
// whatever its CV: a disturbed repetition is replaced, not dropped.
func (r adaptRule) decide(values []float64, reps, want int, failed bool) (adaptVerdict, float64) {
	if failed {
		return verdictFailures, cv(values)
	}
	if len(values) < want && reps < r.maxReps {
		return verdictShort, cv(values)
	}
	if len(values) < 2 {
		return verdictTooFew, math.NaN()
	}
	c := cv(values)
	switch {
	case c <= r.targetCV:
		// A zero mean with zero spread is CV NaN in stats; cv makes it 0.
		return verdictStable, c
	case reps >= r.maxReps:
		return verdictCap, c
	}
	return verdictMore, c
}

// wantsMore reports whether a verdict asks for another repetition.
func (v adaptVerdict) wantsMore() bool { return v == verdictMore || v == verdictShort }

// runAdaptBudget is the wall time the extra repetitions may take: adapt
// (--adapt-budget), cut to what is left of run (--run-budget, 0: no run
// budget) after the planned repetitions took planned, and never below 0.
func runAdaptBudget(adapt, run, planned time.Duration) time.Duration {
	if run <= 0 {
		return adapt
	}
	return max(0, min(adapt, run-planned))
}

// roundBudget is a budget as the reps note prints it: whole seconds once
// it is a second or more (a budget the run budget cut is an odd length).
func roundBudget(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d
}

// fits reports whether a repetition expected to take next still fits in
// the budget after spent.
func (r adaptRule) fits(spent, next time.Duration) bool {
	return spent+next <= r.budget
}

// cv is the coefficient of variation of values as the report computes it,
// except that a sample with no spread at all is 0 (stable) even when its
// mean is 0, and a spread around a zero mean is +Inf (never stable).
func cv(values []float64) float64 {
	if len(values) < 2 {
		return math.NaN()
	}
	c := stats.Summarize(values).CV
	if math.IsNaN(c) {
		lo, hi := values[0], values[0]
		for _, v := range values {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo == hi {
			return 0
		}
		return math.Inf(1)
	}
	return c
}

// repsText is the text of a cell's repetition annotation: reps
// repetitions, of which disturbed were not counted (their processes had
// no clean majority of timed runs) and the counted ones left dropped timed
// runs out of their medians, and crossSlow of the disturbed ones ran in the
// cross-CPU slow mode (crosscpu.go); figures is how many were counted, want
// how many were planned.
func repsText(reps int, v adaptVerdict, c float64, r adaptRule, budgetSpent bool, figures, want, disturbed, dropped, crossSlow int) string {
	over := fmt.Sprintf("cv %s > target %s", pct(c), pct(r.targetCV))
	if v == verdictShort {
		over = fmt.Sprintf("cv %s with %d undisturbed figures of the %d planned", pct(c), figures, want)
	}
	why := ""
	switch {
	case v == verdictStable:
		why = fmt.Sprintf("cv %s <= target %s", pct(c), pct(r.targetCV))
	case v == verdictTooFew:
		why = "too few figures for a cv"
	case v == verdictFailures:
		why = fmt.Sprintf("cv %s; a repetition failed, so no more were run", pct(c))
	case v == verdictCap:
		why = fmt.Sprintf("cv %s > target %s; cap of %d repetitions reached", pct(c), pct(r.targetCV), r.maxReps)
	case budgetSpent:
		why = fmt.Sprintf("%s; time budget of %v for extra repetitions spent", over, roundBudget(r.budget))
	case r.budget <= 0 && r.asked > 0 && r.maxReps > 0:
		why = fmt.Sprintf("%s; no time left for extra repetitions (--run-budget spent by the planned ones)", over)
	default:
		why = fmt.Sprintf("%s; extra repetitions off (--max-count or --adapt-budget)", over)
	}
	if disturbed > 0 || dropped > 0 {
		why += fmt.Sprintf("; disturbed: %d repetitions not counted, %d timed runs left out of the counted ones' medians", disturbed, dropped)
	}
	if crossSlow > 0 {
		why += fmt.Sprintf(" (%d of the repetitions not counted ran in the %s)", crossSlow, results.CrossSlowMode)
	}
	return fmt.Sprintf("%d repetitions: %s", reps, why)
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}
