package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/loadgen"
)

// Environment variables of the process tests' children.
const (
	pidDirEnv   = "COROBENCH_HARNESS_TEST_PIDS"   // where children write their pids
	runnerEnv   = "COROBENCH_HARNESS_TEST_RUNNER" // scenario the runner runs
	outDirEnv   = "COROBENCH_HARNESS_TEST_OUT"    // the runner's output directory
	cellModeEnv = "COROBENCH_HARNESS_TEST_CELLS"  // the runner's children's mode
)

// testChildMode runs the test binary as one of the processes of the
// process tests below; it returns the exit status.
func testChildMode(mode string) int {
	switch mode {
	case "hang-pid":
		// A cell that hangs, saying who it is.
		writePid("cell")
		time.Sleep(time.Hour)
	case "echo":
		// A real echo cell, whose load generator is this binary again.
		writePid("cell")
		// ChildMain re-executes this binary as `loadgen ARGS`; the
		// environment it inherits makes that process the generator.
		os.Setenv(childModeEnv, "loadgen")
		return ChildMain(os.Args[2:], os.Stdout, os.Stderr)
	case "fakegen":
		return fakeGeneratorMain()
	case "loadgen":
		writePid("loadgen")
		return loadgen.Main(os.Args[2:], os.Stdout, os.Stderr)
	case "envcheck":
		// Reports the runtime settings in effect in this child, as the
		// unsupported reason (any report the parent accepts will do).
		gogc := debug.SetGCPercent(100)
		limit := debug.SetMemoryLimit(-1)
		env := map[string]string{
			"GOGC":        strconv.Itoa(gogc),
			"GOMEMLIMIT":  strconv.FormatInt(limit, 10),
			"GOMAXPROCS":  strconv.Itoa(runtime.GOMAXPROCS(0)),
			"GODEBUG":     os.Getenv("GODEBUG"),
			"GOTRACEBACK": os.Getenv("GOTRACEBACK"),
		}
		b, _ := json.Marshal(env)
		_ = json.NewEncoder(os.Stdout).Encode(childReport{Unsupported: string(b)})
		return 0
	case "runner":
		return runner()
	}
	if code, ok := noiseChildMode(mode); ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}

