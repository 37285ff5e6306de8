package reactor

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Process fires when a process exits. It watches a pidfd (pidfd_open,
// Linux 5.3+), which becomes readable at exit; no SIGCHLD handling is
// involved and the process need not be our child. The Process does not reap
// the child: os/exec's Wait (or os.Process.Wait) still works afterwards.
//
// Exit is a state, not an occurrence: once the process has exited, every
// Start fires (in the next Tick), like awaiting a completed future.
type Process struct {
	event
	pid    int
	pidfd  *FD
	exited bool
}

// pidfdOpen is a variable so that tests can simulate a kernel without it.
var pidfdOpen = unix.PidfdOpen

// NewProcess creates an idle exit event for pid. It returns an error
// wrapping ErrNotSupported when the kernel lacks pidfd_open.
func (l *Loop) NewProcess(pid int, cb func()) (*Process, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	if pid <= 0 {
		return nil, fmt.Errorf("reactor: NewProcess(%d): a process id must be positive", pid)
	}
	l.stats.Syscalls++
	pfd, err := pidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err == unix.EINVAL {
		// PIDFD_NONBLOCK arrived in 5.10; 5.3-5.9 accept flags 0 only. The
		// pidfd is never read, so blocking mode is harmless.
		l.stats.Syscalls++
		pfd, err = pidfdOpen(pid, 0)
	}
	switch err {
	case nil:
	case unix.ENOSYS:
		return nil, fmt.Errorf("reactor: process-exit events: %w: pidfd_open is missing (needs Linux 5.3 or later)", ErrNotSupported)
	case unix.ESRCH:
		return nil, fmt.Errorf("reactor: NewProcess(%d): no such process (already reaped?)", pid)
	default:
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	// pidfds are always close-on-exec.
	f, err := l.register(pfd, kindPidfd, unix.EPOLLIN)
	if err != nil {
		unix.Close(pfd)
		return nil, err
	}
	p := &Process{event: newEvent(l, cb, "Process"), pid: pid, pidfd: f}
	f.proc = p
	return p, nil
}

// Pid returns the watched process id.
func (p *Process) Pid() int { return p.pid }

// Exited reports whether the exit has been observed.
func (p *Process) Exited() bool { return p.exited }

// onExit records the exit. The pidfd stays readable (level-triggered
// registration reports it on every wait), so it is removed from epoll now.
func (p *Process) onExit() {
	if p.exited {
		return
	}
	p.exited = true
	l := p.loop
	l.stats.Syscalls++
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, p.pidfd.fd, nil)
	if p.state == stateActive {
		l.enqueue(p, &p.queued)
	}
}

// Start begins watching; fires in the next Tick if the process has exited.
func (p *Process) Start() {
	if p.activate("Process") && p.exited {
		p.loop.enqueue(p, &p.queued)
	}
}

// Stop stops watching.
func (p *Process) Stop() { p.deactivate() }

// Close releases the event and its pidfd.
func (p *Process) Close() {
	if p.state == stateClosed {
		return
	}
	p.release()
	p.pidfd.Close()
}

func (p *Process) fireQueued() {
	p.queued = false
	if p.state == stateActive && p.exited {
		p.fire()
	}
}
