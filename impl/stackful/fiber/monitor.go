package fiber

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"sync"
)

// monitorEnv marks the process MonitorCrashes starts: a copy of the same
// executable that only reads the crash output and explains it. Its value is
// the parent's StackSizeOption.
const monitorEnv = "CORO_FIBER_CRASH_MONITOR"

// ExplainedPrefix starts the line a crash monitor (MonitorCrashes) prints
// after a fatal error it recognises.
const ExplainedPrefix = "fiber: explanation of the fatal error above: "

var monitor struct {
	once sync.Once
	err  error
}

// MonitorCrashes makes the fatal errors that fiber misuse produces explain
// themselves in this process's own stderr, as ExplainCrash explains them for
// a harness that watches a child: a collection started by code on a fiber
// (runtime.GC, debug.FreeOSMemory: "fatal error: stack size not a power of
// 2" from runtime.shrinkstack), a fiber stack overflow (the same message
// from runtime.newstack, naming StackSizeOption), and the rest ExplainCrash
// knows.
//
// The runtime prints those messages on its system stack with no hook, and
// the process is gone right after, so the explanation has to come from
// another process: the first call (made after StackSizeOption is set: the
// monitor names the option as it reads then) starts a copy of this executable (with
// monitorEnv set; the copy's init of this package serves and exits before
// any main or test runs) and hands it the crash output with
// runtime/debug.SetCrashOutput. After a crash the monitor prints one line,
// ExplainedPrefix and the explanation, to the stderr both share; on a clean
// exit it prints nothing. Later calls return the first call's result. It
// replaces any crash output set before.
func MonitorCrashes() error {
	monitor.once.Do(func() { monitor.err = startMonitor() })
	return monitor.err
}

func startMonitor() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("fiber: crash monitor: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("fiber: crash monitor: %w", err)
	}
	cmd := exec.Command(exe)
	// The monitor names the stack-size option as this process does now
	// (its own init has not set it: package fiber's init serves first).
	cmd.Env = append(os.Environ(), monitorEnv+"="+StackSizeOption)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, os.Stderr, os.Stderr
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("fiber: crash monitor: starting %s: %w", exe, err)
	}
	// The monitor exits at EOF, when this process ends; nobody waits for it.
	go func() { _ = cmd.Wait() }()
	err = debug.SetCrashOutput(w, debug.CrashOptions{}) // it keeps its own dup of w
	w.Close()
	if err != nil {
		return fmt.Errorf("fiber: crash monitor: %w", err)
	}
	return nil
}

// serveMonitor is the monitor process's whole life.
func serveMonitor() {
	StackSizeOption = os.Getenv(monitorEnv)
	out, err := io.ReadAll(os.Stdin)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		os.Exit(1)
	}
	if exp := ExplainCrash(string(out)); exp != "" {
		fmt.Fprintln(os.Stderr, ExplainedPrefix+exp)
	}
	os.Exit(0)
}

func init() {
	if os.Getenv(monitorEnv) != "" {
		serveMonitor()
	}
}
