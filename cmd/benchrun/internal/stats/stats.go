// Package stats summarises the repeated measurements of one benchmark cell
// and compares two such cells, with the statistics benchstat uses: the
// median with a distribution-free 95% confidence interval and the
// Mann-Whitney U test (golang.org/x/perf/benchmath, AssumeNothing), plus
// the coefficient of variation and percentiles (github.com/montanaflynn/stats).
//
// Benchmark timings are not normally distributed (they have a hard floor and
// a long right tail), so every figure here is order-based except the
// coefficient of variation, which is reported only as a noise indicator.
package stats

import (
	"fmt"
	"math"
	"slices"

	mstats "github.com/montanaflynn/stats"
	"golang.org/x/perf/benchmath"
)

const (
	// Confidence is the level of every confidence interval reported.
	Confidence = 0.95
	// Alpha is the significance level: a comparison with p >= Alpha is
	// reported as "~" (no significant difference).
	Alpha = 0.05
	// MinSamples is the smallest sample for which a 95% confidence interval
	// of the median is finite (with 5 samples the interval's confidence is
	// at most 1-2/32 = 93.75%). Cells with fewer samples are flagged.
	MinSamples = 6
	// MaxCV is the coefficient of variation above which a cell is flagged
	// as noisy.
	MaxCV = 0.05
)

var thresholds = &benchmath.Thresholds{CompareAlpha: Alpha}

// Summary describes the sample of one cell (one benchmark, one unit).
type Summary struct {
	N      int     // number of samples
	Median float64 // sample median
	// Lo and Hi bound the confidence interval of the median. With fewer
	// than MinSamples samples at least one of them is infinite.
	Lo, Hi float64
	// Confidence is the actual confidence of [Lo, Hi] (>= Confidence: the
	// interval is made of order statistics, so it cannot hit 95% exactly).
	Confidence float64
	Mean       float64
	Min, Max   float64
	// CV is the coefficient of variation: sample standard deviation over
	// the mean. It is NaN with fewer than 2 samples or a zero mean.
	CV float64
	// FewSamples is set when N < MinSamples.
	FewSamples bool
	// Noisy is set when CV > MaxCV.
	Noisy bool
}

// Summarize computes the Summary of values. It does not modify values.
// It panics on an empty sample: a cell without values has no summary, and
// callers must report it as missing rather than as zero.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		panic("stats: Summarize of an empty sample")
	}
	sorted := slices.Clone(values)
	sample := benchmath.NewSample(sorted, thresholds)
	sum := benchmath.AssumeNothing.Summary(sample, Confidence)
	s := Summary{
		N:          len(values),
		Median:     sum.Center,
		Lo:         sum.Lo,
		Hi:         sum.Hi,
		Confidence: sum.Confidence,
		Min:        sorted[0],
		Max:        sorted[len(sorted)-1],
		CV:         math.NaN(),
		FewSamples: len(values) < MinSamples,
	}
	s.Mean, _ = mstats.Mean(values)
	if len(values) >= 2 && s.Mean != 0 {
		sd, err := mstats.StandardDeviationSample(values)
		if err == nil {
			s.CV = sd / math.Abs(s.Mean)
		}
	}
	s.Noisy = s.CV > MaxCV
	return s
}

// CIPercent returns the half-width of the confidence interval as a fraction
// of the median, taking the wider side (benchstat's "± x%"). It is +Inf
// when the interval is unbounded and 0 when the median is 0 and the interval
// is [0, 0].
func (s Summary) CIPercent() float64 {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return math.Inf(1)
	}
	if s.Median == 0 {
		if s.Lo == 0 && s.Hi == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Max(s.Hi/s.Median-1, 1-s.Lo/s.Median)
}

// Flags returns short human-readable warnings for the cell: too few
// samples, or a coefficient of variation over MaxCV.
func (s Summary) Flags() []string {
	var f []string
	if s.FewSamples {
		f = append(f, fmt.Sprintf("n=%d < %d: no 95%% CI", s.N, MinSamples))
	}
	if s.Noisy {
		f = append(f, fmt.Sprintf("CV %.1f%% > %.0f%%", 100*s.CV, 100*MaxCV))
	}
	return f
}

