package scenarios

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/corobench/corobench/scenarios/loadgen"
)

// loadgenEnv makes the test binary run as the echo scenario's load
// generator (loadgen.Main) instead of running tests.
const loadgenEnv = "COROBENCH_SCENARIOS_TEST_LOADGEN"

// TestMain lets the test binary be the echo scenario's generator process:
// LoadgenCommand re-executes it with loadgenEnv set, as benchrun re-executes
// itself with its loadgen subcommand.
func TestMain(m *testing.M) {
	if os.Getenv(loadgenEnv) == "1" {
		os.Exit(loadgen.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	LoadgenCommand = func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), loadgenEnv+"=1")
		return cmd
	}
	os.Exit(m.Run())
}
