package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/corobench/corobench/scenarios/driver"
)

// noiseChildMode runs the test binary as a cell child of the noise tests:
//
//	seq:<file>:<v1>,<v2>,...  reports v[i mod n] for its i-th run (counted in file);
//	                          "12d" reports 12 from a disturbed process (3 of 5
//	                          timed runs disturbed), "12-2" 12 from a clean one
//	                          whose 2 disturbed runs were left out
//	affinity:<dir>            writes its own and its parent's threads' CPU affinity
//	steal:<file>              adds 50 ticks of steal to every line of a fake /proc/stat
//
// Each reports a figure the parent accepts (its first metric; the others 0).
func noiseChildMode(mode string) (int, bool) {
	kind, arg, _ := strings.Cut(mode, ":")
	value := 1.0
	rep := childReport{Iters: 1}
	switch kind {
	case "seq":
		file, list, _ := strings.Cut(arg, ":")
		f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			panic(err)
		}
		fi, _ := f.Stat()
		f.Write([]byte{'x'})
		f.Close()
		vs := strings.Split(list, ",")
		v := vs[int(fi.Size())%len(vs)]
		dropped := 0
		if d, ok := strings.CutSuffix(v, "d"); ok {
			v, dropped, rep.Disturbed = d, 3, true
		} else if v2, n, ok := strings.Cut(v, "-"); ok {
			v = v2
			dropped, _ = strconv.Atoi(n)
		}
		value, _ = strconv.ParseFloat(v, 64)
		rep.Judged = true
		for i := range 5 {
			run := runReport{Value: value, Wall: 1e6}
			if i < dropped {
				run.Disturbed, run.RunDelay = true, 5e5
			}
			rep.Runs = append(rep.Runs, run)
		}
	case "affinity":
		var own, parent unix.CPUSet
		if err := unix.SchedGetaffinity(0, &own); err != nil {
			panic(err)
		}
		// The parent's threads while this cell runs: none may share
		// the cell's CPU when pinned. The parent's forking thread takes
		// the cell's CPU for the fork (startChild) and gives it back
		// as soon as the child has started; a child on that one CPU
		// can get here before the parent's thread runs again to do so
		// (it failed so once in a local go test), so a child pinned to
		// one CPU reads again, for up to a second, until no thread of
		// the parent is left there: what must hold is that none stays.
		var pcpus []int
		for try := 0; try < 200; try++ {
			pcpus = pcpus[:0]
			onMine := false
			tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", os.Getppid()))
			for _, t := range tasks {
				tid, _ := strconv.Atoi(t.Name())
				if unix.SchedGetaffinity(tid, &parent) == nil {
					pcpus = append(pcpus, cpulist.Of(&parent)...)
					if own.Count() == 1 && parent.IsSet(cpulist.Of(&own)[0]) {
						onMine = true
					}
				}
			}
			if !onMine {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		b, _ := json.Marshal(map[string][]int{"own": cpulist.Of(&own), "parent": pcpus})
		if err := os.WriteFile(filepath.Join(arg, cellRow(os.Args)+".json"), b, 0o644); err != nil {
			panic(err)
		}
	case "steal":
		data, err := os.ReadFile(arg)
		if err != nil {
			panic(err)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(line)
			n, _ := strconv.Atoi(f[8])
			f[8] = strconv.Itoa(n + 50)
			out = append(out, strings.Join(f, " "))
		}
		if err := os.WriteFile(arg, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			panic(err)
		}
	default:
		return 0, false
	}
	s, _ := scenarios.Lookup(cellArg(os.Args, "-scenario"))
	rep.Values = make([]float64, len(s.Metrics))
	rep.Values[0] = value
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return 0, true
}

func cellArg(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func cellRow(args []string) string { return cellArg(args, "-impl") }

// threadsNotOn returns the process's threads whose CPUs are not want, with
// their CPUs: what a floor measurement that pins threads must not leave
// behind.
func threadsNotOn(t *testing.T, want unix.CPUSet) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	off := map[int]unix.CPUSet{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var got unix.CPUSet
		if unix.SchedGetaffinity(tid, &got) == nil && got != want {
			off[tid] = got
		}
	}
	return off
}

// modeCommand runs the test binary as the child in the mode given per row.
func modeCommand(modes map[scenarios.Row]string) func(context.Context, []string) *exec.Cmd {
	return func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), childModeEnv+"="+modes[scenarios.Row(cellRow(args))])
		return cmd
	}
}

