package report

import (
	"html"
	"math"
	"strings"
	"testing"

	"github.com/corobench/corobench/internal/results"
)

// TestCVBands counts hand-placed CVs: the bands are cumulative and a
// bound belongs to its band (5% exactly is ≤ 5%).
func TestCVBands(t *testing.T) {
	b := bandsOf([]float64{0.01, 0.05, 0.06, 0.10, 0.15, 0.25, math.NaN(), 0.2000001})
	want := cvBands{Cells: 7, Le5: 2, Le10: 4, Le20: 5, Over20: 2, NoCV: 1, Pct5: "29%", Pct10: "57%", P20: "71%"}
	if b != want {
		t.Errorf("bandsOf = %+v, want %+v", b, want)
	}
	if e := bandsOf(nil); e.Cells != 0 || e.Pct5 != "—" {
		t.Errorf("empty: %+v", e)
	}
}

func TestPerOperation(t *testing.T) {
	for unit, want := range map[string]bool{
		"ns/switch": true, "ns/spawn": true, "ns/roundtrip": true,
		"p50-ns/wake": false, "max-ns/req": false, "req/s": false,
		"B/coroutine": false, "allocs/switch": false,
	} {
		if got := perOperation(unit); got != want {
			t.Errorf("perOperation(%q) = %v, want %v", unit, got, want)
		}
	}
}

// TestRepsShort reads the harness's reps texts (harness/adapt.go repsText).
func TestRepsShort(t *testing.T) {
	for text, want := range map[string]struct {
		n   int
		why string
	}{
		"6 repetitions: cv 1.3% <= target 5.0%":                                                                 {6, "CV at target"},
		"18 repetitions: cv 9.8% > target 5.0%; cap of 18 repetitions reached":                                  {18, "cap reached, CV over target"},
		"7 repetitions: cv 9.8% > target 5.0%; time budget of 5m0s for extra repetitions spent":                 {7, "time budget spent, CV over target"},
		"5 repetitions: cv 9.8% > target 5.0%; extra repetitions off (--max-count or --adapt-budget)":           {5, "extra repetitions off, CV over target"},
		"1 repetitions: too few figures for a cv":                                                               {1, "too few figures for a CV"},
		"3 repetitions: cv 2.0%; a repetition failed, so no more were run":                                      {3, "a repetition failed"},
		"4 repetitions: cv 9.0% > target 5.0%; interrupted by SIGINT during the extra repetitions after 2 of 9": {4, "interrupted"},
		"something else": {0, "something else"},
	} {
		n, why := repsShort(text)
		if n != want.n || why != want.why {
			t.Errorf("repsShort(%q) = %d, %q; want %d, %q", text, n, why, want.n, want.why)
		}
	}
}

// TestFloorText sets latencies against a floor of p50 15 µs, p99 60 µs,
// and a CPU time per wake against its CPU time per sleep, 20 µs; a CPU
// time per request (Echo's server core) is no wake and gets none.
func TestFloorText(t *testing.T) {
	nv := &noiseView{FloorP50: 15000, FloorP99: 60000, FloorCPU: 20000}
	for _, c := range []struct {
		unit   string
		median float64
		want   string
	}{
		{"p50-ns/wake", 30000, "×2.00 OS floor p50 (15.0 µs)"},
		{"p99-ns/wake", 120000, "×2.00 OS floor p99 (60.0 µs)"},
		{"max-ns/wake", 6e6, "×100 OS floor p99 (60.0 µs)"},
		{"p50-us/req", 45, "×3.00 OS floor p50 (15.0 µs)"},
		{"ns/switch", 5, ""},
		{"req/s", 20000, ""},
		{"cpu-ns/wake", 30000, "×1.50 OS floor CPU per sleep (20.0 µs)"},
		{"cpu-ns/req", 30000, ""},
	} {
		if got := floorText(c.unit, c.median, nv); got != c.want {
			t.Errorf("floorText(%q, %v) = %q, want %q", c.unit, c.median, got, c.want)
		}
	}
	if got := floorText("p50-ns/wake", 30000, &noiseView{}); got != "" {
		t.Errorf("without a floor: %q, want nothing", got)
	}
	if got := floorText("cpu-ns/wake", 30000, &noiseView{FloorP50: 15000, FloorP99: 60000}); got != "" {
		t.Errorf("a floor line without its CPU time: %q, want nothing", got)
	}
}

