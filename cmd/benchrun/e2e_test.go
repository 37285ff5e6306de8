package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/internal/results"
)

// mainEnv makes the test binary behave as benchrun itself, so the harness's
// children (re-executions of os.Executable) are real benchrun cells.
const mainEnv = "COROBENCH_BENCHRUN_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// A machine lock of this test process's own (inherited by the
	// benchrun processes it starts): `go test ./...` runs packages in
	// parallel, and the suite must not wait for a real run either.
	lock, err := os.CreateTemp("", "corobench-test-*.lock")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lock.Close()
	os.Setenv(harness.LockEnv, lock.Name())
	code := m.Run()
	os.Remove(lock.Name())
	os.Exit(code)
}

func benchrunCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

// TestRunEndToEnd runs benchrun as a process: it must print the results
// path on stdout (and nothing else), write a results file that reads back,
// and a report beside it.
func TestRunEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cmd := benchrunCommand("--scenario", "pingpong", "--impl", "stackless,goroutine-single", "--count", "2", "--benchtime", "1ms", "--adapt-budget", "0",
		"--out", filepath.Join(dir, "results"), "--reports", filepath.Join(dir, "reports"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("benchrun: %v\n%s", err, stderr.String())
	}
	path := strings.TrimSpace(string(out))
	if strings.Contains(path, "\n") || !strings.HasSuffix(path, ".txt") {
		t.Fatalf("stdout is not just the results path: %q", out)
	}
	f, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Results) != 4 {
		t.Errorf("%d results, want 4 (2 rows × 2 repetitions)", len(f.Results))
	}
	stamp := strings.TrimSuffix(filepath.Base(path), ".txt")
	if _, err := os.Stat(filepath.Join(dir, "reports", stamp, "index.html")); err != nil {
		t.Errorf("no report: %v\n%s", err, stderr.String())
	}
}

// TestInterruptKeepsCellsAndReport sends SIGINT (Ctrl-C) to a running
// benchrun after its first cell: the finished cells stay in the results
// file, the report is written, and the exit status is 130.
func TestInterruptKeepsCellsAndReport(t *testing.T) {
	dir := t.TempDir()
	cmd := benchrunCommand("--scenario", "pingpong", "--impl", "goroutine-single", "--count", "200", "--benchtime", "20ms",
		"--out", filepath.Join(dir, "results"), "--reports", filepath.Join(dir, "reports"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.HasPrefix(sc.Text(), "[2/") {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("benchrun did not stop after SIGINT; stderr so far:\n%s", strings.Join(log, "\n"))
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupt {
		t.Fatalf("exit %v, want status %d", err, exitInterrupt)
	}
	path := strings.TrimSpace(stdout.String())
	f, err := results.ReadFile(path)
	if err != nil {
		t.Fatalf("finished cells lost: %v", err)
	}
	if len(f.Results) < 2 || len(f.Results) >= 200 {
		t.Errorf("%d results kept, want the finished ones (at least 2, fewer than 200)", len(f.Results))
	}
	stamp := strings.TrimSuffix(filepath.Base(path), ".txt")
	if _, err := os.Stat(filepath.Join(dir, "reports", stamp, "index.html")); err != nil {
		t.Errorf("no report after Ctrl-C: %v", err)
	}
}

// TestProfileReexecutesForTheRowsGODEBUG: stackful-asm's cells run with
// GODEBUG=gcshrinkstackoff=1, which a process cannot set for itself once
// started; benchrun profile re-executes itself with it and profiles there.
func TestProfileReexecutesForTheRowsGODEBUG(t *testing.T) {
	cpu := filepath.Join(t.TempDir(), "cpu.pprof")
	cmd := benchrunCommand("profile", "-scenario", "switch", "-impl", "stackful-asm", "-benchtime", "20ms", "-o", cpu)
	cmd.Env = append(cmd.Env, "GODEBUG=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("benchrun profile: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(out), "GODEBUG=gcshrinkstackoff=1") || !strings.Contains(string(out), "ns/switch") {
		t.Errorf("output does not show the row's GODEBUG and figure:\n%s", out)
	}
	if st, err := os.Stat(cpu); err != nil || st.Size() == 0 {
		t.Errorf("profile %s: %v (missing or empty)", cpu, err)
	}
}