func runNoise(t *testing.T, s *scenarios.Scenario, rows []scenarios.Row, count int, modes map[scenarios.Row]string, tweak func(*Options)) (*Summary, *results.File) {
	t.Helper()
	opts := Options{
		Cells:     Plan([]*scenarios.Scenario{s}, rows, true, nil, count),
		Benchtime: time.Millisecond,
		Timeout:   time.Minute,
		OutDir:    t.TempDir(),
		Runstamp:  NewRunstamp(time.Now()),
		Header:    "noise test",
		Machine:   MachineConfig("test", time.Millisecond, false),
		Command:   modeCommand(modes),
	}
	if tweak != nil {
		tweak(&opts)
	}
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := results.ReadFile(sum.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	return sum, f
}

func TestCV(t *testing.T) {
	cases := []struct {
		values []float64
		want   float64
	}{
		// mean 11, sample sd sqrt(2)/1: 1.41421/11
		{[]float64{10, 12}, math.Sqrt2 / 11},
		// mean 20, deviations -10 0 10: sd sqrt(200/2) = 10
		{[]float64{10, 20, 30}, 0.5},
		{[]float64{5, 5, 5}, 0},
		{[]float64{0, 0}, 0},
		{[]float64{-1, 1}, math.Inf(1)},
	}
	for _, c := range cases {
		if got := cv(c.values); math.Abs(got-c.want) > 1e-12 && got != c.want {
			t.Errorf("cv(%v) = %v, want %v", c.values, got, c.want)
		}
	}
	if got := cv([]float64{7}); !math.IsNaN(got) {
		t.Errorf("cv of one value = %v, want NaN", got)
	}
}

func TestAdaptDecide(t *testing.T) {
	r := adaptRule{targetCV: 0.05, maxReps: 10, budget: time.Minute}
	cases := []struct {
		values []float64
		reps   int
		failed bool
		want   adaptVerdict
	}{
		{[]float64{10, 12}, 2, false, verdictMore},         // cv 12.9%
		{[]float64{10, 12}, 9, false, verdictMore},         // one under the cap
		{[]float64{10, 12}, 10, false, verdictCap},         // at the cap
		{[]float64{100, 101, 99}, 3, false, verdictStable}, // cv 1%
		{[]float64{100, 105, 95}, 3, false, verdictStable}, // cv exactly 5%: at the target is stable
		{[]float64{100, 106, 94}, 3, false, verdictMore},   // cv 6%
		{[]float64{7}, 1, false, verdictTooFew},            // no cv
		{[]float64{10, 12}, 3, true, verdictFailures},      // a failed repetition
		{nil, 2, true, verdictFailures},                    // every repetition failed
		{[]float64{10, 12, 11, 13}, 4, false, verdictMore}, // cv 11.7%
		{[]float64{1000, 1000, 1000, 1001}, 4, false, verdictStable},
	}
	for _, c := range cases {
		if got, cvv := r.decide(c.values, c.reps, 0, c.failed); got != c.want {
			t.Errorf("decide(%v, reps %d, failed %v) = %v (cv %v), want %v", c.values, c.reps, c.failed, got, cvv, c.want)
		}
	}
	// Disturbed repetitions are not among the values: a cell with fewer
	// undisturbed figures than planned gets more while under the cap,
	// however steady the ones it has; at the cap the usual verdicts hold.
	short := []struct {
		values     []float64
		reps, want int
		failed     bool
		verdict    adaptVerdict
	}{
		{[]float64{100, 101}, 4, 4, false, verdictShort},            // 2 of 4 disturbed, steady
		{[]float64{100, 130}, 4, 4, false, verdictShort},            // 2 of 4 disturbed, noisy
		{nil, 4, 4, false, verdictShort},                            // every one disturbed
		{[]float64{100, 101, 100, 101}, 6, 4, false, verdictStable}, // replaced: 4 of 6 counted
		{[]float64{100, 101}, 10, 4, false, verdictStable},          // cap: judged on what it has
		{[]float64{100, 130}, 10, 4, false, verdictCap},             // cap, noisy
		{nil, 10, 4, false, verdictTooFew},                          // cap, nothing undisturbed
		{[]float64{100}, 3, 4, true, verdictFailures},               // a failure ends it all the same
	}
	for _, c := range short {
		if got, _ := r.decide(c.values, c.reps, c.want, c.failed); got != c.verdict {
			t.Errorf("decide(%v, reps %d, want %d, failed %v) = %v, want %v", c.values, c.reps, c.want, c.failed, got, c.verdict)
		}
		if got := verdictShort; !got.wantsMore() {
			t.Error("verdictShort does not ask for more")
		}
	}
}

// TestRepsTextCountsTheDisturbed: the reps line says how many repetitions
// were not counted and how many timed runs the counted ones dropped, and a
// cell short of undisturbed figures says so instead of a CV over target.
func TestRepsTextCountsTheDisturbed(t *testing.T) {
	r := adaptRule{targetCV: 0.05, maxReps: 30, budget: time.Minute}
	got := repsText(12, verdictStable, 0.02, r, false, 10, 10, 2, 7, 0)
	for _, want := range []string{"12 repetitions: cv 2.0% <= target 5.0%", "2 repetitions not counted", "7 timed runs left out"} {
		if !strings.Contains(got, want) {
			t.Errorf("repsText = %q, want it to contain %q", got, want)
		}
	}
	got = repsText(14, verdictShort, 0.01, r, true, 8, 10, 6, 0, 0)
	for _, want := range []string{"8 undisturbed figures of the 10 planned", "time budget", "6 repetitions not counted"} {
		if !strings.Contains(got, want) {
			t.Errorf("repsText = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "> target") {
		t.Errorf("repsText = %q: a steady cell short of figures is not over its target", got)
	}
	if got := repsText(10, verdictStable, 0.02, r, false, 10, 10, 0, 0, 0); strings.Contains(got, "disturbed") {
		t.Errorf("repsText = %q: nothing was disturbed", got)
	}
}

func TestAdaptBudget(t *testing.T) {
	r := adaptRule{budget: 10 * time.Second}
	if !r.fits(8*time.Second, 2*time.Second) {
		t.Error("8s spent + 2s expected does not fit a 10s budget")
	}
	if r.fits(8*time.Second, 2*time.Second+1) {
		t.Error("8s spent + 2.000000001s expected fits a 10s budget")
	}
	if (adaptRule{}).fits(0, 1) {
		t.Error("a zero budget fits a repetition")
	}
}

// TestRunAdaptBudget: the extra repetitions get what the run budget leaves
// after the planned ones, at most the adapt budget, never less than zero.
func TestRunAdaptBudget(t *testing.T) {
	const m = time.Minute
	for _, c := range []struct{ adapt, run, planned, want time.Duration }{
		{5 * m, 0, 20 * m, 5 * m},      // no run budget: the adapt budget
		{5 * m, 15 * m, 8 * m, 5 * m},  // room to spare: the adapt budget
		{5 * m, 15 * m, 12 * m, 3 * m}, // what the planned ones left
		{5 * m, 15 * m, 15 * m, 0},     // nothing left
		{5 * m, 15 * m, 17 * m, 0},     // over already: none, not negative
		{0, 15 * m, 1 * m, 0},          // extra repetitions off stay off
		{15 * time.Second, 90 * time.Second, 80 * time.Second, 10 * time.Second}, // --quick
	} {
		if got := runAdaptBudget(c.adapt, c.run, c.planned); got != c.want {
			t.Errorf("runAdaptBudget(adapt %v, run %v, planned %v) = %v, want %v", c.adapt, c.run, c.planned, got, c.want)
		}
	}
	r := adaptRule{targetCV: 0.05, maxReps: 9, asked: 5 * m}
	if got := repsText(3, verdictMore, 0.2, r, false, 3, 3, 0, 0, 0); !strings.Contains(got, "--run-budget") {
		t.Errorf("a cell left noisy because the run budget was spent reads %q, want it to name --run-budget", got)
	}
	r.asked = 0 // --adapt-budget 0: the user turned them off, the run budget did not
	if got := repsText(3, verdictMore, 0.2, r, false, 3, 3, 0, 0, 0); strings.Contains(got, "--run-budget") || !strings.Contains(got, "extra repetitions off") {
		t.Errorf("a cell left noisy with --adapt-budget 0 reads %q, want extra repetitions off, not the run budget blamed", got)
	}
}

// A noisy cell gets extra repetitions up to the cap, interleaved with the
// other noisy row; a steady one gets none; the file says how many each got.
func TestExtraRepetitions(t *testing.T) {
	dir := t.TempDir()
	noisy := "seq:" + filepath.Join(dir, "a") + ":10,20"
	noisy2 := "seq:" + filepath.Join(dir, "b") + ":30,40"
	steady := "seq:" + filepath.Join(dir, "c") + ":50"
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.Stackless, scenarios.GoroutineMulti}
	modes := map[scenarios.Row]string{scenarios.GoroutineSingle: noisy, scenarios.Stackless: noisy2, scenarios.GoroutineMulti: steady}
	sum, f := runNoise(t, bodies.PingPong, rows, 2, modes, func(o *Options) {
		o.MaxCount, o.AdaptBudget = 5, time.Minute
	})
	if sum.Extra != 6 || sum.Done != 12 {
		t.Errorf("summary %+v, want 6 extra and 12 done (2×3 planned, 3 more for each noisy row)", sum)
	}
	var order []string
	for _, r := range f.Results[6:] {
		order = append(order, string(r.Name))
	}
	wantOrder := []string{"PingPong/impl=goroutine-single", "PingPong/impl=stackless"}
	for i, n := range order {
		if n != wantOrder[i%2] {
			t.Fatalf("extra repetitions in order %v, want the noisy rows interleaved", order)
		}
	}
	reps := map[string]string{}
	for _, a := range f.Annotations {
		if a.Kind == results.AnnotReps {
			reps[a.Name] = a.Text
		}
	}
	for name, want := range map[string]string{
		"PingPong/impl=goroutine-single": "5 repetitions: cv ",
		"PingPong/impl=stackless":        "5 repetitions: cv ",
		"PingPong/impl=goroutine-multi":  "2 repetitions: cv 0.0% <= target 5.0%",
	} {
		if !strings.HasPrefix(reps[name], want) {
			t.Errorf("%s: reps note %q, want it to start %q", name, reps[name], want)
		}
	}
	if !strings.Contains(reps["PingPong/impl=goroutine-single"], "cap of 5 repetitions reached") {
		t.Errorf("noisy cell's reps note %q does not name the cap", reps["PingPong/impl=goroutine-single"])
	}
}

// withoutSteal drops f's steal marks: the host's, not the behaviour under
// test (a loaded host marked scripted 20 ms repetitions, steal 20 ms = 59%
// of their wall, in a full `go test ./...`).
func withoutSteal(f *results.File) *results.File {
	f.Annotations = slices.DeleteFunc(f.Annotations, func(a results.Annotation) bool { return a.Kind == results.AnnotSteal })
	return f
}

// A spent budget stops the extra repetitions, and the file says so.
func TestExtraRepetitionsBudget(t *testing.T) {
	dir := t.TempDir()
	modes := map[scenarios.Row]string{scenarios.GoroutineSingle: "seq:" + filepath.Join(dir, "a") + ":10,20"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineSingle}, 2, modes, func(o *Options) {
		o.MaxCount, o.AdaptBudget = 50, time.Nanosecond
	})
	withoutSteal(f)
	if sum.Extra != 0 || len(f.Results) != 2 {
		t.Errorf("summary %+v with %d results, want no extra repetition within a 1ns budget", sum, len(f.Results))
	}
	if len(f.Annotations) != 1 || !strings.Contains(f.Annotations[0].Text, "2 repetitions: cv 47.1% > target 5.0%; time budget of 1ns for extra repetitions spent") {
		t.Errorf("annotations %+v, want the reps note to say the budget is spent", f.Annotations)
	}
	// Off: no budget at all.
	_, f = runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineSingle}, 2, modes, nil)
	withoutSteal(f)
	if len(f.Results) != 2 || len(f.Annotations) != 1 || !strings.Contains(f.Annotations[0].Text, "extra repetitions off") {
		t.Errorf("%d results, annotations %+v, want 2 and a note that extra repetitions are off", len(f.Results), f.Annotations)
	}
}

