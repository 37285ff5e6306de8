package stackful

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// TestMain runs the tests with GODEBUG=gcshrinkstackoff=1, as the harness
// runs every stackful-asm cell (fiber.GODEBUGShrinkOff), re-executing the
// test binary with it if it is missing (GODEBUG is read only at start).
//
// Why: a collection between two runs can leave a stack-shrink request on the
// test goroutine (set when the collector scans it at an asynchronous safe
// point or in a system call). The GC fence stops further collections, but
// not that request: the runtime acts on it at the goroutine's next
// synchronous preemption, which can come while a fiber runs (a long OpSpin
// of the semantic suite is preempted by sysmon), and then tries to shrink the
// fiber's stack: "fatal error: stack size not a power of 2". Seen about once
// in a hundred runs of TestSemantics without the setting; with it the
// runtime never shrinks a stack.
func TestMain(m *testing.M) {
	if strings.Contains(os.Getenv("GODEBUG"), fiber.GODEBUGShrinkOff) {
		os.Exit(m.Run())
	}
	os.Exit(rerunWithShrinkOff())
}

// rerunWithShrinkOff runs this test binary again, with the same arguments
// and GODEBUG extended, streaming its output, and returns its exit code. A
// foreign-architecture binary under qemu-user without binfmt_misc cannot
// exec itself (ENOEXEC): then it runs under the same emulator.
func rerunWithShrinkOff() int {
	godebug := fiber.GODEBUGShrinkOff
	if old := os.Getenv("GODEBUG"); old != "" {
		godebug = old + "," + godebug
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "GODEBUG="+godebug)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		return cmd.Run()
	}
	err := run(os.Args[0], os.Args[1:]...)
	if errors.Is(err, syscall.ENOEXEC) {
		emulator := "qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[runtime.GOARCH]
		err = run(emulator, os.Args...)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stderr, "stackful tests: the re-run with GODEBUG=%s died: %v\n", godebug, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "stackful tests: cannot re-run the test binary with GODEBUG=%s: %v\n", godebug, err)
	return 1
}
