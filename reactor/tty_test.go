package reactor

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

func openPTY(t *testing.T, l *Loop) (*TTY, *os.File) {
	t.Helper()
	m, s, err := l.OpenPTY()
	if err != nil {
		t.Skip("no pseudo-terminals here: ", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// ttyRead reads from the TTY through a Poll until want bytes arrived.
func ttyRead(t *testing.T, l *Loop, m *TTY, want int) ([]byte, error) {
	t.Helper()
	var out []byte
	buf := make([]byte, 256)
	woke := false
	p := m.NewPoll(Readable, func() { woke = true })
	defer p.Close()
	for len(out) < want {
		n, err := m.TryRead(buf)
		out = append(out, buf[:n]...)
		switch err {
		case nil:
		case ErrWouldBlock:
			woke = false
			p.Start()
			tickUntil(t, l, func() bool { return woke })
		default:
			return out, err
		}
	}
	return out, nil
}

func TestTTYOnPseudoTerminal(t *testing.T) {
	l := newLoop(t, Options{})
	m, s := openPTY(t, l)
	// The slave side in raw mode: bytes pass unchanged, no echo.
	st, err := term.MakeRaw(int(s.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer term.Restore(int(s.Fd()), st)
	if _, err := s.Write([]byte("from slave")); err != nil {
		t.Fatal(err)
	}
	got, err := ttyRead(t, l, m, 10)
	if err != nil || string(got) != "from slave" {
		t.Fatalf("master read %q, %v", got, err)
	}
	if n, err := m.TryWrite([]byte("to slave")); err != nil || n != 8 {
		t.Fatalf("master write %d %v", n, err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "to slave" {
		t.Fatalf("slave read %q, %v", buf, err)
	}
	if err := m.SetSize(100, 40); err != nil {
		t.Fatal(err)
	}
	ws, err := unix.IoctlGetWinsize(int(s.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col != 100 || ws.Row != 40 {
		t.Fatalf("slave sees %+v, %v", ws, err)
	}
	if c, r, err := m.Size(); err != nil || c != 100 || r != 40 {
		t.Fatalf("Size %d×%d, %v", c, r, err)
	}
	// The TTY object on the slave side, with raw mode and restore.
	sfd, err := unix.Dup(int(s.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	stty, err := l.NewTTY(sfd)
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Restore(sfd, st); err != nil { // back to cooked for the check
		t.Fatal(err)
	}
	if err := stty.SetRaw(); err != nil {
		t.Fatal(err)
	}
	if tio, _ := unix.IoctlGetTermios(sfd, unix.TCGETS); tio.Lflag&unix.ECHO != 0 {
		t.Fatal("SetRaw left ECHO on")
	}
	if err := stty.Restore(); err != nil {
		t.Fatal(err)
	}
	if tio, _ := unix.IoctlGetTermios(sfd, unix.TCGETS); tio.Lflag&unix.ECHO == 0 {
		t.Fatal("Restore did not bring ECHO back")
	}
	stty.Close()
}

// TestTTYHangupCancelTimeout: a poll on the master is cancelled by Stop and
// left by a timeout; closing the slave side reads as EOF (not EIO).
func TestTTYHangupCancelTimeout(t *testing.T) {
	l := newLoop(t, Options{})
	m, s := openPTY(t, l)
	p := m.NewPoll(Readable, func() { t.Error("stopped poll fired") })
	p.Start()
	p.Stop()
	woke := false
	p2 := m.NewPoll(Readable, func() { woke = true })
	p2.Start()
	timer := l.NewTimer(func() { p2.Stop() })
	timer.Start(10 * time.Millisecond)
	tickUntil(t, l, func() bool { return !p2.Active() })
	if woke {
		t.Fatal("poll on a silent terminal fired")
	}
	s.Close()
	if _, err := ttyRead(t, l, m, 1); err != io.EOF {
		t.Fatalf("read after the slave closed: %v, want io.EOF", err)
	}
}

func TestTTYErrors(t *testing.T) {
	l := newLoop(t, Options{})
	r, w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd, _ := unix.Dup(r.Fd())
	defer unix.Close(fd)
	if _, err := l.NewTTY(fd); err == nil {
		t.Fatal("NewTTY on a pipe succeeded")
	}
	m, _ := openPTY(t, l)
	m.Close()
	if _, _, err := m.Size(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Size after Close: %v", err)
	}
}