// Single-P cells start on the chosen CPU with benchrun's threads off it;
// multi-P cells and the self-placing echo start with benchrun's whole set;
// --pin=false pins nothing; the choice is recorded; the parent's affinity is
// restored after the run.
func TestPinning(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Count() < 2 {
		t.Skip("needs 2 CPUs allowed")
	}
	all := cpulist.Of(&orig)
	last := all[len(all)-1]
	read := func(dir string, row scenarios.Row) (own, parent []int) {
		b, err := os.ReadFile(filepath.Join(dir, string(row)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string][]int
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m["own"], m["parent"]
	}
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	for _, pin := range []bool{true, false} {
		for _, s := range []*scenarios.Scenario{bodies.PingPong, bodies.Echo} {
			t.Run(fmt.Sprintf("%s/pin=%v", s.Name, pin), func(t *testing.T) {
				dir := t.TempDir()
				modes := map[scenarios.Row]string{}
				for _, r := range rows {
					modes[r] = "affinity:" + dir
				}
				_, f := runNoise(t, s, rows, 1, modes, func(o *Options) {
					o.Pin = pin
					o.Cells = o.Cells[:len(rows)] // one parameter combination
				})
				single, parent := read(dir, scenarios.GoroutineSingle)
				multi, _ := read(dir, scenarios.GoroutineMulti)
				if fmt.Sprint(multi) != fmt.Sprint(all) {
					t.Errorf("multi-P cell ran on %v, want benchrun's whole set %v", multi, all)
				}
				cfg := f.Results[0].GetConfig(results.KeyCPUPin)
				if pin && s.Name != "echo" {
					if fmt.Sprint(single) != fmt.Sprint([]int{last}) {
						t.Errorf("single-P cell ran on %v, want [%d]", single, last)
					}
					for _, cpu := range parent {
						if cpu == last {
							t.Errorf("a benchrun thread may run on the cell's cpu %d (parent's threads: %v)", last, parent)
							break
						}
					}
				} else if fmt.Sprint(single) != fmt.Sprint(all) {
					t.Errorf("single-P cell ran on %v, want %v (not pinned)", single, all)
				}
				if pin && !strings.Contains(cfg, "goroutine-single=cpu"+strconv.Itoa(last)) {
					t.Errorf("cpu-pin config %q does not record cpu%d", cfg, last)
				}
				if !pin && !strings.HasPrefix(cfg, "off") {
					t.Errorf("cpu-pin config %q, want off", cfg)
				}
				if fl := f.Results[0].GetConfig(results.KeyTimerFloorOS); !strings.HasPrefix(fl, "p50=") {
					t.Errorf("timer-floor-os config %q", fl)
				}
				if fl := f.Results[0].GetConfig(results.KeyThreadWakeFloorOS); !strings.HasPrefix(fl, "p50=") {
					t.Errorf("thread-wake-floor-os config %q", fl)
				}
			})
		}
	}
	// After the runs, every thread of this process has its set back.
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil && set != orig {
			t.Errorf("thread %d has affinity %v after the run, had %v", tid, cpulist.Of(&set), all)
		}
	}
}