// TestNoiseSection builds a page from a file with reps and steal lines
// and a timer-floor-os line, and checks the noise section's counts, the
// marked cell and the per-cell lines against the hand-computed CVs:
// Switch stackful-asm 10,10,10 (CV 0), stackless 10,12 (CV √2/11 =
// 12.9%), Timer stackful-asm p50 30,30,30 µs, p99 120,120,120 µs and
// CPU 40,40,40 µs per wake (against the floor's 20 µs per sleep).
func TestNoiseSection(t *testing.T) {
	text := `goos: linux
benchtime: 100ms
timer-floor-os: p50=15000ns p99=60000ns cpu=20000ns/sleep (2000 sleeps of 50µs, clock_nanosleep, slack 1ns, cpu1)
BenchmarkSwitch/impl=stackful-asm 100 10 ns/switch
BenchmarkSwitch/impl=stackful-asm 100 10 ns/switch
BenchmarkSwitch/impl=stackful-asm 100 10 ns/switch
BenchmarkSwitch/impl=stackless 100 10 ns/switch
BenchmarkSwitch/impl=stackless 100 12 ns/switch
# corobench:steal BenchmarkSwitch/impl=stackless: rep 1: steal 10ms = 6.6% of 153ms wall on cpu1 (marked above 1%)
BenchmarkTimer/impl=stackful-asm/n=1 1 30000 p50-ns/wake 120000 p99-ns/wake 40000 cpu-ns/wake
BenchmarkTimer/impl=stackful-asm/n=1 1 30000 p50-ns/wake 120000 p99-ns/wake 40000 cpu-ns/wake
BenchmarkTimer/impl=stackful-asm/n=1 1 30000 p50-ns/wake 120000 p99-ns/wake 40000 cpu-ns/wake
# corobench:disturbed BenchmarkSwitch/impl=stackful-asm: rep 1: 20 ns/switch not counted: 4 of 5 timed runs disturbed (runqueue wait 60% 70% 80% 90% of wall, marked above 10%)
# corobench:reps BenchmarkSwitch/impl=stackful-asm: 4 repetitions: cv 0.0% <= target 5.0%; disturbed: 1 repetitions not counted, 3 timed runs left out of the counted ones' medians
# corobench:reps BenchmarkSwitch/impl=stackless: 2 repetitions: cv 12.9% > target 5.0%; cap of 2 repetitions reached
# corobench:reps BenchmarkTimer/impl=stackful-asm/n=1: 3 repetitions: cv 0.0% <= target 5.0%
`
	html := buildTestPage(t, text)
	sec := noiseSection(t, html)
	// Per-operation: the two Switch cells (0 and 12.9%) and the Timer's
	// CPU per wake (0). All: those and the Timer's two latencies (both 0).
	for _, want := range []string{
		`<th>per-operation</th><td>3</td><td>2 (67%)</td><td>2 (67%)</td><td>3 (100%)</td><td>0</td><td>0</td>`,
		`<th>all</th><td>5</td><td>4 (80%)</td><td>4 (80%)</td><td>5 (100%)</td><td>0</td><td>0</td>`,
		`CV at target: 2 cell(s)`,
		`cap reached, CV over target: 1 cell(s)`,
		`<td>Switch / stackless</td><td>rep 1: steal 10ms = 6.6% of 153ms wall on cpu1 (marked above 1%)</td><td><code>`, `/results.txt:9</code>`,
		`p50=15000ns p99=60000ns`,
		`1 repetition(s) not counted: most of their process`,
		`for more than 10% of their wall time`, // the file's mark, not the binary's
		`left 3 disturbed timed run(s) out of their medians`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("noise section lacks %q:\n%s", want, sec)
		}
	}
	sw := html[strings.Index(html, `<section id="s-switch">`):]
	sw = sw[:strings.Index(sw, "</section>")]
	rows := strings.Split(sw, `<th class="row">`)
	if len(rows) != 3 {
		t.Fatalf("switch table has %d rows, want 2", len(rows)-1)
	}
	if strings.Contains(rows[1], "noisy") || !strings.Contains(rows[1], "4 reps: CV at target") || !strings.Contains(rows[1], "1 disturbed rep(s) not counted") {
		t.Errorf("stackful-asm (CV 0) row:\n%s", rows[1])
	}
	for _, want := range []string{`c-fig noisy`, `CV 12.9% &gt; 5%`, `2 reps: cap reached, CV over target`, `steal in 1 rep(s)`} {
		if !strings.Contains(rows[2], want) {
			t.Errorf("stackless (CV 12.9%%, one steal mark) row lacks %q:\n%s", want, rows[2])
		}
	}
	tm := html[strings.Index(html, `<section id="s-timer">`):]
	tm = tm[:strings.Index(tm, "</section>")]
	for _, want := range []string{"×2.00 OS floor p50 (15.0 µs)", "×2.00 OS floor p99 (60.0 µs)", "×2.00 OS floor CPU per sleep (20.0 µs)"} {
		if !strings.Contains(tm, want) {
			t.Errorf("timer section lacks %q", want)
		}
	}
}

