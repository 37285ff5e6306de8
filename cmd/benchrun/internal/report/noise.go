package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// noiseView is the report's noise section: how many cells a reader can
// quote (their CV), how many repetitions the harness gave them and why it
// stopped, which repetitions ran while the hypervisor stole CPU time, the
// machine's own timer floor every latency is set against, and its thread
// hand-off floor the pool rows' figures are set against. See
// docs/design.md §6 (measurement).
type noiseView struct {
	// PerOp is the CV distribution of the per-operation cells (a time per
	// operation without a percentile: ns/switch, ns/spawn, ns/wake of
	// CPU, …), the cells the run's CV target is about; All is every cell
	// with a figure.
	PerOp, All cvBands
	// Stops counts the cells by why their repetitions stopped, from the
	// reps lines.
	Stops []keyCells
	// Steal lists the steal marks, at most maxStealLines of them.
	Steal     []stealLine
	StealMore int // marks left out of Steal
	// Disturbed counts the repetitions not counted (disturbed lines),
	// DisturbedKept those of them written as figures after all, and
	// DroppedRuns the disturbed timed runs the counted ones left out
	// (from the reps lines); DisturbedMark is the mark the file's
	// disturbed lines name ("15%").
	Disturbed, DisturbedKept, DroppedRuns int
	DisturbedMark                         string
	// DisturbedCore counts the Disturbed repetitions that had timed runs
	// marked for a shared core (--core-mark; results.SharedCoreRuns).
	DisturbedCore int
	// CrossSlow counts the repetitions not counted because the cross-CPU
	// round trip read the slow mode around their process (disturbed lines
	// naming results.CrossSlowMode); they are not in Disturbed.
	CrossSlow int
	// Preempted lists the cells whose reps line counts preempted timed
	// segments (cells of short segments only: a FreshRuntime lifecycle,
	// a Shutdown cycle; scenarios.SegmentCounts), with the count.
	Preempted []preemptLine
	// CoreRuns counts the timed runs that read the core probe and
	// CoreShared those of them over the run's limit (another tenant on the
	// CPU's sibling hyperthread), summed over the reps lines; CoreCells
	// counts the cells with such a count and CoreMostly those with more
	// than half of their timed runs shared. CoreProbe is the core-probe
	// config line ("" when the probe was off).
	CoreRuns, CoreShared, CoreCells, CoreMostly int
	CoreSharedPct                               string
	CoreProbe                                   string
	// Floor is the timer-floor-os line; FloorP50/FloorP99 its figures in
	// ns (0 when the run did not record one), FloorCPU the sleeping
	// thread's CPU time per sleep in ns (0 when the line has none: a run
	// from before benchrun read it).
	Floor              string
	FloorP50, FloorP99 float64
	FloorCPU           float64
	// WakeFloor is the thread-wake-floor-os line (the round trip of two OS
	// threads through a futex, harness threadfloor.go); WakeP50/WakeP99
	// its figures in ns, 0 when the run did not record one or could not
	// measure it (WakeFloor then says why, or is "").
	WakeFloor        string
	WakeP50, WakeP99 float64
}

// cvBands is a CV distribution in the bands the run's noise target is
// read in. Each band counts the cells at or under its bound, so the bands
// are cumulative: Le10 includes Le5.
type cvBands struct {
	Cells            int // cells with a CV (at least 2 figures, mean not 0)
	Le5, Le10, Le20  int
	Over20, NoCV     int // Over20 = Cells - Le20; NoCV: cells without a CV
	Pct5, Pct10, P20 string
}

// preemptLine is one cell's count of preempted timed segments, from its
// reps line.
type preemptLine struct {
	Where, Text string
	Share       float64 // the preempted segments' share of the timed time, %
}

type stealLine struct {
	Where, Text, At string
}

const maxStealLines = 40

// bandsOf counts cvs (fractions, NaN for "no CV") into bands.
func bandsOf(cvs []float64) cvBands {
	var b cvBands
	for _, c := range cvs {
		if math.IsNaN(c) {
			b.NoCV++
			continue
		}
		b.Cells++
		if c <= 0.05 {
			b.Le5++
		}
		if c <= 0.10 {
			b.Le10++
		}
		if c <= 0.20 {
			b.Le20++
		}
	}
	b.Over20 = b.Cells - b.Le20
	share := func(n int) string {
		if b.Cells == 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(b.Cells))
	}
	b.Pct5, b.Pct10, b.P20 = share(b.Le5), share(b.Le10), share(b.Le20)
	return b
}

// perOperation reports whether unit is a time per operation that is not a
// percentile of a latency distribution: the figures the CV target is for.
func perOperation(unit string) bool {
	u := units.Parse(unit)
	return u.Kind == units.Time && u.Stat == "" && u.Per != "" && u.Per != "op"
}

