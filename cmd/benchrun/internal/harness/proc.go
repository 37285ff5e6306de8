package harness

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// errAffinityAfterStart marks a startChild error that came after the child
// had started: the child runs and must be waited for.
var errAffinityAfterStart = errors.New("child started")

// Children must die with benchrun: a run killed from outside (a CI timeout,
// the OOM killer, kill -9) must not leave its running cell burning a core,
// or hanging forever. Each child is started with PR_SET_PDEATHSIG = SIGKILL,
// so the kernel kills it when its parent dies, however it dies.
//
// The kernel ties the death signal to the *thread* that forked the child,
// not to the process: if that thread exits, the child is killed although
// benchrun still runs. Go threads normally live as long as the process, but
// a goroutine that exits while locked to its thread takes the thread with
// it. So every child is forked from one goroutine locked to its thread for
// the life of the process (it never returns, so its thread never exits).
//
// Each child also leads a process group of its own, and a timeout or
// Ctrl-C kills the whole group: a grandchild (the echo scenario's load
// generator) dies with the cell even if it has no death signal of its own.
// A group of its own also keeps the terminal's Ctrl-C away from the child:
// benchrun alone decides to stop it.

var (
	spawnOnce sync.Once
	spawnReq  chan func()
)

// startChild starts cmd from the forking thread, dying with benchrun and
// killed as a group. With aff non-nil the child starts with that CPU
// affinity (pin.go): the forking thread takes it for the fork, which the
// child inherits, and takes back after on the fork. after nil leaves it at
// aff.
func startChild(cmd *exec.Cmd, aff, after *unix.CPUSet) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error {
		// The group's id is the child's pid (Setpgid with Pgid 0).
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	spawnOnce.Do(func() {
		spawnReq = make(chan func())
		go func() {
			runtime.LockOSThread()
			// Never unlocked and never returns: see above.
			for f := range spawnReq {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReq <- func() {
		if aff != nil {
			// SchedSetaffinity(0) is the calling thread: the locked one.
			if err := unix.SchedSetaffinity(0, aff); err != nil {
				done <- fmt.Errorf("setting the cell's CPU affinity: %w", err)
				return
			}
		}
		err := cmd.Start()
		if aff != nil && after != nil {
			if aerr := unix.SchedSetaffinity(0, after); aerr != nil && err == nil {
				// The child runs; the parent's placement is off. Not
				// a failure of the cell, but the run must say so.
				err = fmt.Errorf("%w: restoring the forking thread's CPU affinity: %w", errAffinityAfterStart, aerr)
			}
		}
		done <- err
	}
	return <-done
}
