package harness

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// Version is corobench's version, written to every results file.
const Version = "0.1.0"

// NewRunstamp returns a run's identifier: its UTC start time, which sorts,
// names the results file, and ends in a letter so benchfmt never reads its
// tail as a GOMAXPROCS suffix.
func NewRunstamp(t time.Time) string {
	return t.UTC().Format("20060102T150405Z")
}

// MachineConfig returns the run-wide config lines: what a reader needs to
// know about the machine and the code before trusting a figure.
func MachineConfig(runstamp string, benchtime time.Duration, gcOn bool) []benchfmt.Config {
	gcPolicy := driver.GCPolicy
	if gcOn {
		gcPolicy = driver.GCPolicyOn
	}
	gomaxprocs := map[string]string{}
	timerFloor := map[string]string{}
	for _, r := range scenarios.Rows {
		gomaxprocs[string(r)] = strconv.Itoa(r.GOMAXPROCS())
		timerFloor[string(r)] = r.TimerFloor()
	}
	kv := [][2]string{
		{results.KeyGOOS, runtime.GOOS},
		{results.KeyGOARCH, runtime.GOARCH},
		{results.KeyCPU, cpuModel()},
		{results.KeyKernel, kernelRelease()},
		{results.KeyGoVersion, runtime.Version()},
		{results.KeyNumCPU, strconv.Itoa(runtime.NumCPU())},
		{results.KeyCommit, gitCommit()},
		{results.KeyRunstamp, runstamp},
		{results.KeyVersion, Version},
		{results.KeyBenchtime, benchtime.String()},
		{results.KeyGCPolicy, gcPolicy},
		{results.KeyGOMAXPROCS, results.FormatPerRow(scenarios.RowNames(), gomaxprocs)},
		{results.KeyTimerFloor, results.FormatPerRow(scenarios.RowNames(), timerFloor)},
	}
	cfg := make([]benchfmt.Config, len(kv))
	for i, p := range kv {
		cfg[i] = benchfmt.Config{Key: p[0], Value: []byte(p[1]), File: true}
	}
	return cfg
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && (strings.TrimSpace(k) == "model name" || strings.TrimSpace(k) == "Model") {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// gitCommit returns the checkout's commit, marked "+dirty" when tracked
// files have uncommitted changes (the figures then belong to no commit).
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += "+dirty"
	}
	return commit
}
