package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/driver"
)

// The test binary doubles as the cell child: with childModeEnv set it
// behaves as `benchrun cell` would, or crashes, or hangs, on purpose.
const childModeEnv = "COROBENCH_HARNESS_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childModeEnv) {
	case "":
		// A lock of this test process's own: the suite must neither
		// wait for a real run nor serialise with other packages' tests.
		dir, err := os.MkdirTemp("", "harness-test-lock")
		if err != nil {
			panic(err)
		}
		os.Setenv(LockEnv, filepath.Join(dir, "lock"))
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	case "ok":
		// os.Args[1] is the subcommand, as in `benchrun cell ...`.
		os.Exit(ChildMain(os.Args[2:], os.Stdout, os.Stderr))
	case "crash":
		panic("deliberate crash of a cell child")
	case "hang":
		time.Sleep(time.Hour)
	case "sigkill":
		// As the OOM killer or an impatient user would end it.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "overflow":
		// What the Go runtime prints when code on a fiber overflows its
		// stack (the bounds are deliberately not a power of two).
		fmt.Fprintln(os.Stderr, "runtime: newstack sp=0xc000100000 stack=[0xc000100000, 0xc00010fff0]")
		fmt.Fprintln(os.Stderr, "fatal error: stack size not a power of 2")
		os.Exit(2)
	default:
		mode := os.Getenv(childModeEnv)
		if dir, ok := strings.CutPrefix(mode, poolCheckMode); ok {
			os.Exit(poolCheckChild(dir, os.Args[2:]))
		}
		os.Exit(testChildMode(mode))
	}
}

// fakeCommand runs the test binary as the child, in the given mode for the
// rows named in modes and in "ok" mode otherwise.
func fakeCommand(modes map[scenarios.Row]string) func(context.Context, []string) *exec.Cmd {
	return func(ctx context.Context, args []string) *exec.Cmd {
		mode := "ok"
		for i, a := range args {
			if a == "-impl" {
				if m, ok := modes[scenarios.Row(args[i+1])]; ok {
					mode = m
				}
			}
		}
		if mode == "ok" {
			// The cells' figures do not matter here; whether they have
			// one must not depend on the machine's load.
			args = append(args, "-no-disturbance-mark")
		}
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
		return cmd
	}
}

func runTestCells(t *testing.T, ctx context.Context, rows []scenarios.Row, count int, modes map[scenarios.Row]string, timeout time.Duration) (*Summary, *results.File, string) {
	t.Helper()
	dir := t.TempDir()
	sum, err := Run(ctx, Options{
		Cells:     Plan([]*scenarios.Scenario{bodies.PingPong}, rows, true, nil, count),
		Benchtime: time.Millisecond,
		Timeout:   timeout,
		OutDir:    dir,
		Runstamp:  NewRunstamp(time.Now()),
		Header:    "test run",
		Machine:   MachineConfig("test", time.Millisecond, false),
		Command:   fakeCommand(modes),
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := results.ReadFile(sum.ResultsPath)
	if err != nil {
		t.Fatalf("results file does not read back: %v", err)
	}
	log, err := os.ReadFile(sum.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run log:\n%s", log)
	return sum, f, string(log)
}

func TestRunWritesReadableResults(t *testing.T) {
	sum, f, _ := runTestCells(t, context.Background(), []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}, 2, nil, time.Minute)
	if sum.Done != 4 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want 4 done", sum)
	}
	if len(f.Results) != 4 {
		t.Fatalf("%d results read back, want 4", len(f.Results))
	}
	// One config for every line, so benchstat keeps the rows in one table.
	first := f.Results[0]
	for _, r := range f.Results {
		name := r.Name.String()
		for _, cfg := range first.Config {
			if got := r.GetConfig(cfg.Key); got != string(cfg.Value) {
				t.Errorf("%s: config %s = %q, differs from the first line's %q", name, cfg.Key, got, cfg.Value)
			}
		}
		if v, ok := r.Value("sec/switch"); !ok || v <= 0 {
			t.Errorf("%s: sec/switch = %v, %v", name, v, ok)
		}
	}
	procs := results.ParsePerRow(first.GetConfig(results.KeyGOMAXPROCS))
	if procs["goroutine-single"] != "1" || procs["goroutine-multi"] != strconv.Itoa(scenarios.GoroutineMulti.GOMAXPROCS()) {
		t.Errorf("gomaxprocs per row = %v", procs)
	}
	if first.GetConfig(results.KeyGCPolicy) != driver.GCPolicy || first.GetConfig(results.KeyGOOS) == "" || first.GetConfig(results.KeyTimerFloor) == "" {
		t.Errorf("config lines missing: %v", first.Config)
	}
}

func TestCrashingCellFailsAndRunContinues(t *testing.T) {
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	sum, f, log := runTestCells(t, context.Background(), rows, 2, map[scenarios.Row]string{scenarios.GoroutineSingle: "crash"}, time.Minute)
	if sum.Failed != 2 || sum.Done != 2 {
		t.Fatalf("summary %+v, want 2 failed and 2 done", sum)
	}
	if len(f.Results) != 2 || len(f.Notes) != 2 || f.Notes[0].Kind != results.NoteFailed {
		t.Fatalf("results %d, notes %+v", len(f.Results), f.Notes)
	}
	if !strings.HasPrefix(f.Notes[0].Reason, "rep 0: panic: deliberate crash") {
		t.Errorf("note reason %q does not say what happened", f.Notes[0].Reason)
	}
	if !strings.Contains(log, "goroutine ") || !strings.Contains(log, "deliberate crash") {
		t.Errorf("run log lacks the stderr tail:\n%s", log)
	}
}

func TestCellKilledBySignalFails(t *testing.T) {
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	sum, f, _ := runTestCells(t, context.Background(), rows, 1, map[scenarios.Row]string{scenarios.GoroutineSingle: "sigkill"}, time.Minute)
	if sum.Failed != 1 || sum.Done != 1 {
		t.Fatalf("summary %+v, want 1 failed, 1 done", sum)
	}
	if !strings.Contains(f.Notes[0].Reason, "signal: killed") || !strings.Contains(f.Notes[0].Reason, "OOM killer") {
		t.Errorf("note %q does not say the child was killed by a signal", f.Notes[0].Reason)
	}
}

func TestFiberOverflowNamesTheOption(t *testing.T) {
	rows := []scenarios.Row{scenarios.StackfulAsm}
	_, f, _ := runTestCells(t, context.Background(), rows, 1, map[scenarios.Row]string{scenarios.StackfulAsm: "overflow"}, time.Minute)
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0].Reason, fiber.StackSizeOption) {
		t.Fatalf("the failed cell's note does not name %q: %+v", fiber.StackSizeOption, f.Notes)
	}
}

