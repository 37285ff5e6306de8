package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/driver"
)

// TestProfileWritesAReadableProfile: benchrun profile measures one cell in
// process, prints its figures and writes CPU and allocation profiles that
// go tool pprof reads, holding samples of the scenario's body. A bench time
// of 1 s gives ~100 samples at 100 Hz: with 200 ms, under -race beside a
// benchmark on the other CPU, the profile once held 2 samples, neither in
// the body.
func TestProfileWritesAReadableProfile(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"profile", "-scenario", "yield", "-impl", "stackless", "-param", "n=16", "-benchtime", "1s",
		"-o", cpu, "-memprofile", mem}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"Yield/impl=stackless/n=16", "ns/switch", "minflt/op", "go tool pprof -top " + cpu} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to read the profiles with: %v", err)
	}
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v (empty or missing)", f, err)
		}
		out, err := exec.Command(goTool, "tool", "pprof", "-raw", f).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof -raw %s: %v\n%s", f, err, out)
		}
		if f == cpu && !strings.Contains(string(out), "scenarios/bodies.") {
			t.Errorf("the CPU profile has no sample in the scenario's body:\n%.2000s", out)
		}
	}
}

// TestProfileRefusesBadInput: anything but exactly one valid cell exits 2
// naming the problem, before any measurement.
func TestProfileRefusesBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu.pprof")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name the cell"},
		{[]string{"-scenario", "nope", "-impl", "stackless"}, `unknown scenario "nope"`},
		{[]string{"-scenario", "yield", "-impl", "nope"}, `unknown row "nope"`},
		{[]string{"-scenario", "yield", "-impl", "stackless,goroutine-single"}, "one cell at a time"},
		{[]string{"-scenario", "yield,pingpong", "-impl", "stackless"}, "one cell at a time"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "n=2,16"}, "name one value"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "n=-5"}, "outside the valid range"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "pool=warm"}, "pool"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-benchtime", "0s"}, "positive duration"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "stray"}, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"profile", "-o", out}, c.args...), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("benchrun profile %v: exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused profile wrote %s", out)
	}
}

// burnFor spins on the CPU for d of wall time. Each caller below is a
// function of its own, so a sample's stack names the part of the body it
// was taken in.
func burnFor(d time.Duration) {
	for t := time.Now(); time.Since(t) < d; {
		for i := 0; i < 100; i++ {
			burnSink += uint64(i) ^ burnSink<<1
		}
	}
}

var burnSink uint64

//go:noinline
func profTestSetUp(d time.Duration) { burnFor(d) }

//go:noinline
func profTestTimed(d time.Duration) { burnFor(d) }

//go:noinline
func profTestPause(d time.Duration) { burnFor(d) }

//go:noinline
func profTestTeardown(d time.Duration) { burnFor(d) }

// burnBody is a body whose untimed set-up, pause and teardown burn CPU in
// functions of their own, and whose timed region burns it in
// profTestTimed, for timed per run (perIter: per iteration). fresh: it
// times itself with StartTimer (a FreshRuntime body).
func burnBody(setUp, timed time.Duration, perIter, fresh bool) func(env *scenarios.Env) (scenarios.Outcome, error) {
	return func(env *scenarios.Env) (scenarios.Outcome, error) {
		profTestSetUp(setUp)
		if fresh {
			env.StartTimer()
		} else {
			env.ResetTimer()
		}
		d := timed
		if perIter {
			d = timed * time.Duration(env.N)
		}
		profTestTimed(d / 2)
		if !fresh {
			env.StopTimer()
			profTestPause(setUp)
			env.StartTimer()
		}
		profTestTimed(d / 2)
		env.StopTimer()
		profTestTeardown(setUp)
		return scenarios.Outcome{Ops: 1, Checksum: 7}, nil
	}
}

// burnScenario is a scenario outside the registry on burnBody: kind
// "grow" grows its count to the bench time, "cycles" is a Cycles
// scenario, "fresh" a FreshRuntime one of 5 iterations.
func burnScenario(kind string) *scenarios.Scenario {
	s := &scenarios.Scenario{Name: "burn-" + kind, Bench: "Burn",
		Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
		Want:    func(env *scenarios.Env) uint64 { return 7 },
	}
	var body func(env *scenarios.Env) (scenarios.Outcome, error)
	switch kind {
	case "grow":
		body = burnBody(40*time.Millisecond, 50*time.Microsecond, true, false)
	case "cycles":
		s.FixedIters, s.Cycles = 1, true
		body = burnBody(40*time.Millisecond, 40*time.Millisecond, false, false)
	case "fresh":
		s.FixedIters = 5
		s.FreshRuntime = func(map[string]string) bool { return true }
		s.Want = func(env *scenarios.Env) uint64 { return 7 * uint64(env.N) }
		body = burnBody(4*time.Millisecond, 8*time.Millisecond, false, true)
	}
	s.StateMachine = body
	s.Blocking = func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) { return body(env) }
	return s
}

// withCellGOMAXPROCS sets GOMAXPROCS as benchrun profile does for the
// cell, for the rest of the test.
func withCellGOMAXPROCS(t *testing.T, cell profiledCell) {
	old := runtime.GOMAXPROCS(cell.row.CellGOMAXPROCS(cell.s))
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// sampledFuncs counts, per function of package cli, the samples whose
// stack holds it.
func sampledFuncs(p *profile.Profile) map[string]int64 {
	n := map[string]int64{}
	for _, s := range p.Sample {
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				name := l.Function.Name
				if i := strings.LastIndex(name, ".profTest"); i >= 0 && !seen[name[i+1:]] {
					seen[name[i+1:]] = true
					n[name[i+1:]] += s.Value[0]
				}
			}
		}
	}
	return n
}

