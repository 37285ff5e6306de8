package harness

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// probeRun runs one PingPong goroutine-single cell through Run with the
// options set sets, and returns the arguments of its first child and the
// timed runs' lines of its run log (the probes' readings go on them).
func probeRun(t *testing.T, set func(*Options)) (args []string, runs []string) {
	t.Helper()
	args, runs, _ = probeRunResults(t, set)
	return args, runs
}

// probeRunResults is probeRun that also returns the results file's text.
func probeRunResults(t *testing.T, set func(*Options)) (args []string, runs []string, resultsText string) {
	t.Helper()
	var all [][]string
	cmd := fakeCommand(nil)
	opts := Options{
		Cells:     Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1),
		Benchtime: time.Millisecond,
		Timeout:   time.Minute,
		OutDir:    t.TempDir(),
		Runstamp:  NewRunstamp(time.Now()),
		Header:    "test run",
		Machine:   MachineConfig("test", time.Millisecond, false),
		Command: func(ctx context.Context, a []string) *exec.Cmd {
			all = append(all, a)
			return cmd(ctx, a)
		},
	}
	set(&opts)
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(sum.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no child was started")
	}
	runs = regexp.MustCompile(`(?m)^    run \d+: .*$`).FindAllString(string(log), -1)
	if len(runs) == 0 {
		t.Fatalf("no run lines in the log:\n%s", log)
	}
	res, err := os.ReadFile(sum.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	return all[0], runs, string(res)
}

// TestMemProbeReachesTheRunLog: with Options.MemProbe the child is asked
// for the memory probe's readings (-mem-probe) and the run log shows them
// on every timed run's line; without it the flag is not passed and the
// lines have none.
func TestMemProbeReachesTheRunLog(t *testing.T) {
	probed := regexp.MustCompile(`, mem probe \d+(\.\d)?/\d+(\.\d)? ns/load`)
	for _, on := range []bool{true, false} {
		args, runs := probeRun(t, func(o *Options) { o.MemProbe = on })
		if slices.Contains(args, "-mem-probe") != on {
			t.Errorf("MemProbe %v: child args %q", on, args)
		}
		for _, l := range runs {
			if probed.MatchString(l) != on {
				t.Errorf("MemProbe %v: run line %q", on, l)
			}
		}
	}
}
