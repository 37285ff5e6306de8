package harness

import (
	"context"
	"encoding/json"
	"github.com/corobench/corobench/scenarios/loadgen"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// The other tests of this package are not about the ceiling: their runs
// skip it (a few seconds of generator processes per run with echo cells).
func init() { ceilingCommand = nil }

// TestEchoSweepConns: the ceiling is measured at the connection count the
// echo cells sweep the most rates at, and not at all without echo cells.
func TestEchoSweepConns(t *testing.T) {
	rows := []scenarios.Row{scenarios.GoroutineSingle}
	if c, ok := echoSweepConns(Plan([]*scenarios.Scenario{bodies.Echo}, rows, false, nil, 1)); !ok || c != 64 {
		t.Errorf("default echo plan: c=%d (%v), want 64", c, ok)
	}
	over := map[string][]string{"c": {"8", "16"}, "rate": {"1000", "2000"}}
	if c, ok := echoSweepConns(Plan([]*scenarios.Scenario{bodies.Echo}, rows, false, over, 1)); !ok || c != 8 {
		t.Errorf("c=8,16 × two rates: c=%d (%v), want 8 (a tie goes to the fewer connections)", c, ok)
	}
	if _, ok := echoSweepConns(Plan([]*scenarios.Scenario{bodies.PingPong}, rows, false, nil, 1)); ok {
		t.Error("a plan without echo cells asks for a ceiling")
	}
}

// TestLoadgenCeiling measures a short ceiling sweep with the test binary
// as the generator and checks the config line: its key, the scenario and
// setting, and a rate or "none", with how it was measured.
func TestLoadgenCeiling(t *testing.T) {
	dir := t.TempDir()
	old, oldMax := ceilingCommand, ceilingMaxRate
	ceilingCommand = func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], append([]string{LoadgenSubcommand}, args...)...)
		cmd.Env = append(os.Environ(), childModeEnv+"=loadgen", pidDirEnv+"="+dir)
		return cmd
	}
	ceilingMaxRate = 61_000 // two rates: 50k and 60k
	defer func() { ceilingCommand, ceilingMaxRate = old, oldMax }()
	pins, err := newPinPlan(true)
	if err != nil {
		t.Fatal(err)
	}
	// The forking thread keeps the parent's set after each child, as in
	// a run; give it (and every thread) back the test's own set.
	defer pins.restore()
	plan := Plan([]*scenarios.Scenario{bodies.Echo}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1)
	cfg := loadgenCeiling(context.Background(), plan, pins)
	if len(cfg) != 1 || cfg[0].Key != results.KeyLoadgenCeiling || !cfg[0].File {
		t.Fatalf("config %+v, want one file-level %s line", cfg, results.KeyLoadgenCeiling)
	}
	want := regexp.MustCompile(`^Echo c=64: (60000 req/s|5\d000 req/s|none) \(the highest offered rate of which the generator completed .* against a trivial echo server in its own process`)
	if v := string(cfg[0].Value); !want.MatchString(v) {
		t.Errorf("ceiling line %q does not match %v", v, want)
	}
	// The line names the engine the generator used (the test binary's
	// generator picks one as benchrun's does).
	if v := string(cfg[0].Value); !regexp.MustCompile(`generator engine (io_uring \(ring setup flags [A-Z_|a-z ]+\)|epoll \(io_uring refused .*\))`).MatchString(v) {
		t.Errorf("ceiling line %q does not name the generator's engine", v)
	}
	if v := string(cfg[0].Value); !regexp.MustCompile(`generator turns with nothing to do \d+% of the time, trivial server waiting for work \d+%`).MatchString(v) {
		t.Errorf("ceiling line %q does not say which side had time to spare", v)
	}
	// One try per rate sustained, up to ceilingTries for one that is not.
	if got := len(readPids(dir, "loadgen")); got < 2 {
		t.Errorf("%d generator processes, want at least 2 (one try per rate, more for a rate that fails)", got)
	}
	t.Log(string(cfg[0].Value))
	if cfg := loadgenCeiling(context.Background(), Plan([]*scenarios.Scenario{bodies.PingPong}, []scenarios.Row{scenarios.GoroutineSingle}, true, nil, 1), pins); cfg != nil {
		t.Errorf("a run without echo cells has a ceiling line %+v", cfg)
	}
}