// A repetition left out in the cross-CPU slow mode is counted apart from
// the runqueue-disturbed ones, in the noise section and on its cell.
func TestNoiseSectionCrossSlow(t *testing.T) {
	text := `goos: linux
benchtime: 100ms
BenchmarkYield/impl=goroutine-multi/n=64 100 90 ns/switch
BenchmarkYield/impl=goroutine-multi/n=64 100 91 ns/switch
# corobench:disturbed BenchmarkYield/impl=goroutine-multi/n=64: rep 1: 286.5 ns/switch not counted: cross-cpu slow mode: round trip cpu0-cpu1 295ns before, 289ns after (both above 3× the run's fast level, 75ns and 75ns)
# corobench:disturbed BenchmarkYield/impl=goroutine-multi/n=64: rep 2: 300 ns/switch not counted: cross-cpu slow mode: round trip cpu0-cpu1 70ns before, 330ns after (after above 3× the run's fast level, 75ns)
# corobench:reps BenchmarkYield/impl=goroutine-multi/n=64: 4 repetitions: cv 0.8% <= target 5.0%; disturbed: 2 repetitions not counted, 0 timed runs left out of the counted ones' medians (2 of the repetitions not counted ran in the cross-cpu slow mode)
`
	html := buildTestPage(t, text)
	sec := noiseSection(t, html)
	for _, want := range []string{"No repetition was marked disturbed by a runqueue wait.", "2 repetition(s) of multi-P cells not counted in the cross-CPU slow mode"} {
		if !strings.Contains(sec, want) {
			t.Errorf("noise section lacks %q:\n%s", want, sec)
		}
	}
	y := html[strings.Index(html, `<section id="s-yield">`):]
	y = y[:strings.Index(y, "</section>")]
	if !strings.Contains(y, "2 rep(s) in the cross-cpu slow mode not counted") || strings.Contains(y, "disturbed rep(s) not counted") {
		t.Errorf("yield table: want the cell flagged for the slow mode only:\n%s", y)
	}
}

// A reps line's count of preempted segments (harness segTotals.text) is
// listed in the noise section, and a cell with a tenth or more of its
// timed time in them is flagged in its table; a cell without one is not.
func TestNoiseSectionPreempted(t *testing.T) {
	text := `goos: linux
benchtime: 100ms
BenchmarkSpawn/impl=stackful-asm/alive=1/pool=cold 1000 1800 ns/spawn
BenchmarkSpawn/impl=stackful-asm/alive=1/pool=cold 1000 1900 ns/spawn
BenchmarkSpawn/impl=stackless/alive=1/pool=cold 1000 300 ns/spawn
BenchmarkSpawn/impl=stackless/alive=1/pool=cold 1000 300 ns/spawn
# corobench:reps BenchmarkSpawn/impl=stackful-asm/alive=1/pool=cold: 2 repetitions: cv 3.8% <= target 5.0%; preempted: 104 of 9000 timed segments (1.2%), 16.2% of the timed time
# corobench:reps BenchmarkSpawn/impl=stackless/alive=1/pool=cold: 2 repetitions: cv 0.0% <= target 5.0%; preempted: 6 of 15000 timed segments (0.0%), 0.1% of the timed time
`
	html := buildTestPage(t, text)
	sec := noiseSection(t, html)
	for _, want := range []string{
		"Spawn / stackful-asm / alive=1/pool=cold: 104 of 9000 timed segments (1.2%), 16.2%",
		"Spawn / stackless / alive=1/pool=cold: 6 of 15000 timed segments (0.0%), 0.1%",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("noise section lacks %q:\n%s", want, sec)
		}
	}
	sp := html[strings.Index(html, `<section id="s-spawn">`):]
	sp = sp[:strings.Index(sp, "</section>")]
	if n := strings.Count(sp, "of the timed time in preempted segments"); n != 1 || !strings.Contains(sp, "16% of the timed time in preempted segments") {
		t.Errorf("spawn table: %d preemption flags, want one, on stackful-asm (16%%):\n%s", n, sp)
	}
}