// A cell during which the steal counter moves is marked; one during which
// it does not is not.
func TestStealMark(t *testing.T) {
	stat := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(stat, []byte("cpu  1 2 3 4 5 6 7 100 0 0\ncpu0 1 2 3 4 5 6 7 50 0 0\ncpu1 1 2 3 4 5 6 7 50 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := procStat
	procStat = stat
	defer func() { procStat = old }()
	modes := map[scenarios.Row]string{
		scenarios.GoroutineSingle: "steal:" + stat,
		scenarios.GoroutineMulti:  "seq:" + filepath.Join(t.TempDir(), "a") + ":1",
	}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineMulti, scenarios.GoroutineSingle}, 1, modes, func(o *Options) {
		o.Cells = o.Cells[:2]
	})
	if sum.Stolen != 1 {
		t.Errorf("summary %+v, want 1 cell under steal", sum)
	}
	var marked []string
	for _, a := range f.Annotations {
		if a.Kind == results.AnnotSteal {
			marked = append(marked, a.Name+": "+a.Text)
		}
	}
	if len(marked) != 1 || !strings.HasPrefix(marked[0], "PingPong/impl=goroutine-single: rep 0: steal 500ms") {
		t.Errorf("steal marks %q, want one on goroutine-single with 500ms (50 ticks)", marked)
	}
}

