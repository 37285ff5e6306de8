package reactor

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecOptions say how Spawn starts a child.
type ExecOptions struct {
	Dir string   // working directory; "" = ours
	Env []string // environment; nil = ours
	// Stdin, Stdout, Stderr: true gives the child a pipe whose other end is
	// a registered, non-blocking FD on the loop (Child.Stdin/Stdout/Stderr);
	// false gives it /dev/null.
	Stdin, Stdout, Stderr bool
	// Files, where non-nil, give the child that file as fd 0, 1 or 2
	// instead (e.g. the slave side of OpenPTY); the caller keeps its copy.
	// Setting one together with its pipe flag is an error.
	Files [3]*os.File
	// Setsid starts the child in a new session; with Setctty its fd 0
	// (a terminal) becomes its controlling terminal, as for a shell on a
	// pseudo-terminal.
	Setsid, Setctty bool
}

// Child is a process started by Spawn (libuv's uv_spawn): its pipes are
// ordinary FDs (TryRead/TryWrite plus a Poll, like any pipe) and its exit is
// a Process event (pidfd). Await output with Polls on Stdout/Stderr and the
// exit with Exit; then Wait collects the status without blocking. A timeout
// is a Timer or TimerNode whose firing calls Kill.
type Child struct {
	Stdin  *FD // write end of the child's stdin, nil unless asked for
	Stdout *FD // read end of the child's stdout
	Stderr *FD // read end of the child's stderr
	Exit   *Process
	proc   *os.Process
	state  *os.ProcessState
}

// Spawn starts path with argv (argv[0] included) and creates its exit event,
// idle, with onExit as callback. The fork/exec happens on the loop goroutine
// (as in libuv: vfork-style clone is short, and a failed exec is reported
// synchronously); an exec failure, such as a missing binary, is returned
// here as the *os.PathError from os.StartProcess.
func (l *Loop) Spawn(path string, argv []string, o ExecOptions, onExit func()) (*Child, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	c := &Child{}
	var files [3]*os.File
	var ours []*FD
	var given [3]bool // files[i] is the caller's (ExecOptions.Files): not ours to close
	fail := func(err error) (*Child, error) {
		for i, f := range files {
			if f != nil && !given[i] {
				f.Close()
			}
		}
		for _, f := range ours {
			f.Close()
		}
		return nil, err
	}
	// pipe returns the child's end as an *os.File (blocking, as a child
	// expects) and registers ours, non-blocking.
	pipe := func(childReads bool) (*os.File, *FD, error) {
		var p [2]int
		l.stats.Syscalls++
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return nil, nil, os.NewSyscallError("pipe2", err)
		}
		mine, theirs := p[0], p[1]
		if childReads {
			mine, theirs = p[1], p[0]
		}
		f, err := l.NewFD(mine)
		if err != nil {
			unix.Close(mine)
			unix.Close(theirs)
			return nil, nil, err
		}
		return os.NewFile(uintptr(theirs), "|"+path), f, nil
	}
	want := [3]bool{o.Stdin, o.Stdout, o.Stderr}
	dst := [3]**FD{&c.Stdin, &c.Stdout, &c.Stderr}
	for i := range want {
		if o.Files[i] != nil {
			if want[i] {
				return fail(fmt.Errorf("reactor: Spawn(%q): ExecOptions.Files[%d] and its pipe flag are both set; choose one", path, i))
			}
			files[i], given[i] = o.Files[i], true
			continue
		}
		if !want[i] {
			continue
		}
		cf, f, err := pipe(i == 0)
		if err != nil {
			return fail(err)
		}
		files[i], *dst[i] = cf, f
		ours = append(ours, f)
	}
	for i := range files {
		if files[i] == nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return fail(err)
			}
			files[i] = null
		}
	}
	attr := &os.ProcAttr{Dir: o.Dir, Env: o.Env, Files: files[:]}
	if o.Setsid || o.Setctty {
		attr.Sys = &syscall.SysProcAttr{Setsid: o.Setsid, Setctty: o.Setctty, Ctty: 0}
	}
	l.stats.Syscalls++ // clone+exec (Go's os.StartProcess; more than one syscall, counted as one)
	p, err := os.StartProcess(path, argv, attr)
	for i, f := range files {
		if f != nil && !given[i] {
			f.Close() // the child has its copy
		}
		files[i] = nil
	}
	if err != nil {
		return fail(err)
	}
	c.proc = p
	if c.Exit, err = l.NewProcess(p.Pid, onExit); err != nil {
		p.Kill()
		p.Wait()
		return fail(err)
	}
	return c, nil
}

// Pid returns the child's process id.
func (c *Child) Pid() int { return c.proc.Pid }

// Kill sends sig to the child (unix.SIGKILL for a timeout). After the exit
// has been collected by Wait it returns os.ErrProcessDone.
func (c *Child) Kill(sig unix.Signal) error { return c.proc.Signal(syscall.Signal(sig)) }

// Wait reaps the child and returns its status. It refuses to block the loop:
// before Exit has fired (Exit.Exited()) it returns an error instead.
func (c *Child) Wait() (*os.ProcessState, error) {
	if c.state != nil {
		return c.state, nil
	}
	if !c.Exit.Exited() {
		return nil, errors.New("reactor: Child.Wait before the exit event fired: it would block the loop")
	}
	st, err := c.proc.Wait()
	if err != nil {
		return nil, err
	}
	c.state = st
	return st, nil
}

// Close releases the exit event and the pipes. A child still running is
// killed and reaped (on the loop goroutine: SIGKILL makes that wait short),
// so no zombie is left behind.
func (c *Child) Close() {
	if c.state == nil {
		if !c.Exit.Exited() {
			c.proc.Kill()
		}
		if st, err := c.proc.Wait(); err == nil {
			c.state = st
		}
	}
	c.Exit.Close()
	for _, f := range []*FD{c.Stdin, c.Stdout, c.Stderr} {
		if f != nil {
			f.Close()
		}
	}
}
