package harness

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
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
		gomaxprocs[string(r)] = strconv.Itoa(r.GOMAXPROCS()) + poolExceptions(r, strconv.Itoa(1+scenarios.PoolThreads()))
		timerFloor[string(r)] = r.TimerFloor()
	}
	kv := [][2]string{
		{results.KeyGOOS, runtime.GOOS},
		{results.KeyGOARCH, runtime.GOARCH},
		{results.KeyCPU, cpuModel()},
		{results.KeyKernel, kernelRelease()},
		{results.KeyGoVersion, runtime.Version()},
		{results.KeyNumCPU, strconv.Itoa(runtime.NumCPU())},
		{results.KeyCommit, BuildCommit()},
		{results.KeyBuild, BuildConfig()},
		{results.KeyRunstamp, runstamp},
		{results.KeyVersion, Version},
		{results.KeyBenchtime, benchtime.String()},
		{results.KeyGCPolicy, gcPolicy},
		{results.KeyGOMAXPROCS, results.FormatPerRow(scenarios.RowNames(), gomaxprocs)},
		{results.KeyTimerFloor, results.FormatPerRow(scenarios.RowNames(), timerFloor)},
		{results.KeyRuntimeEnv, runtimeEnvValue()},
		{results.KeyGODEBUG, results.FormatPerRow(scenarios.RowNames(), godebugPerRow())},
		{results.KeyThreadPool, threadPoolConfig()},
		{results.KeyIOUring, ioUringConfig(probeIOUring())},
		{results.KeyCPUIdle, cpuIdleConfig("/")},
	}
	cfg := make([]benchfmt.Config, len(kv))
	for i, p := range kv {
		cfg[i] = benchfmt.Config{Key: p[0], Value: []byte(p[1]), File: true}
	}
	return cfg
}

// poolScenarios lists the registered scenarios that run their work on the
// runtime's thread pool (Scenario.UsesPool), in display order: the whole
// registry, not a run's selection, so the config lines that name them read
// the same in every run of one build.
func poolScenarios() []*scenarios.Scenario {
	var out []*scenarios.Scenario
	for _, s := range scenarios.All {
		if s.UsesPool {
			out = append(out, s)
		}
	}
	return out
}

// poolExceptions is what a per-row config value adds for row r's pool
// cells: " (offload,fileio: what)", or "" when r has none. The gomaxprocs
// and cpu-pin lines use it, so each row's value stays its one entry of the
// per-row line (results.FormatPerRow) while saying which cells differ.
func poolExceptions(r scenarios.Row, what string) string {
	var names []string
	for _, s := range poolScenarios() {
		if r.PoolCell(s) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ",") + ": " + what + ")"
}

// threadPoolConfig is the thread-pool config value: the pool size of the
// pool cells, why, and which cells those are.
func threadPoolConfig() string {
	var names, rows []string
	for _, s := range poolScenarios() {
		names = append(names, s.Name)
	}
	for _, r := range scenarios.Rows {
		for _, s := range poolScenarios() {
			if r.PoolCell(s) {
				rows = append(rows, string(r))
				break
			}
		}
	}
	if len(names) == 0 || len(rows) == 0 {
		return "no pool cells"
	}
	k, threads := scenarios.PoolThreads(), "threads"
	if k == 1 {
		threads = "thread"
	}
	return fmt.Sprintf("%d %s (allowed CPUs %d less 1, at least 1) for the cells of %s on %s, which run with gomaxprocs %d (the scheduler's P and one per pool thread; cpu-pin says where each ran); the other rows use no pool",
		k, threads, runtime.NumCPU(), strings.Join(names, ","), strings.Join(rows, ","), 1+k)
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

// BuildCommit returns the commit this binary was built from, from the
// build's VCS stamp (debug.ReadBuildInfo: vcs.revision, vcs.modified),
// marked "+dirty" when the checkout had changes, untracked files included
// (the go command's rule), so the figures belong to no commit. Not the
// working directory's repository: benchrun may run from anywhere. A build
// without a stamp says "unknown" and why.
func BuildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information in the binary)"
	}
	return buildCommit(bi.Settings)
}

func buildCommit(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "unknown (the binary has no VCS stamp: go run stamps none unless given -buildvcs=true; go build and go install in a git clone do, unless -buildvcs=false)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return rev
}