func TestEngineText(t *testing.T) {
	for _, c := range []struct {
		rep  loadgen.Report
		want string
	}{
		{loadgen.Report{Engine: "io_uring", EngineNote: "ring setup flags COOP_TASKRUN"}, "io_uring (ring setup flags COOP_TASKRUN)"},
		{loadgen.Report{Engine: "epoll", EngineNote: "io_uring refused (io_uring_setup: operation not permitted), so epoll"}, "epoll (io_uring refused (io_uring_setup: operation not permitted), so epoll)"},
		{loadgen.Report{Engine: "epoll"}, "epoll"},
		{loadgen.Report{Engine: "io_uring", Threads: 3}, "io_uring, 3 threads"},
		{loadgen.Report{Engine: "io_uring", Threads: 1}, "io_uring"},
		{loadgen.Report{}, "unknown (the generator did not say)"},
	} {
		if got := engineText(c.rep); got != c.want {
			t.Errorf("engineText(%+v) = %q, want %q", c.rep, got, c.want)
		}
	}
}

// fakeGeneratorEnv holds the generator arguments of the test binary run as
// a fake generator for TestCeilingRefines (child mode "fakegen", which
// runs fakeGeneratorMain): it completes what it is offered up to
// fakeGeneratorCapacity req/s and writes the Report a generator would. A
// child mode, not a test the child runs, so that the child never makes
// TestMain's lock directory (a test that exits the process cannot remove
// it).
const fakeGeneratorEnv = "COROBENCH_CEILING_FAKE_GENERATOR_ARGS"

const fakeGeneratorCapacity = 112_000.0

func fakeGeneratorMain() int {
	cfg, err := loadgen.ParseArgs(strings.Split(os.Getenv(fakeGeneratorEnv), "\x1f"), os.Stderr)
	if err != nil {
		return 2
	}
	achieved := min(cfg.Rate, fakeGeneratorCapacity)
	rep := loadgen.Report{Requests: cfg.Requests, ElapsedNs: int64(float64(cfg.Requests) / achieved * 1e9),
		LatencyNs: make([]int64, cfg.Requests), CPU: 1, Engine: "io_uring", EngineNote: "ring setup flags FAKE", Threads: 1,
		// A server core that costs 8 µs per request at the lowest rate and
		// 4 µs from 100k on.
		ServerCostNs: 8000}
	if cfg.Rate >= 100_000 {
		rep.ServerCostNs = 4000
	}
	for i := range rep.LatencyNs {
		rep.LatencyNs[i] = 1000
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// TestCeilingRefines: after the ×1.2 sweep's first failure, the halvings
// narrow the gap. A generator that completes up to 112k req/s sustains
// 103k (97%) and not 124k (90%) in the sweep; 113k (99%) passes and 118k
// (94.9%) fails in the halvings. The line gives the trivial server's core
// cost at the lowest rate sustained (50k) and at the ceiling (113k).
func TestCeilingRefines(t *testing.T) {
	old := ceilingCommand
	ceilingCommand = func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), childModeEnv+"=fakegen", fakeGeneratorEnv+"="+strings.Join(args, "\x1f"))
		return cmd
	}
	defer func() { ceilingCommand = old }()
	pins := &pinPlan{cpu: -1, off: "not pinned in this test"}
	got := measureCeiling(context.Background(), 64, pins)
	for _, want := range []string{"113000 req/s (", "first rate not sustained 118000 req/s (the best of 3 tries completed 95%", "generator engine io_uring (ring setup flags FAKE)", "2 halvings",
		"the trivial server's core busy 8µs per request at 50000 req/s (1e9 over it, 125000 req/s, is the report's lower bound on one core), 4µs at 113000 req/s"} {
		if !strings.Contains(got, want) {
			t.Errorf("ceiling %q does not contain %q", got, want)
		}
	}
}
