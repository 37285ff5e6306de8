package harness

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/corobench/corobench/scenarios/driver"
)

// The core probe's base. The core mark (driver.CoreShared) calls a run's
// core shared when a probe reading's ratio (throughput-bound loop over
// latency-bound loop, driver.CoreReading.Ratio) is over a limit. The
// limit was chosen on a VM whose unshared core reads ~0.97; a core with
// fewer ALU ports may read more even unshared, and every run there would
// be marked. So before the first cell a run with the mark reads the probe
// on the cells' CPU in short bursts spread over a few seconds and takes
// the unshared core's ratio from them (unsharedRatio). (A run without the mark records
// only, and takes its base from all of its own readings once the cells are
// done: runCoreBase.) The limit is driver.CoreLimit of it and of the
// unshared readings' width (unsharedSpread): 2–10% over the base.
//
// A base taken while the core stayed shared throughout reads high and
// raises the limit, so that the mark marks less and the record calls
// shared runs clean: on 2026-12-07 (AMD EPYC guest) the sibling was busy
// 74% of a 60 s trace (readings every 5.6 ms), in stretches of 17 ms at the
// median and up to 0.95 s, with clean ones of 11 ms at the median; the
// base then was 6 bursts of 40 readings over 0.58 s, and one run of three
// read 1.318 (limit 1.449), which counted runs at 1.30–1.38 as clean
// (Yield n=2 on stackless at 14–18 ns against 9 on a clean core). The
// readings are therefore many short bursts far apart: the chance that
// every burst lands in a shared stretch falls with the number of bursts
// (0.74^30 ≈ 1e-4 with independent bursts), while their CPU time stays
// that of 240 readings, ~50 ms.

// unsharedRatio is the unshared core's ratio among readings: the 2nd
// percentile (nearest rank), not the lowest, which a reading whose
// latency-bound loop was slowed (an interrupt in its fastest burst) pulls
// under it: of 5522 readings of a --quick run on 2026-12-07 the lowest
// were 0.80, 0.84 and 0.84, the 1st percentile 1.03, the 2nd 1.05, and
// every one from the 3rd to the 30th 1.06, the unshared core's. So the
// base holds while at least 2% of the readings are unshared. 0 without
// readings.
func unsharedRatio(readings []float64) float64 {
	if len(readings) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(readings))
	rank := (len(sorted)*unsharedPercentile + 99) / 100 // nearest rank, 1-based
	return sorted[max(rank, 1)-1]
}

// unsharedPercentile is unsharedRatio's percentile, and unsharedRank its
// name in the lines that state a base.
const (
	unsharedPercentile = 2
	unsharedRank       = "2nd percentile"
)

// unsharedSpread is the relative width of the unshared core's readings
// over base: the median of the readings at most driver.CoreSharedRatio ×
// base (the widest an unshared mode is taken to be), over base, less 1;
// 0 without a base. A shared stretch's readings inside that band pull it
// up, which only widens the limit (driver.CoreLimit caps it at the old
// 10%): on 2026-12-07's second EPYC guest the readings under 1.01 were
// 16019 at 0.92–0.93 and ~1600 at 0.94–1.01, their median 0.92 against a
// base of 0.918.
func unsharedSpread(readings []float64, base float64) float64 {
	if base <= 0 {
		return 0
	}
	var band []float64
	for _, r := range readings {
		if r <= driver.CoreSharedRatio*base {
			band = append(band, r)
		}
	}
	if len(band) == 0 {
		return 0
	}
	slices.Sort(band)
	return band[(len(band)-1)/2]/base - 1
}

// coreRefreshCells is how often, in cells ended, a run with the mark
// takes its limit again from all its readings so far (runCoreBase.refresh).
const coreRefreshCells = 16

// Bursts of readings the base is made of, and the pause between them:
// ~2.4 s of wall at the start of a run, ~50 ms of it on the CPU.
const (
	coreBaseBursts   = 30
	coreBaseReadings = 8 // per burst; a reading is ~0.2 ms
	coreBasePause    = 80 * time.Millisecond
)

// coreBase is the run-wide reading of the core probe.
type coreBase struct {
	ratio    float64 // the unshared core's ratio (unsharedRatio)
	spread   float64 // its readings' relative width (unsharedSpread)
	readings int
	values   []float64 // the readings, which seed the run's (runCoreBase)
	cpu      int       // where they were read; -1: unpinned
	span     time.Duration
}

// measureCoreBase reads the probe on cpu (or, with cpu < 0, wherever the
// thread runs) on a thread of its own, which ends with it.
func measureCoreBase(cpu int) coreBase {
	done := make(chan coreBase, 1)
	go func() {
		// Never unlocked: the thread's affinity dies with it.
		runtime.LockOSThread()
		b := coreBase{cpu: -1}
		var readings []float64
		if cpu >= 0 && pinSelf(cpu) == nil {
			b.cpu = cpu
		}
		start := time.Now()
		for i := range coreBaseBursts {
			if i > 0 {
				time.Sleep(coreBasePause)
			}
			for range coreBaseReadings {
				readings = append(readings, driver.ReadCore().Ratio())
			}
		}
		b.span = time.Since(start).Round(time.Millisecond)
		b.ratio, b.readings, b.values = unsharedRatio(readings), len(readings), readings
		b.spread = unsharedSpread(readings, b.ratio)
		done <- b
	}()
	return <-done
}

// limit is the mark's limit for this base (driver.CoreLimit).
func (b coreBase) limit() float64 { return driver.CoreLimit(b.ratio, b.spread) }

// config is the core-probe config value of a run with the mark.
func (b coreBase) config(limit float64) string {
	where := "unpinned"
	if b.cpu >= 0 {
		where = fmt.Sprintf("cpu%d", b.cpu)
	}
	return fmt.Sprintf("unshared ratio %.3f (the %s of %d readings over %v on %s); limit %.3f, %.1f%% over it (%s): a judged cell's timed run with a reading over it is disturbed (--core-mark); taken again from these and every reading of the run so far before every %dth cell (the run log gives each new limit)", b.ratio, unsharedRank, b.readings, b.span, where, limit, 100*(limit/b.ratio-1), marginRule(b.spread, "the readings", "the base"), coreRefreshCells)
}

// marginRule says how driver.CoreLimit took a limit's margin from the
// unshared readings' width spread, naming the readings and the base as
// the sentence around it does; the core-probe line and the reps lines'
// limit text both use it.
func marginRule(spread float64, readings, base string) string {
	return fmt.Sprintf("3 × the %.1f%% by which the median of %s within %.0f%% of %s exceeds it, kept within %.0f–%.0f%%",
		100*spread, readings, 100*(driver.CoreSharedRatio-1), base, 100*driver.CoreMinMargin, 100*(driver.CoreSharedRatio-1))
}

// coreRecordConfig is the core-probe config value of a run without the
// mark (runCoreBase).
var coreRecordConfig = fmt.Sprintf("recorded around every timed run, not a mark (--core-probe): each cell's reps line counts its timed runs with a reading over a limit %.0f–%.0f%% above the %s of all the run's ratios (three times their median's distance from it), the run log's last core probe line gives it", 100*driver.CoreMinMargin, 100*(driver.CoreSharedRatio-1), unsharedRank)