func noise(set *cells.Set) noiseView {
	var nv noiseView
	var all, perOp []float64
	eachCell(set, func(_ *cells.Scenario, _ string, c *cells.Cell) {
		all = append(all, c.Summary.CV)
		if perOperation(c.Unit) {
			perOp = append(perOp, c.Summary.CV)
		}
	})
	nv.All, nv.PerOp = bandsOf(all), bandsOf(perOp)
	stops := map[string]int{}
	var order []string
	for _, a := range set.Annotations {
		switch a.Kind {
		case results.AnnotReps:
			_, why := repsShort(a.Text)
			if _, ok := stops[why]; !ok {
				order = append(order, why)
			}
			stops[why]++
			_, dropped, _ := repsDisturbed(a.Text)
			nv.DroppedRuns += dropped
			if shared, runs, ok := repsCoreShared(a.Text); ok {
				nv.CoreShared += shared
				nv.CoreRuns += runs
				nv.CoreCells++
				if 2*shared > runs {
					nv.CoreMostly++
				}
			}
			if text, share, ok := repsPreempted(a.Text); ok {
				nv.Preempted = append(nv.Preempted, preemptLine{Where: where(a), Text: text, Share: share})
			}
		case results.AnnotDisturbed:
			if n, ok := keptCount(a.Text); ok {
				nv.DisturbedKept += n
			} else if strings.Contains(a.Text, results.CrossSlowMode) {
				nv.CrossSlow++
			} else {
				nv.Disturbed++
				if strings.Contains(a.Text, results.SharedCoreRuns) {
					nv.DisturbedCore++
				}
				if m := markRE.FindStringSubmatch(a.Text); m != nil && nv.DisturbedMark == "" {
					nv.DisturbedMark = m[1] // the file's own mark, not this binary's
				}
			}
		case results.AnnotSteal:
			if len(nv.Steal) == maxStealLines {
				nv.StealMore++
				continue
			}
			nv.Steal = append(nv.Steal, stealLine{Where: where(a), Text: a.Text, At: fmt.Sprintf("%s:%d", a.File, a.Line)})
		}
	}
	for _, why := range order {
		nv.Stops = append(nv.Stops, keyCells{why, strconv.Itoa(stops[why])})
	}
	if nv.CoreRuns > 0 {
		nv.CoreSharedPct = fmt.Sprintf("%.0f%%", 100*float64(nv.CoreShared)/float64(nv.CoreRuns))
	}
	nv.CoreProbe, _, _ = osFloor(set, results.KeyCoreProbe)
	nv.Floor, nv.FloorP50, nv.FloorP99 = osFloor(set, results.KeyTimerFloorOS)
	if m := floorCPURE.FindStringSubmatch(nv.Floor); m != nil {
		nv.FloorCPU, _ = strconv.ParseFloat(m[1], 64)
	}
	nv.WakeFloor, nv.WakeP50, nv.WakeP99 = osFloor(set, results.KeyThreadWakeFloorOS)
	if nv.DisturbedMark == "" {
		nv.DisturbedMark = "the mark"
	}
	return nv
}

// where names an annotation's cell: scenario / row / column.
func where(a cells.Annotation) string {
	w := a.Scenario + " / " + a.Row
	if a.Column != "" {
		w += " / " + a.Column
	}
	return w
}

var repsCoreSharedRE = regexp.MustCompile(`core shared: (\d+) of (\d+) timed runs`)

// repsCoreShared reads a reps line's count of timed runs on a shared core
// (harness coreTotals.text, its twin): shared of runs; ok is false for a
// line without one (the probe was off).
func repsCoreShared(text string) (shared, runs int, ok bool) {
	return twoCounts(repsCoreSharedRE, text)
}

// twoCounts reads the two counts re's groups capture in text (0, 0, false
// when re does not match).
func twoCounts(re *regexp.Regexp, text string) (a, b int, ok bool) {
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, 0, false
	}
	a, _ = strconv.Atoi(m[1])
	b, _ = strconv.Atoi(m[2])
	return a, b, true
}

var repsPreemptedRE = regexp.MustCompile(`preempted: (\d+ of \d+ timed segments \([\d.]+%\)), ([\d.]+)% of the timed time`)

// repsPreempted reads a reps line's note of preempted timed segments
// (harness segTotals.text): the count text and the preempted segments'
// share of the timed time, in %.
func repsPreempted(text string) (count string, share float64, ok bool) {
	m := repsPreemptedRE.FindStringSubmatch(text)
	if m == nil {
		return "", 0, false
	}
	share, _ = strconv.ParseFloat(m[2], 64)
	return m[1], share, true
}

