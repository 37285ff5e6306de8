package reactor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWatchFileEvents(t *testing.T) {
	l := newLoop(t, Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fired := 0
	w, err := l.NewWatch(path, unix.IN_MODIFY, func() { fired++ })
	if err != nil {
		t.Fatal(err)
	}
	dw, err := l.NewWatch(dir, unix.IN_CREATE, func() { fired++ })
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	dw.Start()
	if l.Active() != 2 {
		t.Fatalf("Active %d", l.Active())
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	if evs := w.Events(); len(evs) == 0 || evs[0].Mask&unix.IN_MODIFY == 0 || evs[0].Name != "" {
		t.Fatalf("file watch events %+v", evs)
	}
	if dw.Active() != true {
		t.Fatal("directory watch fired on a modify it did not ask for")
	}
	// Events while idle are kept and fire at the next Start.
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 2 })
	if evs := dw.Events(); len(evs) != 1 || evs[0].Mask&unix.IN_CREATE == 0 || evs[0].Name != "new" {
		t.Fatalf("directory watch events %+v", evs)
	}
	if err := os.WriteFile(path, []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tick(t, l, true) // w is idle: collected, not fired
	}
	if fired != 2 {
		t.Fatalf("idle watch fired (%d)", fired)
	}
	w.Start()
	tick(t, l, true)
	if fired != 3 {
		t.Fatalf("Start with pending events: fired %d, want 3", fired)
	}
	// Cancellation: a stopped watch does not fire.
	w.Start()
	w.Stop()
	os.WriteFile(path, []byte("z"), 0o600)
	timer := l.NewTimer(func() {})
	timer.Start(20 * time.Millisecond)
	tickUntil(t, l, func() bool { return !timer.Active() })
	if fired != 3 {
		t.Fatalf("stopped watch fired (%d)", fired)
	}
	// Close releases the kernel watch; deleting the path then reports nothing.
	w.Close()
	dw.Close()
	if len(l.inotify.watches) != 0 || l.Stats().WatchEvents < 3 {
		t.Fatalf("after Close: %d wds registered, %d events read", len(l.inotify.watches), l.Stats().WatchEvents)
	}
}

// TestWatchTimeoutAndRemoval: a watch with nothing happening is left by a
// timeout (Stop), and deleting the watched file delivers IN_DELETE_SELF and
// IN_IGNORED, after which Close needs no inotify_rm_watch.
func TestWatchTimeoutAndRemoval(t *testing.T) {
	l := newLoop(t, Options{})
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, nil, 0o600)
	fired := 0
	w, err := l.NewWatch(path, unix.IN_DELETE_SELF, func() { fired++ })
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	timedOut := false
	timer := l.NewTimer(func() { timedOut = true; w.Stop() })
	timer.Start(10 * time.Millisecond)
	tickUntil(t, l, func() bool { return timedOut })
	if fired != 0 || l.Active() != 0 {
		t.Fatalf("fired %d active %d after the timeout", fired, l.Active())
	}
	w.Start()
	os.Remove(path)
	var masks uint32
	for !w.gone {
		want := fired + 1
		tickUntil(t, l, func() bool { return fired == want })
		for _, ev := range w.Events() {
			masks |= ev.Mask
		}
		if !w.gone {
			w.Start()
		}
	}
	if masks&unix.IN_DELETE_SELF == 0 {
		t.Fatalf("masks %#x, want IN_DELETE_SELF", masks)
	}
	w.Close()
}

func TestWatchErrors(t *testing.T) {
	l := newLoop(t, Options{})
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := l.NewWatch(missing, unix.IN_MODIFY, func() {})
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("NewWatch of a missing path: %v", err)
	}
	if _, err := l.NewWatch(t.TempDir(), 0, func() {}); err == nil {
		t.Fatal("NewWatch with an empty mask succeeded")
	}
}