// TestNoiseSectionSharedCore: the noise section sums the reps lines'
// counts of timed runs on a shared core (3+1 of 5+5: 40%), counts the
// cells with one (2) and those mostly shared (1: 3 of 5), and shows the
// core-probe line; a file without the counts says the probe was off.
func TestNoiseSectionSharedCore(t *testing.T) {
	text := `goos: linux
benchtime: 100ms
core-probe: recorded around every timed run, not a mark (--core-probe): each cell's reps line counts its timed runs with a reading over 1.10 × the 2nd percentile of all the run's ratios (1.10 when that is under 1), the run log's last core probe line gives it
BenchmarkSwitch/impl=stackful-asm 1000 7 ns/switch
BenchmarkSwitch/impl=stackful-asm 1000 8 ns/switch
BenchmarkSwitch/impl=stackless 1000 2 ns/switch
BenchmarkSwitch/impl=stackless 1000 2 ns/switch
# corobench:reps BenchmarkSwitch/impl=stackful-asm: 2 repetitions: cv 9.4% > target 5.0%; extra repetitions off (--max-count or --adapt-budget); core shared: 3 of 5 timed runs (a core probe reading over 1.163, 1.10 × the 2nd percentile of the run's 20 readings, 1.058, or 1.10 if that is under 1)
# corobench:reps BenchmarkSwitch/impl=stackless: 2 repetitions: cv 0.0% <= target 5.0%; core shared: 1 of 5 timed runs (a core probe reading over 1.163, 1.10 × the 2nd percentile of the run's 20 readings, 1.058, or 1.10 if that is under 1)
`
	sec := noiseSection(t, buildTestPage(t, text))
	for _, want := range []string{
		"4 of 10 timed runs (40%) read the core probe over the run's limit",
		"1 of 2 cells had more than half of their timed runs so",
		"core-probe: recorded around every timed run",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("noise section lacks %q:\n%s", want, sec)
		}
	}
	// With --core-mark, a disturbed line that names shared-core runs is
	// counted as such; one disturbed by a runqueue wait only is not.
	marked := text + "# corobench:disturbed BenchmarkSwitch/impl=stackful-asm: rep 2: 9 ns/switch not counted: 4 of 5 timed runs disturbed (runqueue wait 0% 1% 0% 0% of wall, marked above 15%; 4 " + results.SharedCoreRuns + " (core probe over the limit on the core-probe line))\n" +
		"# corobench:disturbed BenchmarkSwitch/impl=stackless: rep 2: 3 ns/switch not counted: 5 of 5 timed runs disturbed (runqueue wait 20% 30% 40% 50% 60% of wall, marked above 15%)\n"
	if sec := noiseSection(t, buildTestPage(t, marked)); !strings.Contains(sec, "2 repetition(s) not counted") || !strings.Contains(sec, "so in 1 of them") {
		t.Errorf("core-marked disturbed lines: noise section:\n%s", sec)
	}
	off := strings.Replace(text, "core-probe: recorded", "x-other: recorded", 1)
	off = repsCoreSharedRE.ReplaceAllString(off, "")
	if sec := noiseSection(t, buildTestPage(t, off)); !strings.Contains(sec, "Not recorded: the run had the core probe off") {
		t.Errorf("probe off: noise section:\n%s", sec)
	}
}