// Comparison is the result of comparing an old and a new sample.
type Comparison struct {
	P      float64 // Mann-Whitney U two-sided p value
	N1, N2 int
	// Significant is P < Alpha: the samples differ in location.
	Significant bool
	// Delta is (new median / old median) - 1; NaN if the old median is 0.
	Delta float64
	// Warnings from benchmath (e.g. too few samples to ever reach Alpha).
	Warnings []string
}

// Compare runs the Mann-Whitney U test on old and new and computes the
// relative change of the medians. Neither slice is modified.
func Compare(old, new []float64) Comparison {
	s1 := benchmath.NewSample(slices.Clone(old), thresholds)
	s2 := benchmath.NewSample(slices.Clone(new), thresholds)
	c := benchmath.AssumeNothing.Compare(s1, s2)
	out := Comparison{P: c.P, N1: c.N1, N2: c.N2, Significant: c.P < Alpha, Delta: math.NaN()}
	for _, w := range c.Warnings {
		out.Warnings = append(out.Warnings, w.Error())
	}
	m1 := benchmath.AssumeNothing.Summary(s1, Confidence).Center
	m2 := benchmath.AssumeNothing.Summary(s2, Confidence).Center
	switch {
	case m1 == m2:
		out.Delta = 0
	case m1 != 0:
		out.Delta = m2/m1 - 1
	}
	return out
}

// FormatDelta renders the change as benchstat does: "~" when it is not
// significant, else a signed percentage such as "-12.30%".
func (c Comparison) FormatDelta() string {
	if !c.Significant {
		return "~"
	}
	if math.IsNaN(c.Delta) {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", 100*c.Delta)
}

// Percentile returns the pct-th percentile (0 < pct <= 100) of values by
// linear interpolation between closest ranks (Hyndman & Fan type 7, as
// NumPy and R's default).
func Percentile(values []float64, pct float64) (float64, error) {
	p, err := mstats.Percentile(values, pct)
	if err != nil {
		return math.NaN(), fmt.Errorf("percentile %v of %d values: %w", pct, len(values), err)
	}
	return p, nil
}

// Knee returns the index of the knee of a load sweep: the highest offered
// rate a row sustains, i.e. the highest rates[i] such that latency[j] <=
// bound at rates[i] and at every lower rate. A rate whose latency is NaN
// (no figure) ends the sustained run like one over the bound. A dip under
// the bound above a rate that failed it does not count: the backlog of an
// overloaded row can drain by luck, which is not a sustained rate. It
// returns -1 when the lowest rate already fails. rates need not be sorted;
// the two slices must have the same length.
func Knee(rates, latency []float64, bound float64) int {
	if len(rates) != len(latency) {
		panic(fmt.Sprintf("stats.Knee: %d rates but %d latencies", len(rates), len(latency)))
	}
	points := make([]LoadPoint, len(rates))
	for i := range rates {
		points[i] = LoadPoint{Rate: rates[i], Latency: latency[i], Achieved: math.NaN()}
	}
	return KneeOf(points, bound, 0)
}

// LoadPoint is one offered rate of a load sweep as a row ran it: the
// offered rate, the bound metric's figure there (its median; NaN for no
// figure) and the rate the row completed (its median, in the offered
// rate's unit; NaN when not measured or missing).
type LoadPoint struct {
	Rate, Latency, Achieved float64
}

// Sustained reports whether a row sustained a point: its latency is within
// bound and, when share > 0, it completed at least share of the offered
// rate. A missing figure (NaN latency, or NaN achieved rate when share > 0)
// is not sustained.
func (p LoadPoint) Sustained(bound, share float64) bool {
	if !(p.Latency <= bound) {
		return false
	}
	return share <= 0 || p.Achieved >= share*p.Rate
}

// KneeOf is Knee over load points: the index of the highest offered rate a
// row sustains (LoadPoint.Sustained) at that rate and at every lower one,
// -1 when the lowest rate already fails. share 0 checks latency only.
func KneeOf(points []LoadPoint, bound, share float64) int {
	order := make([]int, len(points))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(points[a].Rate, points[b].Rate) })
	knee := -1
	for _, i := range order {
		if !points[i].Sustained(bound, share) {
			break
		}
		knee = i
	}
	return knee
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