// TestProfileHoldsTheTimedRegionOnly: whatever the kind of cell (a count
// grown to the bench time with a pause inside the run, a Cycles
// scenario, a FreshRuntime one) and the profile's way of holding it (a
// profile per segment on goroutine-single, label mode on stackful-asm and
// stackless for cells of short segments), the profile holds samples of
// the body's timed function and none of its untimed set-up, pause or
// teardown, each of which burns as much CPU as a timed segment or more.
func TestProfileHoldsTheTimedRegionOnly(t *testing.T) {
	for _, c := range []struct {
		kind string
		row  scenarios.Row
	}{
		{"grow", scenarios.GoroutineSingle},
		{"grow", scenarios.StackfulAsm},
		{"cycles", scenarios.GoroutineSingle},
		{"cycles", scenarios.StackfulAsm},
		{"cycles", scenarios.Stackless},
		{"fresh", scenarios.StackfulAsm},
		{"fresh", scenarios.Stackless},
	} {
		t.Run(c.kind+"/"+string(c.row), func(t *testing.T) {
			cell := profiledCell{s: burnScenario(c.kind), row: c.row, params: map[string]string{}}
			withCellGOMAXPROCS(t, cell)
			prof := &profiler{labels: labelMode(cell)}
			const benchtime = 300 * time.Millisecond
			_, pr, err := profileRuns(cell, driver.Options{Benchtime: benchtime, NoMark: true}, prof, benchtime, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			st, err := prof.write(&buf)
			if err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			got := sampledFuncs(p)
			t.Logf("label mode %v, %d runs, %d segments, %v timed: samples %v, %d left out", prof.labels, pr.runs, st.segments, st.timed, got, st.dropped)
			if got["profTestTimed"] == 0 {
				t.Errorf("no sample in the timed region's function: %v", got)
			}
			for _, f := range []string{"profTestSetUp", "profTestPause", "profTestTeardown"} {
				if got[f] != 0 {
					t.Errorf("%d samples in %s, which runs outside the timed region", got[f], f)
				}
			}
			if st.timed < benchtime || pr.capped {
				t.Errorf("%v timed (capped: %v), want -benchtime %v", st.timed, pr.capped, benchtime)
			}
			if c.kind != "grow" && pr.runs < 2 {
				t.Errorf("%d runs: a %s cell repeats its runs until the profile holds the bench time", pr.runs, c.kind)
			}
			checkWindows(t, prof, st)
		})
	}
}

// checkWindows: the -windows intervals are the kept segments, one each
// (the set-up segments a reset dropped are not among them), in order,
// apart, and together hold at least the timed time (each encloses its
// segment's clock reads); the file's lines are perf's --time form.
func checkWindows(t *testing.T, prof *profiler, st profileStats) {
	t.Helper()
	if len(prof.windows) != st.segments {
		t.Fatalf("%d windows for %d timed segments", len(prof.windows), st.segments)
	}
	var sum time.Duration
	for i, w := range prof.windows {
		if w.stop <= w.start || (i > 0 && w.start < prof.windows[i-1].stop) {
			t.Fatalf("window %d %v: empty, or not after window %d %v", i, w, i-1, prof.windows[max(i-1, 0)])
		}
		sum += time.Duration(w.stop - w.start)
	}
	if sum < st.timed {
		t.Errorf("the windows hold %v, less than the %v timed inside them", sum, st.timed)
	}
	lines := strings.Split(strings.TrimSuffix(prof.windowsText(), "\n"), "\n")
	first := prof.windows[0]
	if want := fmt.Sprintf("%d.%09d,%d.%09d", first.start/1e9, first.start%1e9, first.stop/1e9, first.stop%1e9); len(lines) != len(prof.windows) || lines[0] != want {
		t.Errorf("windows file: %d lines, first %q; want %d lines, first %q", len(lines), lines[0], len(prof.windows), want)
	}
}

// TestProfileRunsOnEveryRow: the profiler's start and stop, called from
// inside a body (on a fiber's stack on stackful-asm), work on every row,
// and the merged profile holds the body's samples.
func TestProfileRunsOnEveryRow(t *testing.T) {
	for _, row := range scenarios.Rows {
		t.Run(string(row), func(t *testing.T) {
			cell := profiledCell{s: bodies.Yield, row: row, params: map[string]string{"n": "16"}}
			withCellGOMAXPROCS(t, cell)
			prof := &profiler{labels: labelMode(cell)}
			if _, _, err := profileRuns(cell, driver.Options{Benchtime: 200 * time.Millisecond, NoMark: true}, prof, 200*time.Millisecond, time.Minute); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			st, err := prof.write(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if st.segments != 1 || st.samples == 0 {
				t.Errorf("%d segments, %d samples: want one timed segment with samples", st.segments, st.samples)
			}
		})
	}
}

// TestProfileWallCap: a repeated cell whose -benchtime cannot be reached
// within -wall stops there, says so, and still writes its profile.
func TestProfileWallCap(t *testing.T) {
	cell := profiledCell{s: burnScenario("cycles"), row: scenarios.GoroutineSingle, params: map[string]string{}}
	withCellGOMAXPROCS(t, cell)
	prof := &profiler{}
	_, pr, err := profileRuns(cell, driver.Options{Benchtime: time.Second, NoMark: true}, prof, time.Hour, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.capped || pr.runs < 1 {
		t.Errorf("capped %v after %d runs: want the wall cap hit", pr.capped, pr.runs)
	}
	if _, err := prof.write(io.Discard); err != nil {
		t.Error(err)
	}
}