// noiseSection is the page's noise section, which comes just before its
// problems section.
func noiseSection(t *testing.T, html string) string {
	t.Helper()
	start, end := strings.Index(html, `<section id="noise">`), strings.Index(html, `<section id="problems">`)
	if start < 0 || end < start {
		t.Fatalf("no noise section before the problems section")
	}
	return html[start:end]
}

// The thread-wake-floor-os line is shown in the noise section, and the
// offload section sets its pool rows (stackful-asm) against its p50,
// 50 µs: 100 µs/chunk is ×2.00; the goroutine row is not set against
// it. A file without the line (a run from before it was measured) and a
// file whose line says it could not be measured still render, and say
// so in both places.
func TestThreadWakeFloor(t *testing.T) {
	cells := `BenchmarkOffload/impl=stackful-asm/c=1/kb=16 100 100000 ns/chunk
BenchmarkOffload/impl=stackful-asm/c=1/kb=16 100 100000 ns/chunk
BenchmarkOffload/impl=goroutine-single/c=1/kb=16 100 300 ns/chunk
BenchmarkOffload/impl=goroutine-single/c=1/kb=16 100 300 ns/chunk
`
	offload := func(page string) string {
		t.Helper()
		i := strings.Index(page, `<section id="s-offload">`)
		if i < 0 {
			t.Fatal("no offload section")
		}
		s := page[i:]
		return s[:strings.Index(s, "</section>")]
	}
	const line = "p50=50000ns p99=90000ns (2000 round trips of two OS threads through a futex, cpu1<->cpu0)"
	page := buildTestPage(t, "goos: linux\nbenchtime: 100ms\n"+results.KeyThreadWakeFloorOS+": "+line+"\n"+cells)
	if sec := noiseSection(t, page); !strings.Contains(sec, "OS thread hand-off floor</th><td><code>"+html.EscapeString(line)) {
		t.Errorf("noise section lacks the floor's line:\n%s", sec)
	}
	off := offload(page)
	for _, want := range []string{
		"The stackful-asm rows run each operation",
		"costs p50 50.0 µs, p99 90.0 µs (thread-wake-floor-os",
		"×2.00 thread hand-off floor p50 (50.0 µs)",
	} {
		if !strings.Contains(off, want) {
			t.Errorf("offload section lacks %q:\n%s", want, off)
		}
	}
	if n := strings.Count(off, "thread hand-off floor p50"); n != 1 {
		t.Errorf("%d cells set against the floor, want 1 (stackful-asm's, not goroutine-single's)", n)
	}

	for _, c := range []struct{ name, meta, noise, section string }{
		{"absent", "", "not measured by this run", "the run did not measure it"},
		{"failed", results.KeyThreadWakeFloorOS + ": not measured: thread wake floor: pinning to cpu 1: EINVAL\n",
			"<code>not measured: thread wake floor: pinning to cpu 1: EINVAL</code>", "the run could not measure it (not measured: thread wake floor: pinning"},
	} {
		page := buildTestPage(t, "goos: linux\nbenchtime: 100ms\n"+c.meta+cells)
		if sec := noiseSection(t, page); !strings.Contains(sec, c.noise) {
			t.Errorf("%s: noise section lacks %q:\n%s", c.name, c.noise, sec)
		}
		off := offload(page)
		if !strings.Contains(off, c.section) {
			t.Errorf("%s: offload section lacks %q:\n%s", c.name, c.section, off)
		}
		if strings.Contains(off, "thread hand-off floor p50") {
			t.Errorf("%s: a cell is set against a floor the run does not have", c.name)
		}
	}
}

// ParseFloor reads the figures of both floors' lines and none from a
// line that says why there are none.
func TestParseFloor(t *testing.T) {
	if p50, p99, ok := ParseFloor("p50=15687ns p99=25407ns (456 sleeps)"); !ok || p50 != 15687 || p99 != 25407 {
		t.Errorf("ParseFloor = %v, %v, %v", p50, p99, ok)
	}
	if _, _, ok := ParseFloor("not measured: futex: ENOSYS"); ok {
		t.Error("ParseFloor read figures from a line without any")
	}
}