// BuildConfig describes how the binary was built, from its build info:
// the settings that change generated code (GOAMD64, GOEXPERIMENT, -race,
// CGO_ENABLED, -gcflags…), as "key=value" pairs.
func BuildConfig() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return buildConfig(bi.Settings)
}

// FuncAlignNote returns a one-line warning when the binary was built
// without -ldflags=-funcalign=64, and "" when it was. Without it the
// linker starts functions on its default boundary (32 bytes on amd64), so
// where a hot function starts within a 64-byte line follows the size of
// all code linked before it: an edit elsewhere moved the bare Switch of
// stackful-asm by 9-12 % and PingPong and Yield by 2-4 % with no change
// to their code. The switch entries carry PCALIGN $64 themselves
// (impl/stackful/fiber); the flag extends that to every function, so two
// builds' figures differ by their code, not by their layout. A warning, not
// a refusal: the figures are still real, only harder to compare across
// builds. README "Measurement: noise and pinning" says the same.
func FuncAlignNote() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return funcAlignNote(nil)
	}
	return funcAlignNote(bi.Settings)
}

func funcAlignNote(settings []debug.BuildSetting) string {
	for _, s := range settings {
		if s.Key == "-ldflags" && strings.Contains(s.Value, "-funcalign=64") {
			return ""
		}
	}
	return "this binary was built without -ldflags=-funcalign=64: functions start at the linker's default alignment, so figures of tight loops can move by up to ~10% between builds for reasons of layout alone; for figures to compare with other builds' (results/sample's among them), build with go build -ldflags=-funcalign=64 ./cmd/benchrun"
}

func buildConfig(settings []debug.BuildSetting) string {
	var parts []string
	for _, s := range settings {
		// vcs.* is the commit line; GOOS and GOARCH have lines of their
		// own; empty flags say nothing.
		switch {
		case strings.HasPrefix(s.Key, "vcs"), s.Value == "", s.Key == "GOOS", s.Key == "GOARCH", s.Key == "-compiler", s.Key == "-buildmode":
			continue
		}
		v := s.Value
		if strings.ContainsAny(v, " \t\"") {
			v = strconv.Quote(v)
		}
		parts = append(parts, s.Key+"="+v)
	}
	if len(parts) == 0 {
		return "default"
	}
	return strings.Join(parts, " ")
}

// cpuIdleConfig is the cpuidle config value, read below root ("/" but in
// tests): the idle driver and governor, cpu0's idle states, a guest's
// halt-poll window (the haltpoll driver's guest_halt_poll_ns: 0, every
// idle vCPU halts to the host at once) and the hypervisor flag of
// /proc/cpuinfo. What a file does not give reads "unknown", or is left
// out (the halt-poll window, on a machine without the haltpoll driver).
// The 2026-12-07 evening guest read "driver haltpoll, governor haltpoll,
// states POLL,haltpoll idle, guest_halt_poll_ns 0, hypervisor": there a
// bare thread's sleep and wake cost 30–46 µs of CPU.
func cpuIdleConfig(root string) string {
	read := func(path string) string {
		b, err := os.ReadFile(root + path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	or := func(v string) string {
		if v == "" {
			return "unknown"
		}
		return v
	}
	const sys = "sys/devices/system/cpu/"
	governor := read(sys + "cpuidle/current_governor")
	if governor == "" {
		governor = read(sys + "cpuidle/current_governor_ro")
	}
	var states []string
	for i := 0; ; i++ {
		name := read(fmt.Sprintf("%scpu0/cpuidle/state%d/name", sys, i))
		if name == "" {
			break
		}
		states = append(states, name)
	}
	out := fmt.Sprintf("driver %s, governor %s, states %s", or(read(sys+"cpuidle/current_driver")), or(governor), or(strings.Join(states, ",")))
	if poll := read("sys/module/haltpoll/parameters/guest_halt_poll_ns"); poll != "" {
		out += ", guest_halt_poll_ns " + poll
	}
	hyper := "no hypervisor flag"
	switch info := read("proc/cpuinfo"); {
	case info == "":
		hyper = "hypervisor unknown"
	case strings.Contains(" "+info+" ", " hypervisor "):
		hyper = "hypervisor"
	}
	return out + ", " + hyper
}