func TestParseSteal(t *testing.T) {
	text := "cpu  146799 272 49298 251579 365 0 848 236 0 0\ncpu0 72505 160 24992 126353 100 0 215 126 0 0\ncpu1 74294 111 24306 125226 265 0 632 110 0 0\nintr 1 2 3\n"
	read := func(cpu int) stealSample {
		s, err := readStealText(text, cpu)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(-1); s.ticks != 236 || s.cpus != 2 {
		t.Errorf("machine: %+v, want 236 ticks over 2 cpus", s)
	}
	if s := read(1); s.ticks != 110 || s.cpus != 1 {
		t.Errorf("cpu1: %+v, want 110 ticks over 1 cpu", s)
	}
	// busy = user + nice + system + irq + softirq.
	if s := read(-1); s.busy != 146799+272+49298+0+848 {
		t.Errorf("machine busy %d, want %d", s.busy, 146799+272+49298+0+848)
	}
	if s := read(0); s.busy != 72505+160+24992+0+215 {
		t.Errorf("cpu0 busy %d, want %d", s.busy, 72505+160+24992+0+215)
	}
	// 2 CPUs, 1 s: 150 busy ticks (1.5 s) of which the child ran 1.2 s:
	// the others ran 0.3 s, 15% of the machine.
	others, share := othersOver(stealSample{busy: 1000, cpus: 2}, stealSample{busy: 1150, cpus: 2}, 1200*time.Millisecond, time.Second)
	if others != 300*time.Millisecond || math.Abs(share-0.15) > 1e-12 {
		t.Errorf("othersOver = %v %v, want 300ms 15%%", others, share)
	}
	// The child's own figure is finer than the ticks: never below zero.
	if others, share := othersOver(stealSample{busy: 1000, cpus: 2}, stealSample{busy: 1001, cpus: 2}, 15*time.Millisecond, time.Second); others != 0 || share != 0 {
		t.Errorf("othersOver below zero: %v %v", others, share)
	}
	if _, err := readStealText(text, 2); err == nil {
		t.Error("cpu2 of a 2-CPU machine read without error")
	}
	if _, err := readStealText("cpu  1 2 3 4\n", -1); err == nil {
		t.Error("a line without the steal column read without error")
	}
	// 3 ticks (30 ms) over 1 s on one CPU: 3%; over 2 CPUs: 1.5%.
	stolen, share := stealOver(stealSample{ticks: 100, cpus: 1}, stealSample{ticks: 103, cpus: 1}, time.Second)
	if stolen != 30*time.Millisecond || math.Abs(share-0.03) > 1e-12 {
		t.Errorf("one cpu: %v %v, want 30ms 3%%", stolen, share)
	}
	if _, share := stealOver(stealSample{ticks: 100, cpus: 2}, stealSample{ticks: 103, cpus: 2}, time.Second); math.Abs(share-0.015) > 1e-12 {
		t.Errorf("two cpus: share %v, want 1.5%%", share)
	}
	if stolen, _ := stealOver(stealSample{ticks: 100, cpus: 1}, stealSample{ticks: 90, cpus: 1}, time.Second); stolen != 0 {
		t.Errorf("a counter that went back gives %v, want 0", stolen)
	}
}

func TestNoiseOptionsMisuse(t *testing.T) {
	for name, o := range map[string]Options{
		"TargetCV":    {TargetCV: -0.05},
		"MaxCount":    {MaxCount: -1},
		"AdaptBudget": {AdaptBudget: -time.Second},
	} {
		o.OutDir = t.TempDir()
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("%s: Run = %v, want an error naming Options.%s", name, err, name)
		}
	}
}

