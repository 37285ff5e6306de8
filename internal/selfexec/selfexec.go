// Package selfexec re-runs the current test binary as a child process, for
// tests that must watch a process die (a fatal error from a fiber stack
// overflow, runtime.Goexit on a fiber, an exhausted vm.max_map_count).
//
// A foreign-architecture test binary run under qemu-user without binfmt_misc
// (how CI runs the arm64 tests) cannot exec itself: the kernel answers
// ENOEXEC. The child then runs under the same emulator, so the same test
// passes natively and emulated.
package selfexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// CombinedOutput runs os.Args[0] with args and the current environment plus
// env, and returns its combined stdout and stderr. err is the child's exit
// error (an *exec.ExitError for a child that died), or an error saying why it
// could not start.
func CombinedOutput(args []string, env ...string) (string, error) {
	out, err := run(os.Args[0], args, env)
	if !errors.Is(err, syscall.ENOEXEC) {
		return out, err
	}
	emulator := "qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[runtime.GOARCH]
	path, lerr := exec.LookPath(emulator)
	if lerr != nil {
		return "", fmt.Errorf("cannot start the child (%v), and %s is not installed to run it (apt-get install qemu-user)", err, emulator)
	}
	return run(path, append([]string{os.Args[0]}, args...), env)
}

func run(name string, args, env []string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