func writePid(role string) {
	dir := os.Getenv(pidDirEnv)
	f, err := os.OpenFile(filepath.Join(dir, role+".pids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
}

// runner is a benchrun run in a process of its own: it runs the scenario
// named by runnerEnv on goroutine-single, its children in the mode
// cellModeEnv says, with a long timeout and bench time.
func runner() int {
	s, ok := scenarios.Lookup(os.Getenv(runnerEnv))
	if !ok {
		fmt.Fprintln(os.Stderr, "runner: no scenario")
		return 2
	}
	rows := []scenarios.Row{scenarios.GoroutineSingle}
	modes := map[scenarios.Row]string{scenarios.GoroutineSingle: os.Getenv(cellModeEnv)}
	_, err := Run(context.Background(), Options{
		Cells:     Plan([]*scenarios.Scenario{s}, rows, true, nil, 1)[:1],
		Benchtime: time.Hour,
		Timeout:   time.Hour,
		OutDir:    os.Getenv(outDirEnv),
		Runstamp:  NewRunstamp(time.Now()),
		Header:    "runner",
		Command:   fakeCommand(modes),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		return 1
	}
	return 0
}

// readPids returns the pids the children of role wrote so far.
func readPids(dir, role string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, role+".pids"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// alive reports whether pid is a running process (a zombie, dead but not
// yet reaped by whoever inherited it, is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// killRunnerLeavesNoChild starts a runner whose cell has children of the
// given roles, waits until each role has a process, SIGKILLs the runner (as
// a CI timeout or the OOM killer would), and checks that every child
// process dies too.
func killRunnerLeavesNoChild(t *testing.T, scenario, cellMode string, roles ...string) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"=runner", runnerEnv+"="+scenario, cellModeEnv+"="+cellMode,
		pidDirEnv+"="+dir, outDirEnv+"="+filepath.Join(dir, "out"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for _, role := range roles {
		for len(readPids(dir, role)) == 0 {
			select {
			case err := <-exited:
				t.Fatalf("the runner exited (%v) before its %s started:\n%s", err, role, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("no %s started within a minute:\n%s", role, stderr.String())
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	var pids []int
	for _, role := range roles {
		pids = append(pids, readPids(dir, role)...)
	}
	// The kernel delivers the death signal as the parent exits; a few
	// seconds allow for a loaded machine, not for a child that lingers.
	for wait := time.Now().Add(5 * time.Second); ; {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			t.Logf("all of %v died with the runner", pids)
			return
		}
		if time.Now().After(wait) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v (of %v: %v) outlived the killed runner", left, roles, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKilledRunLeavesNoChild: SIGKILL of benchrun while a cell hangs kills
// the cell.
func TestKilledRunLeavesNoChild(t *testing.T) {
	killRunnerLeavesNoChild(t, "pingpong", "hang-pid", "cell")
}

// TestKilledRunLeavesNoLoadGenerator: SIGKILL of benchrun during an echo
// cell kills the cell and the load generator it started (the grandchild).
func TestKilledRunLeavesNoLoadGenerator(t *testing.T) {
	killRunnerLeavesNoChild(t, "echo", "echo", "cell", "loadgen")
}

// TestRunRefusesForeignRuntimeEnv: a GOMEMLIMIT (or any variable benchrun
// controls) in the environment stops the run before any cell, naming the
// variable and the fix.
func TestRunRefusesForeignRuntimeEnv(t *testing.T) {
	for _, kv := range []string{"GOGC=off", "GOMEMLIMIT=1MiB", "GODEBUG=madvdontneed=0", "GOMAXPROCS=7", "GORACE=halt_on_error=1"} {
		name, _, _ := strings.Cut(kv, "=")
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, kv[len(name)+1:])
			dir := t.TempDir()
			_, err := Run(context.Background(), Options{
				Cells:  Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1),
				OutDir: dir, Runstamp: "x", Timeout: time.Minute, Benchtime: time.Millisecond, Command: fakeCommand(nil),
			})
			if err == nil || !strings.Contains(err.Error(), kv+" is set") || !strings.Contains(err.Error(), "env -u "+name) {
				t.Fatalf("error %v, want one naming %s and the fix", err, kv)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files written before the refusal: %v", entries)
			}
		})
	}
	for _, ok := range []string{"GOTRACEBACK=all", "GOEXPERIMENT=foo", "GOCOVERDIR=/tmp", "GOGCX=1", "GOGC="} {
		if err := CheckEnv([]string{ok}); err != nil {
			t.Errorf("CheckEnv(%s) = %v, want nil", ok, err)
		}
	}
}

// TestChildRuntimeEnvIsRecorded: whatever the parent's environment, every
// child runs under the controlled settings, and they are what the results'
// config lines say.
func TestChildRuntimeEnvIsRecorded(t *testing.T) {
	cfg := map[string]string{}
	for _, c := range MachineConfig("test", time.Millisecond, false) {
		cfg[c.Key] = string(c.Value)
	}
	recorded := map[string]string{}
	for _, kv := range strings.Fields(cfg[results.KeyRuntimeEnv]) {
		k, v, _ := strings.Cut(kv, "=")
		recorded[k] = v
	}
	if recorded["GOGC"] != "100" || recorded["GOMEMLIMIT"] != "off" || recorded["GOTRACEBACK"] == "" {
		t.Fatalf("runtime-env line %q", cfg[results.KeyRuntimeEnv])
	}
	godebug := results.ParsePerRow(cfg[results.KeyGODEBUG])
	procs := results.ParsePerRow(cfg[results.KeyGOMAXPROCS])
	// The user's settings, as they would reach the children if not
	// controlled (Run refuses them; childEnv must drop them regardless).
	foreign := []string{"GOGC=5", "GOMEMLIMIT=1MiB", "GODEBUG=madvdontneed=0", "GOMAXPROCS=7", "GOTRACEBACK=all"}
	for _, row := range []scenarios.Row{scenarios.StackfulAsm, scenarios.GoroutineSingle, scenarios.GoroutineMulti} {
		command := func(ctx context.Context, args []string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(append(os.Environ(), foreign...), childModeEnv+"=envcheck")
			return cmd
		}
		c := Cell{Scenario: bodies.PingPong, Row: row, Params: map[string]string{}}
		out := runCell(context.Background(), command, c, Options{Timeout: time.Minute, Benchtime: time.Millisecond}, &pinPlan{cpu: -1, off: "off (test)"})
		if out.err != nil {
			t.Fatalf("%s: %v\n%s", row, out.err, out.stderrTail)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(out.report.Unsupported), &got); err != nil {
			t.Fatal(err)
		}
		wantGODEBUG := godebug[string(row)]
		if wantGODEBUG == "default" {
			wantGODEBUG = ""
		}
		// The row's own GOMAXPROCS; its pool cells' follows in parentheses.
		ownProcs := strings.Fields(procs[string(row)])[0]
		want := map[string]string{
			"GOGC":        "100",
			"GOMEMLIMIT":  strconv.FormatInt(math.MaxInt64, 10), // "off"
			"GOMAXPROCS":  ownProcs,
			"GODEBUG":     wantGODEBUG,
			"GOTRACEBACK": "all", // passes through, alike for every row
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s in effect in the child = %q, recorded/controlled %q", row, k, got[k], v)
			}
		}
	}
}

// TestFailureReasonIsTheChildsError: a real failing cell (a deadlock in
// the stackful runtime, from a yield with a negative count) is recorded
// with the child's own error line, not the last frame of its stack dump.
func TestFailureReasonIsTheChildsError(t *testing.T) {
	dir := t.TempDir()
	sum, err := Run(context.Background(), Options{
		Cells:     Plan([]*scenarios.Scenario{bodies.Yield}, []scenarios.Row{scenarios.StackfulAsm}, true, map[string][]string{"n": {"-5"}}, 1),
		Benchtime: time.Millisecond, Timeout: time.Minute, OutDir: dir, Runstamp: "x", Command: fakeCommand(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := results.ReadFile(sum.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Notes) != 1 {
		t.Fatalf("notes %+v, want one failed cell", f.Notes)
	}
	r := f.Notes[0].Reason
	t.Logf("reason: %s", r)
	if f.Notes[0].Kind != results.NoteFailed || !strings.Contains(r, "stackful: deadlock") || strings.Contains(r, ".s:") || strings.Contains(r, ".go:") {
		t.Fatalf("reason %q: want the child's deadlock message, not a stack frame", r)
	}
}

func TestFailureReasonPicksTheCause(t *testing.T) {
	cases := []struct{ stderr, want string }{
		{cellErrorPrefix + "Yield/impl=stackful-asm/n=-5: stackful: deadlock: 1 coroutine(s) waiting\nstackful: coroutine main#1 panicked\ngoroutine 1 [running]:\nruntime/debug.Stack()\n\t/usr/local/go/src/runtime/debug/stack.go:26 +0x5e\ngithub.com/x/fiber.fiberStart()\n\t/work/impl/stackful/fiber/switch_amd64.s:147 +0x9\n",
			"Yield/impl=stackful-asm/n=-5: stackful: deadlock: 1 coroutine(s) waiting"},
		{"fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/x/main.go:5 +0x1d\nexit status 2\n", "fatal error: all goroutines are asleep - deadlock!"},
		{"runtime: newstack sp=0x1\nfatal error: stack size not a power of 2\n", "fatal error: stack size not a power of 2"},
		{"SIGSEGV: segmentation violation\nPC=0x46b1c3 m=0 sigcode=1\n\ngoroutine 1 gp=0x1 m=0 mp=0x2 [running]:\n", "SIGSEGV: segmentation violation"},
		{"goroutine 1 [running]:\nmain.f(...)\n\t/x/y.go:3\nmain.main()\n\t/x/y.go:9 +0x1d\n", "(no stderr)"},
		{"stackpool: 65000 guarded stacks exceed vm.max_map_count: sysctl -w vm.max_map_count=<more>\n", "stackpool: 65000 guarded stacks exceed vm.max_map_count: sysctl -w vm.max_map_count=<more>"},
		{"", "(no stderr)"},
	}
	for _, c := range cases {
		if got := failureReason(c.stderr); got != c.want {
			t.Errorf("failureReason(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
}

// fsizeCells is about how many cells fit under the file size limit of
// TestFullDiskKeepsFinishedCells' runner, past the header and config.
const fsizeCells = 6

// TestFullDiskKeepsFinishedCells runs benchrun with a file size limit (the
// kernel cuts the write that crosses it short, as a full disk does): the
// run stops with an error, and the results file reads back without error,
// holding every cell finished before.
func TestFullDiskKeepsFinishedCells(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFullDiskRunner$")
	cmd.Env = append(os.Environ(), outDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("runner: %v\n%s", err, out)
	}
	var done int
	var path string
	if _, err := fmt.Sscanf(string(out[bytes.Index(out, []byte("done "))-0:]), "done %d in %s", &done, &path); err != nil {
		t.Fatalf("runner output %q: %v", out, err)
	}
	f, err := results.ReadFile(path)
	if err != nil {
		t.Fatalf("the results file of a run stopped by a full disk does not read back: %v", err)
	}
	if len(f.Results) != done || done == 0 {
		t.Fatalf("read back %d results; the run finished %d before the disk was full", len(f.Results), done)
	}
	st, _ := os.Stat(path)
	t.Logf("%d cells kept in %d bytes", done, st.Size())
}

// TestFullDiskRunner is TestFullDiskKeepsFinishedCells' runner.
func TestFullDiskRunner(t *testing.T) {
	dir := os.Getenv(outDirEnv)
	if dir == "" {
		t.Skip("runs only as a child of TestFullDiskKeepsFinishedCells")
	}
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.Stackless}
	opts := Options{
		Cells:     Plan([]*scenarios.Scenario{bodies.PingPong}, rows, true, nil, fsizeCells),
		Benchtime: time.Millisecond, Timeout: time.Minute, OutDir: dir, Runstamp: "full",
		Header: "full disk", Machine: MachineConfig("full", time.Millisecond, false), Command: fakeCommand(nil),
	}
	// The limit: the file's head (header, config, unit lines) and about
	// fsizeCells result lines of 100 bytes; the 2×fsizeCells cells do not
	// fit.
	var head bytes.Buffer
	w, _ := results.NewWriter(&head, opts.Header)
	_ = w.Config(opts.Machine)
	_ = writeUnitMetadata(w, opts.Cells)
	limit := uint64(head.Len() + 100*fsizeCells)
	// Go ignores SIGXFSZ: a write past the limit writes what fits and
	// fails with EFBIG, as a write to a full disk does with ENOSPC.
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	sum, err := Run(context.Background(), opts)
	if err == nil || !errors.Is(err, syscall.EFBIG) || !strings.Contains(err.Error(), "are kept") {
		t.Fatalf("Run = %v, want the EFBIG of the full file, saying the cells before are kept", err)
	}
	fmt.Printf("done %d in %s\n", sum.Done, sum.ResultsPath)
}

// TestSecondRunWaitsForTheLock: a run started while another holds the
// machine lock waits, naming the other's pid, and starts when it ends.
func TestSecondRunWaitsForTheLock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "machine.lock")
	rows := []scenarios.Row{scenarios.GoroutineSingle}
	opts := func(mode, stamp string, stderr *syncBuffer) Options {
		return Options{
			Cells:     Plan([]*scenarios.Scenario{bodies.PingPong}, rows, true, nil, 1),
			Benchtime: time.Millisecond, Timeout: time.Hour, OutDir: t.TempDir(), Runstamp: stamp,
			Command:  fakeCommand(map[scenarios.Row]string{scenarios.GoroutineSingle: mode}),
			LockPath: lock, Stderr: stderr,
		}
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first := make(chan *Summary, 1)
	go func() {
		sum, _ := Run(ctx1, opts("hang", "first", &syncBuffer{}))
		first <- sum
	}()
	// The first run holds the lock once it has written its pid.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(lock); strings.Contains(string(b), "run first") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run did not take the lock")
		}
	}
	var msg syncBuffer
	second := make(chan *Summary, 1)
	go func() {
		sum, err := Run(context.Background(), opts("ok", "second", &msg))
		if err != nil {
			t.Error(err)
		}
		second <- sum
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(msg.String(), "waiting"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second run did not say it waits")
		}
	}
	if want := fmt.Sprintf("pid %d, run first", os.Getpid()); !strings.Contains(msg.String(), want) {
		t.Errorf("message %q does not name the holder (%q)", msg.String(), want)
	}
	select {
	case <-second:
		t.Fatal("the second run ran while the first held the lock")
	case <-time.After(300 * time.Millisecond):
	}
	cancel1()
	if sum := <-first; sum == nil || !sum.Interrupted {
		t.Fatalf("first run: %+v", sum)
	}
	select {
	case sum := <-second:
		if sum == nil || sum.Done != 1 {
			t.Fatalf("second run: %+v", sum)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second run did not start after the first ended")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSIGTERMMarksTheRunIncomplete: SIGTERM ends the run as Ctrl-C does;
// the results say it is incomplete and why, and the exit status is 143.
func TestSIGTERMMarksTheRunIncomplete(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	rows := []scenarios.Row{scenarios.GoroutineSingle, scenarios.GoroutineMulti}
	// The signal comes once the second cell (which hangs) has started.
	pids := t.TempDir()
	t.Setenv(pidDirEnv, pids)
	go func() {
		for len(readPids(pids, "cell")) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	sum, f, _ := runTestCells(t, ctx, rows, 2, map[scenarios.Row]string{scenarios.GoroutineMulti: "hang-pid"}, time.Minute)
	if !sum.Interrupted {
		t.Fatalf("summary %+v, want interrupted", sum)
	}
	if f.Incomplete != "interrupted by SIGTERM after 1 of 4 cells" {
		t.Errorf("incomplete mark %q", f.Incomplete)
	}
	if got := InterruptStatus(ctx); got != 143 {
		t.Errorf("exit status %d, want 143", got)
	}
}

// TestAllFailedRunHasMetadata: a run in which every cell fails still
// records the machine it ran on.
func TestAllFailedRunHasMetadata(t *testing.T) {
	_, f, _ := runTestCells(t, context.Background(), []scenarios.Row{scenarios.GoroutineSingle}, 1, map[scenarios.Row]string{scenarios.GoroutineSingle: "crash"}, time.Minute)
	got := map[string]string{}
	for _, c := range f.Config {
		got[c.Key] = string(c.Value)
	}
	for _, k := range []string{results.KeyGOOS, results.KeyCPU, results.KeyCommit, results.KeyGCPolicy, results.KeyRuntimeEnv, results.KeyGODEBUG, results.KeyBuild} {
		if got[k] == "" {
			t.Errorf("config %s missing from an all-failed run: %v", k, got)
		}
	}
}

// TestCommitFromBuildInfo: the commit comes from the binary's VCS stamp,
// never from the working directory's repository.
func TestCommitFromBuildInfo(t *testing.T) {
	stamped := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "GOAMD64", Value: "v3"}, {Key: "CGO_CFLAGS", Value: ""}}
	if got := buildCommit(stamped); got != "0123456789ab+dirty" {
		t.Errorf("buildCommit = %q", got)
	}
	stamped[2].Value = "false"
	if got := buildCommit(stamped); got != "0123456789ab" {
		t.Errorf("buildCommit = %q", got)
	}
	if got := buildCommit(stamped[3:]); !strings.HasPrefix(got, "unknown (") {
		t.Errorf("no stamp: %q, want unknown and why", got)
	}
	if got := buildConfig(stamped); got != "GOAMD64=v3" {
		t.Errorf("buildConfig = %q", got)
	}
	// A test binary has no VCS stamp: whatever repository the working
	// directory is in (this one is in corobench's), the commit is unknown.
	bi, _ := debug.ReadBuildInfo()
	want := buildCommit(bi.Settings)
	for _, c := range MachineConfig("x", time.Second, false) {
		if c.Key == results.KeyCommit && string(c.Value) != want {
			t.Errorf("commit %q, want the build's %q", c.Value, want)
		}
	}
}

func TestDefaultDirIsAtTheModuleRoot(t *testing.T) {
	wd, _ := os.Getwd()
	root := ModuleRoot(wd)
	if root == "" || !declaresModule(filepath.Join(root, "go.mod"), modulePath) {
		t.Fatalf("ModuleRoot(%s) = %q", wd, root)
	}
	got := DefaultDir("results")
	if abs, _ := filepath.Abs(got); abs != filepath.Join(root, "results") {
		t.Errorf("DefaultDir(results) = %q from %s, want %s", got, wd, filepath.Join(root, "results"))
	}
	t.Chdir(t.TempDir())
	if got := DefaultDir("results"); got != "results" {
		t.Errorf("outside a checkout DefaultDir = %q, want results", got)
	}
}

// TestFuncAlignNote: the warning names the flag when the build lacks it and
// is empty when -ldflags carries -funcalign=64 among other flags.
func TestFuncAlignNote(t *testing.T) {
	if got := funcAlignNote(nil); !strings.Contains(got, "-ldflags=-funcalign=64") {
		t.Errorf("no build settings: note %q does not name the flag", got)
	}
	other := []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w"}}
	if got := funcAlignNote(other); got == "" {
		t.Error("-ldflags without -funcalign: no note")
	}
	with := []debug.BuildSetting{{Key: "-ldflags", Value: "-s -funcalign=64"}}
	if got := funcAlignNote(with); got != "" {
		t.Errorf("-ldflags with -funcalign=64: note %q, want none", got)
	}
}

// TestChildRunByHandGetsTheCellsGOMAXPROCS: a cell child run by hand (no
// GOMAXPROCS in its environment) gives the cell the Ps the harness would,
// so that a single-P row does not run on two (goroutine-single refuses to
// run on the wrong count, so the cell fails without it).
func TestChildRunByHandGetsTheCellsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // as on a 2-core machine with nothing set
	var stdout, stderr bytes.Buffer
	code := ChildMain([]string{"-scenario", "yield", "-impl", "goroutine-single", "-params", "n=2", "-benchtime", "1ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("cell by hand at GOMAXPROCS 2: exit %d\n%s", code, stderr.String())
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d after the cell, want goroutine-single's 1", got)
	}
}