func TestHangingCellTimesOut(t *testing.T) {
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	sum, f, _ := runTestCells(t, context.Background(), rows, 1, map[scenarios.Row]string{scenarios.GoroutineMulti: "hang"}, 2*time.Second)
	if sum.Failed != 1 || sum.Done != 1 {
		t.Fatalf("summary %+v, want 1 failed, 1 done", sum)
	}
	if !strings.Contains(f.Notes[0].Reason, "timed out after 2s") {
		t.Errorf("note %q does not name the timeout", f.Notes[0].Reason)
	}
}

func TestInterruptKeepsFinishedCells(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	// The first cell finishes; the second hangs until the "Ctrl-C", which
	// comes once it has started.
	pids := t.TempDir()
	t.Setenv(pidDirEnv, pids)
	go func() {
		for len(readPids(pids, "cell")) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	sum, f, _ := runTestCells(t, ctx, rows, 3, map[scenarios.Row]string{scenarios.GoroutineMulti: "hang-pid"}, time.Minute)
	if !sum.Interrupted || sum.Done != 1 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want interrupted after 1 done cell, no failure", sum)
	}
	if len(f.Results) != 1 {
		t.Fatalf("%d results kept, want 1", len(f.Results))
	}
	if f.Incomplete != "interrupted after 1 of 6 cells" {
		t.Errorf("incomplete mark %q, want %q", f.Incomplete, "interrupted after 1 of 6 cells")
	}
}

func TestUnsupportedIsNotedOnce(t *testing.T) {
	// stackful-asm is not supported until impl/stackful lands; whatever a
	// row answers, an unsupported cell is noted once, not per repetition.
	sum, f, _ := runTestCells(t, context.Background(), []scenarios.Row{scenarios.StackfulAsm}, 3, nil, time.Minute)
	if sum.Unsupported+sum.Done != 1 && sum.Done != 3 {
		t.Fatalf("summary %+v", sum)
	}
	if sum.Unsupported == 1 && (len(f.Notes) != 1 || f.Notes[0].Kind != results.NoteUnsupported || f.Notes[0].Reason == "") {
		t.Fatalf("notes %+v", f.Notes)
	}
}

func TestPlanInterleavesRowsRoundRobin(t *testing.T) {
	s := &scenarios.Scenario{Name: "x", Bench: "X", Params: []scenarios.Param{{Key: "n", Full: []string{"1", "2"}}}}
	rows := []scenarios.Row{scenarios.StackfulAsm, scenarios.Stackless, scenarios.GoroutineSingle}
	cells := Plan([]*scenarios.Scenario{s}, rows, false, map[string][]string{"other": {"9"}}, 2)
	var got []string
	for _, c := range cells {
		got = append(got, c.Name()+"#"+string(rune('0'+c.Rep)))
	}
	want := []string{
		"X/impl=stackful-asm/n=1#0", "X/impl=stackless/n=1#0", "X/impl=goroutine-single/n=1#0",
		"X/impl=stackful-asm/n=2#0", "X/impl=stackless/n=2#0", "X/impl=goroutine-single/n=2#0",
		"X/impl=stackful-asm/n=1#1", "X/impl=stackless/n=1#1", "X/impl=goroutine-single/n=1#1",
		"X/impl=stackful-asm/n=2#1", "X/impl=stackless/n=2#1", "X/impl=goroutine-single/n=2#1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A capped cell stops after its cap; the others run every repetition.
	s.MaxCount = map[string]int{"n=2": 1}
	got = got[:0]
	for _, c := range Plan([]*scenarios.Scenario{s}, rows[:1], false, nil, 3) {
		got = append(got, c.Name()+"#"+string(rune('0'+c.Rep)))
	}
	want = []string{"X/impl=stackful-asm/n=1#0", "X/impl=stackful-asm/n=2#0", "X/impl=stackful-asm/n=1#1", "X/impl=stackful-asm/n=1#2"}
	if !slices.Equal(got, want) {
		t.Fatalf("capped order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestResultsFileIsNotOverwritten(t *testing.T) {
	dir := t.TempDir()
	stamp := "20260101T000000Z"
	if err := os.WriteFile(filepath.Join(dir, stamp+".txt"), []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{OutDir: dir, Runstamp: stamp, Timeout: time.Second, Benchtime: time.Millisecond})
	if err == nil {
		t.Fatal("Run overwrote an existing results file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, stamp+".txt")); string(b) != "precious\n" {
		t.Fatal("existing results file was changed")
	}
}
