package stats

import (
	"math"
	"math/bits"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// binomHalfCDF returns P(X <= k) for X ~ Binomial(n, 1/2), by summing
// binomial coefficients: an independent route to the order statistics that
// bound a distribution-free confidence interval of the median.
func binomHalfCDF(n, k int) float64 {
	sum, c := 0.0, 1.0
	for i := 0; i <= k; i++ {
		sum += c
		c = c * float64(n-i) / float64(i+1)
	}
	return sum / math.Pow(2, float64(n))
}

func TestSummarizeSixSamples(t *testing.T) {
	// Sorted: 1 2 3 4 5 6. Median (3+4)/2. For n=6 the only interval of
	// order statistics reaching 95% is [x(1), x(6)], whose confidence is
	// 1 - 2·P(X=0) = 1 - 2/64.
	s := Summarize([]float64{5, 1, 4, 2, 6, 3})
	if s.N != 6 || s.Median != 3.5 || s.Lo != 1 || s.Hi != 6 {
		t.Fatalf("got n=%d median=%v CI=[%v,%v], want 6 3.5 [1,6]", s.N, s.Median, s.Lo, s.Hi)
	}
	if !near(s.Confidence, 1-2.0/64) {
		t.Errorf("confidence %v, want %v", s.Confidence, 1-2.0/64)
	}
	if s.FewSamples {
		t.Error("6 samples flagged as too few")
	}
	if s.Min != 1 || s.Max != 6 || s.Mean != 3.5 {
		t.Errorf("min/max/mean %v %v %v", s.Min, s.Max, s.Mean)
	}
}

func TestSummarizeTenSamples(t *testing.T) {
	values := []float64{70, 10, 100, 40, 30, 90, 20, 60, 50, 80}
	s := Summarize(values)
	// The interval [x(k+1), x(n-k)] has confidence 1-2·P(X<=k); pick the
	// narrowest one that still reaches 95%.
	n, k := 10, 0
	for 1-2*binomHalfCDF(n, k+1) >= Confidence {
		k++
	}
	wantLo, wantHi := float64(10*(k+1)), float64(10*(n-k))
	if k != 1 || wantLo != 20 || wantHi != 90 {
		t.Fatalf("test's own computation: k=%d [%v,%v], by hand k=1 [20,90]", k, wantLo, wantHi)
	}
	if s.Median != 55 || s.Lo != wantLo || s.Hi != wantHi {
		t.Fatalf("median %v CI [%v,%v], want 55 [%v,%v]", s.Median, s.Lo, s.Hi, wantLo, wantHi)
	}
	if want := 1 - 2*11.0/1024; !near(s.Confidence, want) {
		t.Errorf("confidence %v, want %v", s.Confidence, want)
	}
	if got, want := s.CIPercent(), math.Max(90.0/55-1, 1-20.0/55); !near(got, want) {
		t.Errorf("CIPercent %v, want %v", got, want)
	}
	// The caller's slice is left alone.
	if values[0] != 70 || values[9] != 80 {
		t.Errorf("Summarize reordered its input: %v", values)
	}
}

func TestSummarizeFewSamples(t *testing.T) {
	s := Summarize([]float64{3, 1, 2, 5, 4})
	if !s.FewSamples || s.Median != 3 {
		t.Fatalf("FewSamples=%v median=%v", s.FewSamples, s.Median)
	}
	// benchmath leaves at least one side of the interval unbounded.
	if !(math.IsInf(s.Lo, -1) || math.IsInf(s.Hi, 1)) || !math.IsInf(s.CIPercent(), 1) {
		t.Errorf("5 samples gave a finite 95%% CI [%v,%v]", s.Lo, s.Hi)
	}
	if f := strings.Join(s.Flags(), ";"); !strings.Contains(f, "n=5 < 6") {
		t.Errorf("flags %q lack the sample-count warning", f)
	}
}

func TestCoefficientOfVariation(t *testing.T) {
	// Mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sample variance
	// 32/7.
	s := Summarize([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	want := math.Sqrt(32.0/7) / 5
	if !near(s.CV, want) {
		t.Fatalf("CV %v, want %v", s.CV, want)
	}
	if !s.Noisy || !strings.Contains(strings.Join(s.Flags(), ";"), "CV 42.8%") {
		t.Errorf("noisy=%v flags=%v", s.Noisy, s.Flags())
	}
	quiet := Summarize([]float64{100, 101, 99, 100, 100, 102})
	if quiet.Noisy || len(quiet.Flags()) != 0 {
		t.Errorf("CV %v flagged: %v", quiet.CV, quiet.Flags())
	}
	if one := Summarize([]float64{7}); !math.IsNaN(one.CV) || one.Noisy {
		t.Errorf("single sample CV %v noisy=%v", one.CV, one.Noisy)
	}
}

func TestPercentile(t *testing.T) {
	data := []float64{35, 20, 15, 50, 40}
	for _, c := range []struct{ pct, want float64 }{
		// sorted 15 20 35 40 50; rank = pct/100·(n-1)
		{40, 20 + 0.6*(35-20)}, // rank 1.6
		{50, 35},               // rank 2
		{90, 40 + 0.6*(50-40)}, // rank 3.6
		{100, 50},
	} {
		got, err := Percentile(data, c.pct)
		if err != nil || !near(got, c.want) {
			t.Errorf("Percentile(%v) = %v, %v; want %v", c.pct, got, err, c.want)
		}
	}
	if _, err := Percentile(nil, 50); err == nil {
		t.Error("percentile of no data gave no error")
	}
}

// exactTwoSidedP computes the exact two-sided Mann-Whitney p value for two
// samples without ties by enumerating every way to split the pooled ranks.
func exactTwoSidedP(x, y []float64) float64 {
	n1, n := len(x), len(x)+len(y)
	pooled := append(append([]float64{}, x...), y...)
	rank := func(v float64) int {
		r := 1
		for _, w := range pooled {
			if w < v {
				r++
			}
		}
		return r
	}
	observed := 0
	for _, v := range x {
		observed += rank(v)
	}
	mean := float64(n1*(n+1)) / 2
	dev := math.Abs(float64(observed) - mean)
	extreme, total := 0, 0
	for mask := uint(0); mask < 1<<n; mask++ {
		if bits.OnesCount(mask) != n1 {
			continue
		}
		total++
		sum := 0
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				sum += i + 1
			}
		}
		if math.Abs(float64(sum)-mean) >= dev-1e-9 {
			extreme++
		}
	}
	return float64(extreme) / float64(total)
}

func TestCompareSeparated(t *testing.T) {
	old := []float64{3, 1, 2, 6, 5, 4}
	new := []float64{9, 8, 7, 12, 11, 10}
	c := Compare(old, new)
	// Only 2 of the C(12,6) = 924 splits are this extreme.
	if want := 2.0 / 924; !near(c.P, want) || !near(exactTwoSidedP(old, new), want) {
		t.Fatalf("p %v (enumerated %v), want %v", c.P, exactTwoSidedP(old, new), want)
	}
	if !c.Significant || !near(c.Delta, 9.5/3.5-1) || c.FormatDelta() != "+171.43%" {
		t.Errorf("significant=%v delta=%v %q", c.Significant, c.Delta, c.FormatDelta())
	}
	if old[0] != 3 {
		t.Error("Compare reordered its input")
	}
}

func TestCompareInterleaved(t *testing.T) {
	old := []float64{1, 3, 5, 7, 9, 11}
	new := []float64{2, 4, 6, 8, 10, 12}
	c := Compare(old, new)
	if want := exactTwoSidedP(old, new); !near(c.P, want) {
		t.Fatalf("p %v, want %v", c.P, want)
	}
	if c.Significant || c.FormatDelta() != "~" {
		t.Errorf("interleaved samples reported as different: p=%v %q", c.P, c.FormatDelta())
	}
}

func TestCompareTooFewSamplesWarns(t *testing.T) {
	c := Compare([]float64{1, 2, 3}, []float64{4, 5, 6})
	if c.Significant || len(c.Warnings) == 0 {
		t.Errorf("3+3 samples: significant=%v warnings=%v; want not significant with a warning", c.Significant, c.Warnings)
	}
}

// TestKnee checks knee detection against hand-computed sweeps.
func TestKnee(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name           string
		rates, latency []float64
		bound          float64
		want           int
	}{
		{"knee in the middle", []float64{1, 10, 100}, []float64{5, 8, 50}, 10, 1},
		{"every rate sustained", []float64{1, 10, 100}, []float64{5, 8, 9}, 10, 2},
		{"none sustained", []float64{1, 10, 100}, []float64{11, 8, 9}, 10, -1},
		{"a dip after a failure does not count", []float64{1, 10, 100}, []float64{5, 50, 8}, 10, 0},
		{"exactly at the bound is sustained", []float64{1, 10}, []float64{10, 10.000001}, 10, 0},
		{"unsorted rates", []float64{100, 1, 10}, []float64{50, 5, 8}, 10, 2},
		{"a missing figure ends the run", []float64{1, 10, 100}, []float64{5, nan, 6}, 10, 0},
		{"empty", nil, nil, 10, -1},
	} {
		if got := Knee(c.rates, c.latency, c.bound); got != c.want {
			t.Errorf("%s: Knee = %d, want %d", c.name, got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Knee with mismatched slices did not panic")
		}
	}()
	Knee([]float64{1}, nil, 1)
}

// TestKneeOf checks the knee of a load sweep with an achieved rate against
// hand-computed cases: a rate completed short of the share ends the
// sustained run even with its latency in bound; so does a latency over the
// bound with the rate completed, and a missing cell.
func TestKneeOf(t *testing.T) {
	nan := math.NaN()
	p := func(rate, lat, got float64) LoadPoint { return LoadPoint{Rate: rate, Latency: lat, Achieved: got} }
	for _, c := range []struct {
		name   string
		points []LoadPoint
		want   int
	}{
		// bound 2 ms (2e6 ns), share 0.95.
		{"all sustained", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, 2e5, 39.9e3), p(80e3, 1.9e6, 79e3)}, 2},
		// 80k offered, 75k done: 93.75% < 95%, however low its p99.
		{"achieved short of offered", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, 2e5, 39.9e3), p(80e3, 1e5, 75e3)}, 1},
		// exactly 95% is sustained: 38k of 40k.
		{"achieved at the share", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, 2e5, 38e3)}, 1},
		{"p99 above the bound", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, 2.1e6, 40e3), p(80e3, 1e5, 80e3)}, 0},
		{"a missing cell ends the run", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, nan, nan), p(80e3, 1e5, 80e3)}, 0},
		{"a missing achieved rate ends the run", []LoadPoint{p(20e3, 1e5, 20e3), p(40e3, 1e5, nan)}, 0},
		{"unsorted", []LoadPoint{p(80e3, 5e6, 60e3), p(20e3, 1e5, 20e3), p(40e3, 2e5, 40e3)}, 2},
		{"none", []LoadPoint{p(20e3, 3e6, 20e3)}, -1},
		{"empty", nil, -1},
	} {
		if got := KneeOf(c.points, 2e6, 0.95); got != c.want {
			t.Errorf("%s: KneeOf = %d, want %d", c.name, got, c.want)
		}
	}
	// share 0: latency only, as Knee.
	if got := KneeOf([]LoadPoint{p(1, 5, nan), p(10, 8, 1), p(100, 50, 100)}, 10, 0); got != 1 {
		t.Errorf("share 0: KneeOf = %d, want 1", got)
	}
}