// A disturbed repetition gets no result line but a disturbed line with its
// figure, and another repetition in its place; the reps line counts what
// was not counted and the timed runs the counted ones left out.
func TestDisturbedRepetitionsAreReplaced(t *testing.T) {
	dir := t.TempDir()
	// Planned 3: 10, 20d, 11-2; then the cell is short (2 of 3): 10;
	// cv of 10, 11, 10 is 5.6%: 30d, then 10: cv of 10, 11, 10, 10 4.9%.
	modes := map[scenarios.Row]string{scenarios.GoroutineSingle: "seq:" + filepath.Join(dir, "a") + ":10,20d,11-2,10,30d,10"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineSingle}, 3, modes, func(o *Options) {
		o.MaxCount, o.AdaptBudget = 6, time.Minute
	})
	if sum.Done != 6 || sum.Extra != 3 || sum.Disturbed != 2 {
		t.Errorf("summary %+v, want 6 done, 3 extra, 2 disturbed", sum)
	}
	var got []float64
	for _, r := range f.Results {
		got = append(got, r.Values[0].OrigValue)
	}
	if !slices.Equal(got, []float64{10, 11, 10, 10}) {
		t.Errorf("result lines %v, want the undisturbed figures 10 11 10 10", got)
	}
	var disturbed []string
	reps := ""
	for _, a := range f.Annotations {
		switch a.Kind {
		case results.AnnotDisturbed:
			disturbed = append(disturbed, a.Text)
		case results.AnnotReps:
			reps = a.Text
		}
	}
	if len(disturbed) != 2 || !strings.HasPrefix(disturbed[0], "rep 1: 20 ") || !strings.Contains(disturbed[0], "not counted: 3 of 5 timed runs disturbed (runqueue wait 50% 50% 50% of wall, marked above 15%)") ||
		!strings.HasPrefix(disturbed[1], "rep 4: 30 ") {
		t.Errorf("disturbed lines %q, want reps 1 (20) and 4 (30) with their runs", disturbed)
	}
	if want := "6 repetitions: cv 4.9% <= target 5.0%; disturbed: 2 repetitions not counted, 2 timed runs left out of the counted ones' medians"; reps != want {
		t.Errorf("reps line %q, want %q", reps, want)
	}
}