var (
	repsDisturbedRE = regexp.MustCompile(`disturbed: (\d+) repetitions not counted, (\d+) timed runs left out`)
	markRE          = regexp.MustCompile(`marked above ([\d.]+%)`)
	keptRE          = regexp.MustCompile(`^` + regexp.QuoteMeta(results.DisturbedKept) + ` (\d+) disturbed repetitions`)
)

// repsDisturbed reads a reps line's count of repetitions not counted and
// of timed runs left out (0, 0, false when it has none).
func repsDisturbed(text string) (reps, runs int, ok bool) {
	return twoCounts(repsDisturbedRE, text)
}

// keptCount reads a "kept:" disturbed line's count of repetitions written
// as figures after all.
func keptCount(text string) (int, bool) {
	m := keptRE.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

var repsRE = regexp.MustCompile(`^(\d+) repetitions: (.*)$`)

// repsShort condenses a reps line's text ("18 repetitions: cv 9.8% >
// target 5.0%; cap of 18 repetitions reached") to its count and why the
// repetitions stopped ("cap reached"). A text it does not know is kept
// whole as the reason, with count 0.
func repsShort(text string) (n int, why string) {
	m := repsRE.FindStringSubmatch(text)
	if m == nil {
		return 0, text
	}
	n, _ = strconv.Atoi(m[1])
	rest := m[2]
	switch {
	case strings.Contains(rest, "during the extra repetitions"):
		return n, "interrupted"
	case strings.Contains(rest, "<= target"):
		return n, "CV at target"
	case strings.Contains(rest, "cap of"):
		return n, "cap reached, CV over target"
	case strings.Contains(rest, "time budget"):
		return n, "time budget spent, CV over target"
	case strings.Contains(rest, "extra repetitions off"):
		return n, "extra repetitions off, CV over target"
	case strings.Contains(rest, "too few"):
		return n, "too few figures for a CV"
	case strings.Contains(rest, "failed"):
		return n, "a repetition failed"
	}
	return n, rest
}

var floorRE = regexp.MustCompile(`p50=(\d+)ns p99=(\d+)ns`)

// floorCPURE reads the timer floor's CPU time per sleep ("cpu=…ns/sleep").
var floorCPURE = regexp.MustCompile(`cpu=(\d+)ns/sleep`)

// osFloor returns the run's line of a machine floor (key
// timer-floor-os or thread-wake-floor-os) and its p50 and p99 in ns; the
// first file that has one wins (files of one run agree). A line without
// figures (a floor that could not be measured says why) gives 0, 0.
func osFloor(set *cells.Set, key string) (line string, p50, p99 float64) {
	for _, f := range set.Files {
		for _, kv := range f.Meta {
			if kv.Key != key {
				continue
			}
			p50, p99, _ = ParseFloor(kv.Value)
			return kv.Value, p50, p99
		}
	}
	return "", 0, 0
}

// ParseFloor reads the figures of a machine floor's config value, as
// harness writes them ("p50=…ns p99=…ns (how)"): ok is false for a value
// without them ("not measured: why").
func ParseFloor(value string) (p50, p99 float64, ok bool) {
	m := floorRE.FindStringSubmatch(value)
	if m == nil {
		return 0, 0, false
	}
	p50, _ = strconv.ParseFloat(m[1], 64)
	p99, _ = strconv.ParseFloat(m[2], 64)
	return p50, p99, true
}

// wakeFloorText sets a pool row's time per operation against the thread
// hand-off floor's p50: every such operation hands its work to a pool
// thread and is woken back at least once. "" when the unit is not a time
// per operation or there is no floor.
func wakeFloorText(unit string, median float64, nv *noiseView) string {
	if !perOperation(unit) || nv.WakeP50 <= 0 {
		return ""
	}
	ns := median * units.Parse(unit).Base * 1e9
	scale := units.Parse("ns").ScaleFor(nv.WakeP50)
	return fmt.Sprintf("×%s thread hand-off floor p50 (%s)", ratioText(ns/nv.WakeP50), scale.Format(nv.WakeP50))
}

// poolNote is the sentence under a pool scenario's heading (one whose
// rows hand their work to the reactor's thread pool, Row.PoolCell): which
// rows pay the thread hand-off floor, and how much it is on this machine.
// "" for a scenario without pool rows in the run.
func poolNote(sc *cells.Scenario, nv *noiseView) string {
	s, ok := scenarios.LookupBench(sc.Name)
	if !ok {
		return ""
	}
	var pool []string
	for _, r := range sc.Rows {
		if scenarios.Row(r).PoolCell(s) {
			pool = append(pool, r)
		}
	}
	if len(pool) == 0 {
		return ""
	}
	// Both sentences start and end alike; the middle says what the floor
	// is here, or why there is none.
	lead := "The " + strings.Join(pool, ", ") + " rows run each operation's work on the reactor's thread pool: a hand-off to a sleeping pool thread on another CPU and a wake back"
	const tail = " The goroutine rows compute inline or block their own thread and do not pay it."
	if nv.WakeP50 <= 0 {
		why := "the run did not measure it (its results file has no " + results.KeyThreadWakeFloorOS + " line)"
		if nv.WakeFloor != "" {
			why = "the run could not measure it (" + nv.WakeFloor + ")"
		}
		return lead + ", which costs what this machine charges for waking a thread (the thread hand-off floor); " + why + "." + tail
	}
	ns := units.Parse("ns")
	return lead + fmt.Sprintf(". On this machine a round trip in which both threads sleep costs p50 %s, p99 %s (%s: two bare OS threads waking each other through a futex), by design, as any thread pool's (libuv's too); their per-operation figures are shown against its p50. An operation whose caller sleeps until it is done (one in flight, nothing else to run) pays about that; one whose loop stays busy meanwhile pays only the pool thread's wake, about half; with several in flight the hand-offs overlap and a figure per operation can read well below it.",
		ns.ScaleFor(nv.WakeP50).Format(nv.WakeP50), ns.ScaleFor(nv.WakeP99).Format(nv.WakeP99), results.KeyThreadWakeFloorOS) + tail
}

// floorText sets a latency cell's median against the OS timer floor: a
// p99 or max against the floor's p99, any other statistic against its
// p50. "" when the unit is not a latency or there is no floor.
//
// A CPU time per wake (cpu-ns/wake) is set against the floor's CPU time
// per sleep instead: at a light load a row's loop sleeps between wakes as
// the floor's thread does, and what the kernel (and a hypervisor) charge
// for a sleep and its wake is most of the figure.
func floorText(unit string, median float64, nv *noiseView) string {
	u := units.Parse(unit)
	if u.Kind == units.Time && strings.HasPrefix(u.Written, "cpu-") && u.Per == "wake" && nv.FloorCPU > 0 {
		ns := median * u.Base * 1e9
		return fmt.Sprintf("×%s OS floor CPU per sleep (%s)", ratioText(ns/nv.FloorCPU), units.Parse("ns").ScaleFor(nv.FloorCPU).Format(nv.FloorCPU))
	}
	if u.Kind != units.Time || u.Stat == "" || nv.FloorP50 <= 0 {
		return ""
	}
	floor, which := nv.FloorP50, "p50"
	if u.Stat == "max" || (strings.HasPrefix(u.Stat, "p") && statAbove(u.Stat, 90)) {
		floor, which = nv.FloorP99, "p99"
	}
	ns := median * u.Base * 1e9
	scale := units.Parse("ns").ScaleFor(floor)
	return fmt.Sprintf("×%s OS floor %s (%s)", ratioText(ns/floor), which, scale.Format(floor))
}

// statAbove reports whether a pNN statistic is above pct.
func statAbove(stat string, pct float64) bool {
	v, err := strconv.ParseFloat(stat[1:], 64)
	return err == nil && v > pct
}

// preemptFlag is the share of a cell's timed time in preempted segments
// (%) from which its table entry is flagged: a tenth of the figure.
const preemptFlag = 10

// cellNoise fills a cell's repetition and steal details from its
// annotations.
func cellNoise(cv *cellView, annots []cells.Annotation) {
	steals, disturbed, crossSlow := 0, 0, 0
	for _, a := range annots {
		switch a.Kind {
		case results.AnnotReps:
			n, why := repsShort(a.Text)
			if n > 0 {
				cv.Reps = fmt.Sprintf("%d reps: %s", n, why)
			} else {
				cv.Reps = why
			}
			cv.Title += "; " + a.Text
			if _, share, ok := repsPreempted(a.Text); ok && share >= preemptFlag {
				cv.Flags = append(cv.Flags, fmt.Sprintf("%.0f%% of the timed time in preempted segments", share))
			}
		case results.AnnotSteal:
			steals++
			cv.Title += "; steal: " + a.Text
		case results.AnnotDisturbed:
			if n, ok := keptCount(a.Text); ok {
				cv.Flags = append(cv.Flags, fmt.Sprintf("%d disturbed rep(s) kept as figures", n))
			} else if strings.Contains(a.Text, results.CrossSlowMode) {
				crossSlow++
			} else {
				disturbed++
			}
			cv.Title += "; disturbed: " + a.Text
		}
	}
	if disturbed > 0 {
		cv.Flags = append(cv.Flags, fmt.Sprintf("%d disturbed rep(s) not counted", disturbed))
	}
	if crossSlow > 0 {
		cv.Flags = append(cv.Flags, fmt.Sprintf("%d rep(s) in the %s not counted", crossSlow, results.CrossSlowMode))
	}
	if steals > 0 {
		cv.Flags = append(cv.Flags, fmt.Sprintf("steal in %d rep(s)", steals))
	}
}
