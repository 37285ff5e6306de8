package harness

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/driver"
)

// TestCoreProbeReachesTheRunLog: with Options.CoreProbe or CoreMark the
// child is asked for the core probe (-core-probe, -core-mark) and the run
// log shows its readings' ratios on every timed run's line; with neither,
// no flag and no readings.
func TestCoreProbeReachesTheRunLog(t *testing.T) {
	probed := regexp.MustCompile(`, core probe \d+\.\d\d/\d+\.\d\d`)
	for _, c := range []struct {
		probe, mark bool
	}{{true, false}, {false, true}, {false, false}} {
		args, runs := probeRun(t, func(o *Options) { o.CoreProbe, o.CoreMark = c.probe, c.mark })
		if slices.Contains(args, "-core-probe") != c.probe || slices.Contains(args, "-core-mark") != c.mark {
			t.Errorf("%+v: child args %q", c, args)
		}
		for _, l := range runs {
			if probed.MatchString(l) != (c.probe || c.mark) {
				t.Errorf("%+v: run line %q", c, l)
			}
		}
	}
}

// TestRepsLineCountsSharedCoreRuns: with the core probe on, the cell's
// reps line in the results file says how many of its timed runs read a
// shared core, out of all of them (one per run line of the log), against
// the run's own lowest reading, which the run log states; with the probe
// off it says nothing of the core. With the mark, the count is the mark's.
func TestRepsLineCountsSharedCoreRuns(t *testing.T) {
	counted := regexp.MustCompile(`corobench:reps .*; core shared: (\d+) of (\d+) timed runs \(a core probe reading over (\d\.\d{3}), \d+\.\d% over the 2nd percentile of the run's (\d+) readings`)
	_, runs, res := probeRunResults(t, func(o *Options) { o.CoreProbe = true })
	m := counted.FindStringSubmatch(res)
	if m == nil {
		t.Fatalf("probe on: no core-shared count on the reps line:\n%s", res)
	}
	shared, _ := strconv.Atoi(m[1])
	all, _ := strconv.Atoi(m[2])
	readings, _ := strconv.Atoi(m[4])
	if all != len(runs) || shared > all || readings != 2*all {
		t.Errorf("probe on: %d of %d timed runs shared against %d readings, with %d run lines in the log", shared, all, readings, len(runs))
	}
	if !strings.Contains(res, "core-probe: recorded around every timed run, not a mark") {
		t.Errorf("probe on: the core-probe line does not say it is a record:\n%s", res)
	}
	_, _, res = probeRunResults(t, func(o *Options) { o.CoreMark = true })
	if !regexp.MustCompile(`corobench:reps .*; core shared: \d+ of \d+ timed runs \(a core probe reading over the run's limit: the core-probe line's, or the run log's last before the repetition\)`).MatchString(res) {
		t.Errorf("mark on: the reps line does not give the mark's count:\n%s", res)
	}
	if _, _, res := probeRunResults(t, func(o *Options) { o.CoreProbe = false }); strings.Contains(res, "core shared") {
		t.Errorf("probe off: the results file counts shared-core runs:\n%s", res)
	}
}

// TestCoreTotals: every run with a reading counts, once, by its higher
// reading; runs without one (the probe off) do not count at all. Without
// the mark a run is shared when that reading is over the run's limit,
// which the run's readings give (their 2nd percentile, 1.05 of 1.05–1.8;
// the median of those within 1.10 × it, 1.06, is 0.95% over it, so the
// limit is 1.05 × (1 + 3 × 0.0095) = 1.080, and 1.1, 1.2 and 1.8 are over
// it, 1.07 is not); with the mark, when the child marked it.
func TestCoreTotals(t *testing.T) {
	reading := func(before, after float64, marked bool) runReport {
		return runReport{CoreALUBefore: before, CoreChainBefore: 1, CoreALUAfter: after, CoreChainAfter: 1, CoreShared: marked}
	}
	var c coreTotals
	var base runCoreBase
	for _, rep := range []childReport{
		{Runs: []runReport{reading(1.8, 1.05, true), reading(1.05, 1.1, false), reading(1.06, 1.07, false)}},
		{Runs: []runReport{reading(1.2, 1.1, false), {}}},
	} {
		c.add(rep)
		base.add(rep)
	}
	base.settle()
	if len(c.ratios) != 4 || c.marked != 1 || len(base.readings) != 8 || base.ratio != 1.05 {
		t.Fatalf("totals %+v, base %+v: want 4 runs, 1 marked, 8 readings, base 1.05", c, base)
	}
	if got := c.text(false, base); !strings.Contains(got, "core shared: 3 of 4 timed runs (a core probe reading over 1.080, 2.9% over the 2nd percentile of the run's 8 readings, 1.050: 3 × the 1.0% by which the median of those within 10% of it exceeds it, kept within 2–10%)") {
		t.Errorf("record: text %q", got)
	}
	if got := c.text(true, base); !strings.Contains(got, "core shared: 1 of 4 timed runs (a core probe reading over the run's limit: the core-probe line's, or the run log's last before the repetition)") {
		t.Errorf("mark: text %q", got)
	}
	if got := (coreTotals{}).text(false, runCoreBase{}); got != "" {
		t.Errorf("no readings: text %q, want none", got)
	}
}

