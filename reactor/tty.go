package reactor

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// TTY is the IO object on a terminal (libuv's uv_tty_t): an FD, polled and
// read and written with the Try* helpers like a pipe, plus the terminal's
// own controls (raw mode, window size). A terminal is pollable, so unlike a
// regular file it needs no thread.
//
// One difference from a pipe: reading the master side of a pseudo-terminal
// whose slave side is closed fails with EIO, not EOF; TryRead reports that
// as io.EOF, which is what it means.
type TTY struct {
	*FD
	saved *term.State // before SetRaw, restored by Restore
	pty   bool        // a pseudo-terminal master: EIO means hangup
}

// NewTTY registers a terminal fd (the TTY owns it, like NewFD). An fd that
// is not a terminal is refused with an error naming it.
func (l *Loop) NewTTY(fd int) (*TTY, error) {
	if !term.IsTerminal(fd) {
		return nil, fmt.Errorf("reactor: NewTTY(%d): not a terminal", fd)
	}
	f, err := l.NewFD(fd)
	if err != nil {
		return nil, err
	}
	return &TTY{FD: f}, nil
}

// OpenPTY opens a new pseudo-terminal pair (posix_openpt: /dev/ptmx, unlock,
// ptsname) and returns its master side as a registered TTY and the slave
// side as a blocking *os.File for a child or a test to use as its terminal.
func (l *Loop) OpenPTY() (master *TTY, slave *os.File, err error) {
	if l.closed {
		return nil, nil, ErrLoopClosed
	}
	l.stats.Syscalls += 3
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err}
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		unix.Close(m)
		return nil, nil, os.NewSyscallError("ioctl(TIOCSPTLCK)", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN) // ptsname
	if err != nil {
		unix.Close(m)
		return nil, nil, os.NewSyscallError("ioctl(TIOCGPTN)", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	s, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		unix.Close(m)
		return nil, nil, err
	}
	f, err := l.registerIO(m)
	if err != nil {
		unix.Close(m)
		s.Close()
		return nil, nil, err
	}
	return &TTY{FD: f, pty: true}, s, nil
}

// TryRead is FD.TryRead, with a pseudo-terminal master's EIO (slave closed)
// reported as io.EOF.
func (t *TTY) TryRead(p []byte) (int, error) {
	n, err := t.FD.TryRead(p)
	if t.pty && err != nil && isEIO(err) {
		return n, io.EOF
	}
	return n, err
}

func isEIO(err error) bool {
	se, ok := err.(*os.SyscallError)
	return ok && se.Err == unix.EIO
}

// SetRaw puts the terminal in raw mode (no echo, no line editing, no
// signals from keys), remembering the previous mode for Restore.
func (t *TTY) SetRaw() error {
	if t.closed {
		return t.err
	}
	st, err := term.MakeRaw(t.fd)
	if err != nil {
		return fmt.Errorf("reactor: TTY.SetRaw: %w", err)
	}
	if t.saved == nil {
		t.saved = st
	}
	return nil
}

// Restore returns the terminal to its mode before the first SetRaw.
func (t *TTY) Restore() error {
	if t.saved == nil || t.closed {
		return nil
	}
	err := term.Restore(t.fd, t.saved)
	t.saved = nil
	return err
}

// Size returns the window size in characters.
func (t *TTY) Size() (cols, rows int, err error) {
	if t.closed {
		return 0, 0, t.err
	}
	ws, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, os.NewSyscallError("ioctl(TIOCGWINSZ)", err)
	}
	return int(ws.Col), int(ws.Row), nil
}

// SetSize sets the window size (on a pseudo-terminal master: what the
// program on the slave side will see).
func (t *TTY) SetSize(cols, rows int) error {
	if t.closed {
		return t.err
	}
	ws := &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}
	if err := unix.IoctlSetWinsize(t.fd, unix.TIOCSWINSZ, ws); err != nil {
		return os.NewSyscallError("ioctl(TIOCSWINSZ)", err)
	}
	return nil
}