// A cell left with fewer than two undisturbed figures keeps its disturbed
// ones as result lines, and says so.
func TestDisturbedFiguresKeptWhenNothingElse(t *testing.T) {
	modes := map[scenarios.Row]string{scenarios.GoroutineSingle: "seq:" + filepath.Join(t.TempDir(), "a") + ":20d,11,30d"}
	sum, f := runNoise(t, bodies.PingPong, []scenarios.Row{scenarios.GoroutineSingle}, 3, modes, nil)
	var got []float64
	for _, r := range f.Results {
		got = append(got, r.Values[0].OrigValue)
	}
	if sum.Disturbed != 2 || !slices.Equal(got, []float64{11, 20, 30}) {
		t.Errorf("summary %+v, results %v: want the undisturbed 11, then the kept 20 and 30", sum, got)
	}
	kept, reps := "", ""
	for _, a := range f.Annotations {
		if a.Kind == results.AnnotDisturbed && strings.HasPrefix(a.Text, results.DisturbedKept) {
			kept = a.Text
		}
		if a.Kind == results.AnnotReps {
			reps = a.Text
		}
	}
	if !strings.Contains(kept, "2 disturbed repetitions written as result lines: the cell has 1 undisturbed figures, fewer than 2") {
		t.Errorf("kept line %q", kept)
	}
	if reps != "3 repetitions: too few figures for a cv; disturbed: 2 repetitions not counted, 0 timed runs left out of the counted ones' medians" {
		t.Errorf("reps line %q, want it to say why there is no cv and what was not counted", reps)
	}
}

