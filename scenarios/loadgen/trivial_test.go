package loadgen

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// mainEnv makes the test binary run Main with its arguments instead of the
// tests, for the modes that pin the whole process (-self-echo).
const mainEnv = "COROBENCH_LOADGEN_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestTrivialServerEchoes: the generator's every reply from the trivial
// server verifies, and Close ends the server cleanly.
func TestTrivialServerEchoes(t *testing.T) {
	srv, err := StartTrivialServer(-1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(srv.Addr())
	rep, err := Run(cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	if rep.Requests != cfg.Requests || rep.Bytes != int64(cfg.Requests*cfg.Size) {
		t.Errorf("report %d requests, %d bytes; want %d, %d", rep.Requests, rep.Bytes, cfg.Requests, cfg.Requests*cfg.Size)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// TestSelfEchoRunsAgainstItsOwnServer runs Main -self-echo in a process of
// its own (it pins itself): it reports every request, and with two cores
// allowed, the server and the generator on two different ones.
func TestSelfEchoRunsAgainstItsOwnServer(t *testing.T) {
	cfg := Config{Conns: 8, Requests: 2000, Rate: 50000, Size: 64, CPU: -1, Timeout: 20 * time.Second, SelfEcho: true}
	rep := runSelfEchoProcess(t, cfg)
	if rep.Requests != cfg.Requests || len(rep.LatencyNs) != cfg.Requests || rep.ElapsedNs <= 0 {
		t.Errorf("report %d requests, %d latencies, %d ns; want %d, %d, > 0", rep.Requests, len(rep.LatencyNs), rep.ElapsedNs, cfg.Requests, cfg.Requests)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() >= 2 {
		if rep.CPU < 0 || rep.ServerCPU < 0 || rep.CPU == rep.ServerCPU {
			t.Errorf("generator on cpu %d, server on cpu %d: want two different cores", rep.CPU, rep.ServerCPU)
		}
	}
}

// TestSelfEchoArgs: -self-echo round-trips and refuses an address or a
// core of the caller's choosing.
func TestSelfEchoArgs(t *testing.T) {
	want := Config{Conns: 64, Requests: 1000, Rate: 1e5, Size: 64, CPU: -1, Timeout: time.Second, SelfEcho: true}
	got, err := ParseArgs(Args(want), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got.Addr = want.Addr // a stand-in, replaced by the server's
	if got != want {
		t.Errorf("ParseArgs(Args(%+v)) = %+v", want, got)
	}
	for _, extra := range [][]string{{"-addr", "127.0.0.1:80"}, {"-cpu", "1"}, {"-server-burn", "-1us"}, {"-server-burn", "2ms"}} {
		if _, err := ParseArgs(append([]string{"-self-echo"}, extra...), &bytes.Buffer{}); err == nil {
			t.Errorf("-self-echo %v accepted", extra)
		}
	}
	want.ServerBurn = 7 * time.Microsecond
	if got, err := ParseArgs(Args(want), &bytes.Buffer{}); err != nil || got.ServerBurn != want.ServerBurn {
		t.Errorf("-server-burn round trip: %v, %v", got.ServerBurn, err)
	}
	if _, err := ParseArgs([]string{"-addr", "127.0.0.1:80", "-server-burn", "1us"}, &bytes.Buffer{}); err == nil {
		t.Error("-server-burn without -self-echo accepted")
	}
}

// runSelfEchoProcess runs Main -self-echo with cfg in a process of its own.
func runSelfEchoProcess(t *testing.T, cfg Config) Report {
	t.Helper()
	cmd := exec.Command(os.Args[0], Args(cfg)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadgen %v: %v: %s", Args(cfg), err, errs.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestBurningServerCostsWhatItBurns runs the trivial server slowed by
// 200 µs of CPU time per request. Its core's busy time per request (the
// cost the report's capacity estimate is made of) must hold at least the
// burn, whatever else runs on the core; and an offered rate of twice what
// the burn alone allows (1e9/200µs = 5000 req/s) must not be sustained: the
// server, not the generator, sets this knee.
func TestBurningServerCostsWhatItBurns(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 {
		t.Skip("fewer than two cores allowed: the server has no core of its own to measure")
	}
	const burn = 200 * time.Microsecond
	cfg := Config{Conns: 4, Requests: 300, Rate: 1000, Size: 64, CPU: -1, Timeout: 20 * time.Second, SelfEcho: true, ServerBurn: burn}
	rep := runSelfEchoProcess(t, cfg)
	if rep.ServerCostSource == "" || rep.ServerCostNs < float64(burn) {
		t.Errorf("at %v req/s: server cost %v ns per request (%s), want at least the burn, %v", cfg.Rate, rep.ServerCostNs, rep.ServerCostSource, burn)
	}
	cfg.Rate, cfg.Requests = 2*float64(time.Second/burn), 1000
	rep = runSelfEchoProcess(t, cfg)
	if achieved := float64(rep.Requests) / (float64(rep.ElapsedNs) / 1e9); achieved >= 0.95*cfg.Rate {
		t.Errorf("offered %v req/s to a server that burns %v per request, achieved %.0f: a server this slow cannot", cfg.Rate, burn, achieved)
	}
}
