package bodies

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
	"github.com/corobench/corobench/scenarios/loadgen"
	_ "github.com/corobench/corobench/scenarios/rows"
)

// loadgenEnv makes the test binary run as the echo scenario's load
// generator (loadgen.Main) instead of running tests.
const loadgenEnv = "COROBENCH_SCENARIOS_TEST_LOADGEN"

// TestMain lets the test binary be the echo scenario's generator process:
// testLoadgen re-executes it with loadgenEnv set, as benchrun re-executes
// itself with its loadgen subcommand.
func TestMain(m *testing.M) {
	if os.Getenv(loadgenEnv) == "1" {
		os.Exit(loadgen.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func testLoadgen(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	// GORACE: a race-enabled binary otherwise sleeps 1 s at exit.
	cmd.Env = append(os.Environ(), loadgenEnv+"=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

// measureEcho measures one echo cell with the generator command given.
func measureEcho(row scenarios.Row, params map[string]string, command scenarios.LoadgenCommand) (*driver.Sample, error) {
	return driver.MeasureWith(Echo, row, params, driver.Options{Benchtime: time.Millisecond, Loadgen: command})
}

func TestEchoBatchIsWholeRoundsOfAtLeastTheMinimum(t *testing.T) {
	for c, want := range map[int]int{1: 256, 64: 256, 100: 300, 256: 256, 1024: 1024} {
		if got := echoBatch(c); got != want {
			t.Errorf("echoBatch(%d) = %d, want %d", c, got, want)
		}
	}
}

// TestEchoWithoutGeneratorFails checks that a missing generator hook is a
// clear error, not a hang or a figure.
func TestEchoWithoutGeneratorFails(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	_, err := measureEcho(scenarios.GoroutineSingle, map[string]string{"c": "1", "rate": "20000"}, nil)
	if err == nil || !strings.Contains(err.Error(), "Options.Loadgen") {
		t.Fatalf("Measure = %v, want an error naming scenarios.Options.Loadgen", err)
	}
}

// TestEchoReportsAGeneratorFailure runs a generator that refuses its
// arguments: the cell must fail with the generator's own message rather
// than wait for connections that never come.
func TestEchoReportsAGeneratorFailure(t *testing.T) {
	refusing := func(ctx context.Context, args []string) *exec.Cmd {
		return testLoadgen(ctx, append(args, "-size", "0"))
	}
	for _, row := range []scenarios.Row{scenarios.StackfulAsm, scenarios.Stackless, scenarios.GoroutineSingle} {
		t.Run(string(row), func(t *testing.T) {
			withRowGOMAXPROCS(t, row)
			start := time.Now()
			_, err := measureEcho(row, map[string]string{"c": "1", "rate": "20000"}, refusing)
			if _, ok := scenarios.IsNotSupported(err); ok {
				t.Skip(err)
			}
			if err == nil || !strings.Contains(err.Error(), "-size 0") {
				t.Fatalf("Measure = %v, want the generator's complaint about -size 0", err)
			}
			if d := time.Since(start); d > echoAcceptTimeout+5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestReexecLoadgenRunsThisExecutable(t *testing.T) {
	cmd := scenarios.ReexecLoadgen("loadgen")(context.Background(), []string{"-conns", "2"})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != exe || strings.Join(cmd.Args[1:], " ") != "loadgen -conns 2" {
		t.Fatalf("command %q %q, want %q loadgen -conns 2", cmd.Path, cmd.Args, exe)
	}
}

// TestEchoGivesThePinBack checks that a cell leaves the process's CPU
// affinity as it found it: the body pins every thread of the server's
// process to one core, and a test process goes on to run other cells.
func TestEchoGivesThePinBack(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if before.Count() < 2 {
		t.Skip("fewer than two cores allowed: the echo cell pins nothing")
	}
	withRowGOMAXPROCS(t, scenarios.GoroutineMulti)
	if _, err := measureEcho(scenarios.GoroutineMulti, map[string]string{"c": "1", "rate": "20000"}, testLoadgen); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // the thread exited
		}
		if set != before {
			t.Errorf("thread %d: affinity %v after the echo cell, was %v", tid, set, before)
		}
	}
}

// TestEchoReportsItsServerCost runs one echo cell per kind of body: each
// must report a positive cpu-ns/req, the metric the report's capacity
// estimate (LoadSweep.Capacity) reads.
func TestEchoReportsItsServerCost(t *testing.T) {
	if Echo.Load.Capacity != echoCostUnit {
		t.Fatalf("Echo.Load.Capacity = %q, want %q", Echo.Load.Capacity, echoCostUnit)
	}
	idx := -1
	for i, m := range Echo.Metrics {
		if m.Unit == echoCostUnit {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("Echo's metrics lack %s", echoCostUnit)
	}
	for _, row := range []scenarios.Row{scenarios.Stackless, scenarios.GoroutineSingle} {
		t.Run(string(row), func(t *testing.T) {
			withRowGOMAXPROCS(t, row)
			sm, err := measureEcho(row, map[string]string{"c": "4", "rate": "20000"}, testLoadgen)
			if err != nil {
				t.Fatal(err)
			}
			if v := sm.Values[idx]; !(v > 0) {
				t.Errorf("%s = %v, want a positive time", echoCostUnit, v)
			}
		})
	}
}