// TestUnsharedRatio: the 2nd percentile by nearest rank, so that a few
// low readings (a latency-bound loop slowed by an interrupt) do not set
// the base: of 100 readings, two lows at 0.8 and the rest at 1.06 and
// up, the 2nd reading, 0.8; of 200 readings with the same two lows, the
// 4th, 1.06. None: 0.
func TestUnsharedRatio(t *testing.T) {
	readings := func(n int) []float64 {
		r := []float64{1.5, 0.8, 0.8}
		for i := 3; i < n; i++ {
			r = append(r, 1.06+float64(i%7)/100)
		}
		return r
	}
	if got := unsharedRatio(readings(100)); got != 0.8 {
		t.Errorf("100 readings: %v, want 0.8", got)
	}
	if got := unsharedRatio(readings(200)); got != 1.06 {
		t.Errorf("200 readings: %v, want 1.06", got)
	}
	if got := unsharedRatio(nil); got != 0 {
		t.Errorf("no readings: %v, want 0", got)
	}
}

// TestUnsharedSpread: the median of the readings within
// driver.CoreSharedRatio of the base, relative to it. A tight mode: 90
// readings at 0.92 and 10 at 0.93 with 50 shared ones at 1.3 (outside the
// band): 0.92/0.918 − 1. A wide mode: 0.97–1.05 evenly: its median 1.01,
// 4.1% over the base, which driver.CoreLimit caps at 10%.
// Readings inside the band from a shared stretch only widen it. No base
// or no readings in the band: 0.
func TestUnsharedSpread(t *testing.T) {
	tight := slices.Concat(times(90, 0.92), times(10, 0.93), times(50, 1.3))
	if got, want := unsharedSpread(tight, 0.918), 0.92/0.918-1; math.Abs(got-want) > 1e-12 {
		t.Errorf("tight mode: %v, want %v", got, want)
	}
	var wide []float64
	for i := range 9 {
		wide = append(wide, 0.97+float64(i)/100)
	}
	if got, want := unsharedSpread(wide, 0.97), 1.01/0.97-1; math.Abs(got-want) > 1e-9 {
		t.Errorf("wide mode: %v, want %v", got, want)
	}
	if got, want := driver.CoreLimit(0.97, unsharedSpread(wide, 0.97)), 0.97*driver.CoreSharedRatio; math.Abs(got-want) > 1e-12 {
		t.Errorf("wide mode's limit %v: want the cap, %v", got, want)
	}
	if got := unsharedSpread(tight, 0); got != 0 {
		t.Errorf("no base: %v", got)
	}
	if got := unsharedSpread([]float64{2, 3}, 1); got != 0 {
		t.Errorf("no readings in the band: %v", got)
	}
}

