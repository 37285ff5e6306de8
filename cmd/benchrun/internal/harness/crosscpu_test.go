package harness

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/cpulist"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// twoCPUs returns two CPUs this process may use, or skips the test.
func twoCPUs(t *testing.T) (a, b int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpus := cpulist.Of(&set)
	if len(cpus) < 2 {
		t.Skip("needs 2 CPUs allowed")
	}
	return cpus[0], cpus[len(cpus)-1]
}

// threadAffinities maps each thread of this process to its CPU list.
func threadAffinities(t *testing.T) map[int]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil {
			out[tid] = fmtCPUs(set)
		}
	}
	return out
}

// fmtCPUs is set as a comparable string.
func fmtCPUs(set unix.CPUSet) string {
	var b strings.Builder
	for _, c := range cpulist.Of(&set) {
		b.WriteString(strconv.Itoa(c) + ",")
	}
	return b.String()
}

// The probe measures a round trip between two CPUs, and leaves no thread
// of the process pinned to either (its threads exit with it).
func TestCrossCPURoundTrip(t *testing.T) {
	a, b := twoCPUs(t)
	before := threadAffinities(t)
	d, err := crossCPURoundTrip(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// A cache-line round trip takes tens to hundreds of ns; a whole
	// millisecond per trip would mean the two sides never ran at once.
	if d <= 0 || d >= time.Millisecond {
		t.Errorf("round trip cpu%d-cpu%d = %v, want in (0, 1ms)", a, b, d)
	}
	var single unix.CPUSet
	single.Set(b)
	// A locked thread exits after its goroutine has returned, so the
	// probe can return (its WaitGroup done) a moment before the thread is
	// gone: wait for it, with a liveness bound far above a thread's exit.
	var left []int
	for try := 0; try < 200; try++ {
		left = left[:0]
		for tid, cpus := range threadAffinities(t) {
			if _, old := before[tid]; !old && cpus == fmtCPUs(single) {
				left = append(left, tid)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("threads %v were left pinned to cpu%d 2 s after the probe", left, b)
}

// With one P, as benchrun's parent has once it pins itself to one CPU, the
// probe still ends: it takes a second P while it runs (two goroutines
// spinning on one P would take ~10 ms per round trip, 50 s for the probe).
// The guard is a liveness bound, far above any probe's time.
func TestCrossCPURoundTripOnOneP(t *testing.T) {
	a, b := twoCPUs(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan error, 1)
	go func() {
		_, err := crossCPURoundTrip(a, b)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the probe did not end within 20 s on one P: its two spinning sides cannot run at once")
	}
}

// A CPU the process may not use is an error naming it, not a hang.
func TestCrossCPURoundTripBadCPU(t *testing.T) {
	a, _ := twoCPUs(t)
	const bad = 1000 // beyond any CPU this VM has
	for _, pair := range [][2]int{{a, bad}, {bad, a}} {
		_, err := crossCPURoundTrip(pair[0], pair[1])
		if err == nil || !strings.Contains(err.Error(), "cpu1000") {
			t.Errorf("crossCPURoundTrip(%d, %d) error %v, want one naming cpu1000", pair[0], pair[1], err)
		}
	}
}

// The run log records the round trip beside every multi-P cell, and
// beside no single-P cell; with pinning off it records none.
func TestRunLogRecordsCrossCPURoundTrip(t *testing.T) {
	a, b := twoCPUs(t)
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	for _, pin := range []bool{true, false} {
		modes := map[scenarios.Row]string{scenarios.GoroutineSingle: "ok", scenarios.GoroutineMulti: "ok"}
		sum, _ := runNoise(t, bodies.PingPong, rows, 1, modes, func(o *Options) { o.Pin = pin })
		log, err := os.ReadFile(sum.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		want := "cross-cpu round trip cpu" + strconv.Itoa(a) + "-cpu" + strconv.Itoa(b) + " "
		for _, line := range strings.Split(string(log), "\n") {
			if !strings.Contains(line, " rep 0: ok") {
				continue
			}
			has := strings.Contains(line, want)
			multi := strings.Contains(line, "impl="+string(scenarios.GoroutineMulti))
			if has != (multi && pin) {
				t.Errorf("pin=%v: log line %q: has the round trip %v, want %v", pin, line, has, multi && pin)
			}
		}
	}
}

// The slow mode is judged against the median of the readings so far (the
// new one included) that are at most twice the lowest; hand-computed: a
// reading is slow when more than 3× that level.
func TestCrossModes(t *testing.T) {
	ns := time.Nanosecond
	cases := []struct {
		name  string
		reads []time.Duration
		slow  []bool
		level []time.Duration
	}{
		{
			name:  "fast then slow",
			reads: []time.Duration{100 * ns, 90 * ns, 310 * ns, 271 * ns, 270 * ns},
			// [100] → 100; [90 100] → 90 (lower middle); then the
			// cluster stays [90 100] (≤ 180): 310 and 271 > 270,
			// 270 is not.
			slow:  []bool{false, false, true, true, false},
			level: []time.Duration{100 * ns, 90 * ns, 90 * ns, 90 * ns, 90 * ns},
		},
		{
			name:  "the slow mode in the majority",
			reads: []time.Duration{80 * ns, 90 * ns, 300 * ns, 310 * ns, 320 * ns, 85 * ns, 330 * ns},
			// The cluster is [80] (≤ 160), then [80 90], [80 85 90]:
			// level 80, 3× = 240, while the fast readings hold at least
			// crossMinCluster (2 of 5 when 320 comes, 3 of 7 at the
			// end; with 85, the lower middle of three is 85). (A lower
			// quartile would be 300 by the fifth reading, and judge 320
			// fast.)
			slow:  []bool{false, false, true, true, true, false, true},
			level: []time.Duration{80 * ns, 80 * ns, 80 * ns, 80 * ns, 80 * ns, 85 * ns, 85 * ns},
		},
		{
			name:  "the slow mode in a large majority",
			reads: []time.Duration{80 * ns, 300 * ns, 310 * ns, 320 * ns},
			// The fast reading is 1 of 3 when 310 comes (level 80: slow),
			// 1 of 4 with 320, under crossMinCluster: the anchor moves
			// up to 300 (the 25th percentile of four), the level is the
			// lower middle of all four, and nothing is slow.
			slow:  []bool{false, true, true, false},
			level: []time.Duration{80 * ns, 80 * ns, 80 * ns, 300 * ns},
		},
		{
			name:  "a run that starts slow",
			reads: []time.Duration{400 * ns, 380 * ns, 80 * ns, 85 * ns, 390 * ns},
			// Nothing is slow until the fast readings come: [400] → 400;
			// [380 400] → 380; one fast reading of three holds
			// crossMinCluster: [80] → 80; then [80 85] → 80: 390 > 240.
			slow:  []bool{false, false, false, false, true},
			level: []time.Duration{400 * ns, 380 * ns, 80 * ns, 80 * ns, 80 * ns},
		},
		{
			name:  "a zero level marks nothing",
			reads: []time.Duration{0, 5 * ns},
			slow:  []bool{false, false},
			level: []time.Duration{0, 0},
		},
	}
	// A lone reading far below the fast mode (35 ns among 102–275 ns, as
	// in 20261129T034223Z) does not make a cluster of its own: the
	// anchor is the 5th percentile, 108 ns here, and the level the
	// median of the readings up to 216 ns; nothing is slow.
	lone := []time.Duration{35 * ns}
	for i := range 39 {
		lone = append(lone, time.Duration(105+3*i)*ns) // 105–219 ns
	}
	loneSlow := make([]bool, len(lone))
	var m crossModes
	for _, d := range lone {
		m.add(d)
	}
	if got := m.level(); got != 159*ns {
		t.Errorf("a lone low reading: level %v, want 159ns (the median of 35 and 105–216 ns)", got)
	}
	cases = append(cases, struct {
		name  string
		reads []time.Duration
		slow  []bool
		level []time.Duration
	}{name: "a lone low reading, then fast ones", reads: []time.Duration{219 * ns, 300 * ns}, slow: loneSlow[:2], level: []time.Duration{159 * ns, 159 * ns}})
	// A minority mode below the fast one (6 readings of 50–55 ns among
	// 94 of 110–296 ns, as on 2026-12-07): its 5th percentile anchor
	// holds 6% of the readings, under crossMinCluster, so the anchor moves
	// to the 10th percentile (118 ns) and the level is the median of the
	// readings up to 236 ns; 300 ns is not slow, 700 ns is.
	var minority crossModes
	for i := range 6 {
		minority.add(time.Duration(50+i) * ns)
	}
	for i := range 94 {
		minority.add(time.Duration(110+2*i) * ns) // 110–296 ns
	}
	if got := minority.level(); got != 166*ns {
		t.Errorf("a minority below the fast mode: level %v, want 166ns", got)
	}
	if slow, _ := minority.add(300 * ns); slow {
		t.Error("a minority below the fast mode: 300ns judged slow")
	}
	if slow, _ := minority.add(700 * ns); !slow {
		t.Error("a minority below the fast mode: 700ns not judged slow")
	}
	for _, c := range cases {
		var m crossModes
		if c.name == "a lone low reading, then fast ones" {
			for _, d := range lone {
				m.add(d)
			}
		}
		for i, d := range c.reads {
			slow, level := m.add(d)
			if slow != c.slow[i] || level != c.level[i] {
				t.Errorf("%s: reading %d (%v): slow %v at level %v, want %v at %v", c.name, i, d, slow, level, c.slow[i], c.level[i])
			}
		}
	}
}

// A repetition is in the slow mode when either of its readings is slow;
// its readings count into the level in the order they were taken; a probe
// that failed counts nothing and marks nothing.
func TestCrossModesJudge(t *testing.T) {
	var m crossModes
	r1 := crossReading{measured: true, a: 0, b: 1, before: 100, after: 90}
	m.judge(&r1)
	if r1.slow() || strings.Contains(r1.text(), "slow") {
		t.Errorf("100/90 ns on a fresh run: slow %v, text %q; want fast", r1.slow(), r1.text())
	}
	// Before: [90 100 310] → cluster [90 100] → 90, 310 > 270; after:
	// [90 95 100 310] → cluster [90 95 100] → 95.
	r2 := crossReading{measured: true, a: 0, b: 1, before: 310, after: 95}
	m.judge(&r2)
	if !r2.slow() || !r2.slowBefore || r2.slowAfter {
		t.Errorf("310/95 ns: slow %v (before %v, after %v), want slow before only", r2.slow(), r2.slowBefore, r2.slowAfter)
	}
	if want := "cross-cpu round trip cpu0-cpu1 310ns before, 95ns after: cross-cpu slow mode (before above 3× the run's fast level, 90ns)"; r2.text() != want {
		t.Errorf("log text %q, want %q", r2.text(), want)
	}
	// After only: [90 95 100 100 310] → cluster [90 95 100 100] → 95;
	// then 400 > 285 at the same level.
	r3 := crossReading{measured: true, a: 0, b: 1, before: 100, after: 400}
	m.judge(&r3)
	if !r3.slow() || r3.slowBefore || !r3.slowAfter || !strings.Contains(r3.notCounted(), "(after above 3× the run's fast level, 95ns)") {
		t.Errorf("100/400 ns: before %v after %v, %q; want slow after only, against 95ns", r3.slowBefore, r3.slowAfter, r3.notCounted())
	}
	failed := crossReading{measured: true, before: 9999, err: errors.New("no cpu")}
	m.judge(&failed)
	if failed.slow() || len(m.sorted) != 6 {
		t.Errorf("failed probe: slow %v, %d readings counted; want not slow and none counted", failed.slow(), len(m.sorted)-6)
	}
	var single crossReading // a cell on one P: no probes
	m.judge(&single)
	if single.slow() || single.text() != "" || len(m.sorted) != 6 {
		t.Errorf("unmeasured reading: slow %v, text %q", single.slow(), single.text())
	}
	// A size headline is not moved by the mode: recorded, not slow.
	size := crossReading{measured: true, a: 0, b: 1, before: 500, after: 500, sizeOnly: true}
	m.judge(&size)
	if size.slow() || !strings.HasSuffix(size.text(), ", not judged: the headline is a size") {
		t.Errorf("size headline in the slow mode: slow %v, text %q; want recorded, not slow", size.slow(), size.text())
	}
}

func TestSizeFigure(t *testing.T) {
	for unit, want := range map[string]bool{"B/coroutine": true, "heap-B/coroutine": true, "MB/s": false, "ns/switch": false, "req/s": false, "roundtrips": false} {
		if got := sizeFigure(unit); got != want {
			t.Errorf("sizeFigure(%q) = %v, want %v", unit, got, want)
		}
	}
}

// scriptedProbes makes the run's cross-CPU probe read the given round
// trips in order (100 ns once they run out), and restores it at the end.
func scriptedProbes(t *testing.T, reads ...time.Duration) {
	t.Helper()
	old := crossProbe
	t.Cleanup(func() { crossProbe = old })
	crossProbe = func(a, b int) (time.Duration, error) {
		if len(reads) == 0 {
			return 100, nil
		}
		d := reads[0]
		reads = reads[1:]
		return d, nil
	}
}

// A multi-P repetition whose probes read the slow mode is not counted: its
// figure goes on a disturbed line with both readings, another repetition
// takes its place, the reps line and the run log say so.
func TestCrossSlowRepetitionIsReplaced(t *testing.T) {
	a, b := twoCPUs(t)
	// Rep 0 fast (100/90), rep 1 slow on both sides (400/380 against the
	// planned readings' level: cluster [90 95 100 100], 95), rep 2 fast,
	// then the replacement rep 3 (100/100, judged at once against 100).
	scriptedProbes(t, 100, 90, 400, 380, 95, 100)
	modes := map[scenarios.Row]string{scenarios.GoroutineMulti: "seq:" + filepath.Join(t.TempDir(), "a") + ":10,50,10,10"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineMulti}, 3, modes, func(o *Options) {
		o.Pin, o.MaxCount, o.AdaptBudget = true, 6, time.Minute
	})
	if sum.Done != 4 || sum.Extra != 1 || sum.Disturbed != 1 || sum.CrossSlow != 1 {
		t.Errorf("summary %+v, want 4 done, 1 extra, 1 disturbed, 1 in the slow mode", sum)
	}
	var got []float64
	for _, r := range f.Results {
		got = append(got, r.Values[0].OrigValue)
	}
	if !slices.Equal(got, []float64{10, 10, 10}) {
		t.Errorf("result lines %v, want the fast-mode figures 10 10 10", got)
	}
	pair := "cpu" + strconv.Itoa(a) + "-cpu" + strconv.Itoa(b)
	var disturbed []string
	reps := ""
	for _, an := range f.Annotations {
		switch an.Kind {
		case results.AnnotDisturbed:
			disturbed = append(disturbed, an.Text)
		case results.AnnotReps:
			reps = an.Text
		}
	}
	want := "rep 1: 50 ns/switch not counted: cross-cpu slow mode: round trip " + pair + " 400ns before, 380ns after (both above 3× the run's fast level, 95ns and 95ns)"
	if len(disturbed) != 1 || disturbed[0] != want {
		t.Errorf("disturbed lines %q, want [%q]", disturbed, want)
	}
	if want := "4 repetitions: cv 0.0% <= target 5.0%; disturbed: 1 repetitions not counted, 0 timed runs left out of the counted ones' medians (1 of the repetitions not counted ran in the cross-cpu slow mode)"; reps != want {
		t.Errorf("reps line %q, want %q", reps, want)
	}
	log, err := os.ReadFile(sum.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"PingPong/impl=goroutine-multi rep 1: cross-cpu slow mode, not counted (judged after the planned repetitions): cross-cpu round trip " + pair + " 400ns before, 380ns after: cross-cpu slow mode (both above 3× the run's fast level, 95ns and 95ns)",
		"PingPong/impl=goroutine-multi rep 3: ok in ", // the extra one, judged at once
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("run log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), "rep 0: cross-cpu slow mode") || strings.Contains(string(log), "rep 2: cross-cpu slow mode") || strings.Contains(string(log), "100ns before, 100ns after: cross") {
		t.Errorf("run log marks a fast repetition:\n%s", log)
	}
}

// A slow-mode figure is never lost: with no extra repetitions, a cell left
// with fewer than two counted figures writes it as a result line, said so.
func TestCrossSlowFigureKeptWhenNothingElse(t *testing.T) {
	twoCPUs(t)
	scriptedProbes(t, 100, 90, 400, 380)
	modes := map[scenarios.Row]string{scenarios.GoroutineMulti: "seq:" + filepath.Join(t.TempDir(), "a") + ":10,50"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineMulti}, 2, modes, func(o *Options) {
		o.Pin, o.MaxCount = true, 0
	})
	var got []float64
	for _, r := range f.Results {
		got = append(got, r.Values[0].OrigValue)
	}
	kept := false
	for _, an := range f.Annotations {
		kept = kept || (an.Kind == results.AnnotDisturbed && strings.HasPrefix(an.Text, results.DisturbedKept))
	}
	if sum.CrossSlow != 1 || !slices.Equal(got, []float64{10, 50}) || !kept {
		t.Errorf("summary %+v, results %v, kept line %v: want the counted 10, then the kept 50, said so", sum, got, kept)
	}
}

// A run that starts in a slow stretch has no fast level while it runs its
// first multi-P repetitions: the planned repetitions wait for the level of
// all their readings, so the slow one is left out all the same.
func TestCrossSlowJudgedAfterThePlannedRepetitions(t *testing.T) {
	a, b := twoCPUs(t)
	// Rep 0 400/380: against the level so far (400, then 380) not slow.
	// Reps 1, 2 fast. The planned readings 90 95 100 100 380 400: cluster
	// [90 95 100 100], level 95, 3× = 285, so rep 0 is slow on both sides.
	scriptedProbes(t, 400, 380, 90, 100, 95, 100)
	modes := map[scenarios.Row]string{scenarios.GoroutineMulti: "seq:" + filepath.Join(t.TempDir(), "a") + ":30,10,10"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineMulti}, 3, modes, func(o *Options) {
		o.Pin, o.MaxCount = true, 0
	})
	var got []float64
	for _, r := range f.Results {
		got = append(got, r.Values[0].OrigValue)
	}
	if sum.CrossSlow != 1 || !slices.Equal(got, []float64{10, 10}) {
		t.Errorf("summary %+v, results %v: want rep 0 left out, 10 10 counted", sum, got)
	}
	pair := "cpu" + strconv.Itoa(a) + "-cpu" + strconv.Itoa(b)
	var disturbed []string
	for _, an := range f.Annotations {
		if an.Kind == results.AnnotDisturbed {
			disturbed = append(disturbed, an.Text)
		}
	}
	want := "rep 0: 30 ns/switch not counted: cross-cpu slow mode: round trip " + pair + " 400ns before, 380ns after (both above 3× the run's fast level, 95ns and 95ns)"
	if len(disturbed) != 1 || disturbed[0] != want {
		t.Errorf("disturbed lines %q, want [%q]", disturbed, want)
	}
	log, err := os.ReadFile(sum.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"PingPong/impl=goroutine-multi rep 0: ok, pending the cross-cpu verdict in ",
		"400ns before, 380ns after (judged after the planned repetitions)",
		"PingPong/impl=goroutine-multi rep 0: cross-cpu slow mode, not counted (judged after the planned repetitions): cross-cpu round trip " + pair + " 400ns before, 380ns after: cross-cpu slow mode (both above 3× the run's fast level, 95ns and 95ns)",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("run log lacks %q:\n%s", want, log)
		}
	}
}
