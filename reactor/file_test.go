package reactor

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// fsDo starts one operation and ticks until it completed.
func fsDo(t *testing.T, l *Loop, r *FSReq, fired *int, start func() error) (int, error) {
	t.Helper()
	before := *fired
	if err := start(); err != nil {
		t.Fatal(err)
	}
	if !r.Active() {
		t.Fatal("FSReq not active after Start")
	}
	tickUntil(t, l, func() bool { return *fired == before+1 })
	return r.Result()
}

func TestFileIO(t *testing.T) {
	l := newLoop(t, Options{})
	fired := 0
	r := l.NewFSReq(func() { fired++ })
	path := filepath.Join(t.TempDir(), "f")
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartOpen(path, os.O_RDWR|os.O_CREATE, 0o600) }); err != nil {
		t.Fatal(err)
	}
	f := r.File()
	if f == nil || f.Name() != path {
		t.Fatalf("File() = %v", f)
	}
	data := []byte("hello, pool")
	if n, err := fsDo(t, l, r, &fired, func() error { return r.StartWrite(f, data) }); err != nil || n != len(data) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := fsDo(t, l, r, &fired, func() error { return r.StartPwrite(f, []byte("POOL"), 7) }); err != nil || n != 4 {
		t.Fatalf("pwrite: %d, %v", n, err)
	}
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartFsync(f) }); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := fsDo(t, l, r, &fired, func() error { return r.StartPread(f, buf, 0) })
	if err != nil || string(buf[:n]) != "hello, POOL" {
		t.Fatalf("pread: %q, %v", buf[:n], err)
	}
	// read at the file offset: the write moved it to the end, so EOF.
	if n, err := fsDo(t, l, r, &fired, func() error { return r.StartRead(f, buf) }); err != nil || n != 0 {
		t.Fatalf("read at end: %d, %v", n, err)
	}
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartFstat(f) }); err != nil || r.Stat().Size != int64(len(data)) {
		t.Fatalf("fstat: size %d, %v", r.Stat().Size, err)
	}
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartStat(path) }); err != nil || r.Stat().Mode&unix.S_IFMT != unix.S_IFREG {
		t.Fatalf("stat: %v", err)
	}
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartClose(f) }); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, []byte("hello, POOL")) {
		t.Fatalf("file holds %q", got)
	}
	if st := l.Stats(); st.WorkCompleted != uint64(fired) || st.WorkSubmitted != uint64(fired) {
		t.Fatalf("stats %+v, %d operations", st, fired)
	}
}

func TestFileErrors(t *testing.T) {
	l := newLoop(t, Options{})
	fired := 0
	r := l.NewFSReq(func() { fired++ })
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := fsDo(t, l, r, &fired, func() error { return r.StartOpen(missing, os.O_RDONLY, 0) })
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a missing file: %v", err)
	}
	if r.File() != nil {
		t.Fatal("File() after a failed open")
	}
	if _, err := fsDo(t, l, r, &fired, func() error { return r.StartStat(missing) }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of a missing file: %v", err)
	}
	bad := NewFile(-1, "nowhere")
	_, err = fsDo(t, l, r, &fired, func() error { return r.StartPread(bad, make([]byte, 1), 0) })
	if !errors.As(err, &pe) || pe.Op != "pread" || pe.Path != "nowhere" || !errors.Is(err, unix.EBADF) {
		t.Fatalf("pread on a bad fd: %v", err)
	}
}

// TestFileCancel: a queued operation stopped before a thread takes it never
// happens; a stopped open that did run does not leak its descriptor.
func TestFileCancel(t *testing.T) {
	l := newLoop(t, Options{PoolThreads: 1})
	release := make(chan struct{})
	fired := 0
	blockers(t, l, 1, release, &fired)
	path := filepath.Join(t.TempDir(), "created")
	r := l.NewFSReq(func() { t.Error("stopped FSReq fired") })
	if err := r.StartOpen(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	close(release)
	tickUntil(t, l, func() bool { return fired == 1 })
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cancelled open created the file: %v", err)
	}
	// Stop while running: the open happens, the fd is closed on discard.
	before := openFDs(t)
	if err := r.StartOpen(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		osYield()
	}
	r.Stop()
	tickUntil(t, l, func() bool { return !r.Busy() })
	if after := openFDs(t); after != before {
		t.Fatalf("open fds %d before, %d after a discarded open", before, after)
	}
	r.Close()
}

func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(es)
}