// times is n readings of v.
func times(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestCoreLimitRefresh: a run whose readings before the first cell came
// while the sibling was busy most of the time (6 of 240 unshared at 0.92,
// the rest at 0.95–1.02 and 1.2: the band's median near 0.98, so the 10%
// cap) takes its limit again from every reading so far; once the timed
// runs have brought in the unshared mode (300 readings at 0.92 among 100
// shared ones), the limit is 2% over 0.92.
func TestCoreLimitRefresh(t *testing.T) {
	first := times(6, 0.92)
	for i := range 114 {
		first = append(first, 0.95+float64(i%8)/100)
	}
	first = append(first, times(120, 1.2)...)
	b := runCoreBase{readings: slices.Clone(first)}
	if got := b.refresh(); math.Abs(got-b.ratio*driver.CoreSharedRatio) > 1e-12 || b.ratio != 0.92 {
		t.Fatalf("from the first readings: limit %v over base %v, want the 10%% cap over 0.92", got, b.ratio)
	}
	var runs []runReport
	for i := range 200 {
		r := 0.92
		if i%4 == 0 {
			r = 1.3
		}
		runs = append(runs, runReport{CoreALUBefore: r, CoreChainBefore: 1, CoreALUAfter: 0.92, CoreChainAfter: 1})
	}
	b.add(childReport{Runs: runs})
	if got, want := b.refresh(), 0.92*(1+driver.CoreMinMargin); math.Abs(got-want) > 1e-12 {
		t.Errorf("with the run's readings: limit %v, want %v", got, want)
	}
}

// TestDisturbedTextNamesASharedCore: a repetition whose disturbed runs
// read a shared core says how many did; one disturbed by runqueue waits
// alone does not mention the core.
func TestDisturbedTextNamesASharedCore(t *testing.T) {
	c := Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1)[0]
	shared := runReport{Value: 9, Wall: 100, Disturbed: true, CoreALUBefore: 1.8, CoreChainBefore: 1, CoreALUAfter: 1, CoreChainAfter: 1, CoreShared: true}
	waited := runReport{Value: 9, Wall: 100, RunDelay: 50, Disturbed: true, CoreALUBefore: 1, CoreChainBefore: 1, CoreALUAfter: 1, CoreChainAfter: 1}
	clean := runReport{Value: 7, Wall: 100}
	rep := childReport{Values: []float64{9}, Disturbed: true, Runs: []runReport{shared, shared, waited, clean, clean}}
	if got := disturbedText(c, rep); !strings.Contains(got, "3 of 5 timed runs disturbed") || !strings.Contains(got, "2 on a shared core") {
		t.Errorf("two shared-core runs and one wait: %q", got)
	}
	rep.Runs = []runReport{waited, waited, waited, clean, clean}
	if got := disturbedText(c, rep); strings.Contains(got, "core") {
		t.Errorf("runqueue waits alone: %q mentions the core", got)
	}
	// A scenario the runqueue mark does not judge was judged by the core
	// mark alone: its line names the shared core and quotes no wait.
	e := Plan([]*scenarios.Scenario{bodies.Exec}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1)[0]
	rep.Runs = []runReport{shared, shared, shared, clean, clean}
	if got := disturbedText(e, rep); !strings.Contains(got, "3 of 5 timed runs disturbed (3 "+results.SharedCoreRuns) || strings.Contains(got, "runqueue wait 0%") || !strings.Contains(got, "the runqueue wait does not judge exec") {
		t.Errorf("exec, three shared-core runs: %q", got)
	}
}

// TestCoreBase: the run-wide base is read on the asked CPU, from every
// reading, and its config line and the children's arguments carry the
// limit it gives.
func TestCoreBase(t *testing.T) {
	b := measureCoreBase(0) // every machine has cpu0
	if b.cpu != 0 || b.readings != coreBaseBursts*coreBaseReadings || b.ratio <= 0 {
		t.Fatalf("base %+v: want %d readings on cpu0 and a ratio", b, coreBaseBursts*coreBaseReadings)
	}
	// The bursts are spread out, so that one stretch of a busy sibling
	// cannot cover them all (corebase.go).
	if spread := time.Duration(coreBaseBursts-1) * coreBasePause; b.span < spread {
		t.Errorf("base read over %v: want its bursts spread over at least %v", b.span, spread)
	}
	limit := b.limit()
	if cfg := b.config(limit); !strings.Contains(cfg, fmt.Sprintf("limit %.3f", limit)) || !strings.Contains(cfg, "on cpu0") || !strings.Contains(cfg, "--core-mark") {
		t.Errorf("config %q", cfg)
	}
	c := Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.StackfulAsm}, true, nil, 1)[0]
	args := strings.Join(childArgs(c, Options{CoreMark: true, coreLimit: 1.25}), " ")
	if !strings.Contains(args, "-core-mark -core-limit 1.25") {
		t.Errorf("child arguments %q: want the mark and its limit", args)
	}
}
