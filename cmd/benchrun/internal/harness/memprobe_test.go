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

// TestMemProbeReachesTheRunLog: with Options.MemProbe the child is asked
// for the memory probe's readings (-mem-probe) and the run log shows them
// on every timed run's line; without it the flag is not passed and the
// lines have none.
func TestMemProbeReachesTheRunLog(t *testing.T) {
	for _, on := range []bool{true, false} {
		var args [][]string
		cmd := fakeCommand(nil)
		dir := t.TempDir()
		sum, err := Run(context.Background(), Options{
			Cells:     Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1),
			Benchtime: time.Millisecond,
			Timeout:   time.Minute,
			OutDir:    dir,
			Runstamp:  NewRunstamp(time.Now()),
			Header:    "test run",
			Machine:   MachineConfig("test", time.Millisecond, false),
			MemProbe:  on,
			Command: func(ctx context.Context, a []string) *exec.Cmd {
				args = append(args, a)
				return cmd(ctx, a)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		log, err := os.ReadFile(sum.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(args) == 0 || slices.Contains(args[0], "-mem-probe") != on {
			t.Errorf("MemProbe %v: child args %q", on, args)
		}
		runs := regexp.MustCompile(`(?m)^    run \d+: .*$`).FindAllString(string(log), -1)
		probed := regexp.MustCompile(`, mem probe \d+(\.\d)?/\d+(\.\d)? ns/load`)
		if len(runs) == 0 {
			t.Fatalf("MemProbe %v: no run lines in the log:\n%s", on, log)
		}
		for _, l := range runs {
			if probed.MatchString(l) != on {
				t.Errorf("MemProbe %v: run line %q", on, l)
			}
		}
	}
}