// TestSegTotalsText: the reps line counts the preempted segments of the
// counted repetitions' runs, hand-computed, when the cell's segments are
// short (under shortSegment on average) and some were preempted; runReports
// carries each run's counts from the driver's signal.
func TestSegTotalsText(t *testing.T) {
	sm := &driver.Sample{
		Runs: [][]float64{{1800}, {2000}},
		Signals: []driver.Signal{
			{Segments: scenarios.SegmentCounts{Segments: 1000, Preempted: 10, Time: 1800 * time.Microsecond, PreemptedTime: 300 * time.Microsecond}},
			{Segments: scenarios.SegmentCounts{Segments: 1000, Preempted: 30, Moved: 2, Time: 2000 * time.Microsecond, PreemptedTime: 500 * time.Microsecond}},
		},
	}
	runs := runReports(sm)
	if r := runs[1]; r.Segments != 1000 || r.Preempted != 30 || r.Moved != 2 || r.Timed != 2e6 || r.PreemptedTime != 5e5 {
		t.Fatalf("run report %+v, want the signal's segment counts", r)
	}
	if got, want := runs[1].segments(), ", timed 2ms in 1000 segments, 30 preempted (500µs), 2 moved between threads"; got != want {
		t.Errorf("run log note %q, want %q", got, want)
	}
	var tot segTotals
	tot.add(childReport{Runs: runs})
	tot.add(childReport{Runs: runs[:1]})
	// 50 of 3000 segments, 1100 of 5600 µs.
	if got, want := tot.text(), "; preempted: 50 of 3000 timed segments (1.7%), 19.6% of the timed time"; got != want {
		t.Errorf("reps note %q, want %q", got, want)
	}
	long := segTotals{segments: 5, preempted: 5, timed: 130 * time.Millisecond, preemptedTime: 130 * time.Millisecond}
	if got := long.text(); got != "" {
		t.Errorf("segments of 26 ms (a tick preempts them): note %q, want none", got)
	}
	if got := (segTotals{segments: 1000, timed: time.Millisecond}).text(); got != "" {
		t.Errorf("none preempted: note %q, want none", got)
	}
}
