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
	"sync"
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

// Argv returns the path and argv that start the current binary (path is
// os.Args[0] or os.Executable()) as a child with argv: itself, or, where it
// cannot exec itself (ENOEXEC under qemu-user), the same emulator running
// it. For callers that start the child through another API than os/exec
// (a reactor's Spawn), so they cannot retry as CombinedOutput does.
func Argv(path string, argv []string) (string, []string) {
	emulator := needsEmulator()
	if emulator == "" {
		return path, argv
	}
	return emulator, append([]string{emulator, path}, argv[1:]...)
}

// needsEmulator is the emulator's path when the current binary cannot exec
// itself, else "". It tries once: a child that starts is killed at once
// (its arguments select no test, should it run).
var needsEmulator = sync.OnceValue(func() string {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	err := cmd.Start()
	if err == nil {
		cmd.Process.Kill()
		cmd.Wait()
		return ""
	}
	if !errors.Is(err, syscall.ENOEXEC) {
		return ""
	}
	path, lerr := exec.LookPath("qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[runtime.GOARCH])
	if lerr != nil {
		return ""
	}
	return path
})

func run(name string, args, env []string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
