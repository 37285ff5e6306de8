package microtask

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestRefcountAndCancel(t *testing.T) {
	var q Queue
	var log []string
	dtors := 0
	m := New(func() error { log = append(log, "m"); return nil }, func() { dtors++ })
	for range 2 {
		if err := Check(m); err != nil {
			t.Fatal(err)
		}
		q.Push(m)
	}
	c := New(func() error { log = append(log, "cancelled ran"); return nil }, func() { dtors++ })
	q.Push(c)
	c.Cancel()
	c.Release() // the creator's reference: the queued entry keeps it alive
	if dtors != 0 || m.Refs() != 3 || c.Refs() != 1 {
		t.Fatalf("before the batch: dtors %d, refs %d/%d, want 0, 3/1", dtors, m.Refs(), c.Refs())
	}
	var ran uint64
	if err := q.RunBatch(&ran); err != nil {
		t.Fatal(err)
	}
	if ran != 2 || !slices.Equal(log, []string{"m", "m"}) || dtors != 1 || m.Refs() != 1 || q.Len() != 0 {
		t.Fatalf("after the batch: ran %d, log %q, dtors %d, refs %d, len %d; want 2, [m m], 1, 1, 0", ran, log, dtors, m.Refs(), q.Len())
	}
	m.Release()
	if dtors != 2 {
		t.Fatalf("dtors %d after the last release, want 2", dtors)
	}
	if err := Check(m); !errors.Is(err, ErrReleased) {
		t.Fatalf("Check of a released microtask: %v, want ErrReleased", err)
	}
	if err := Check(&Microtask{refs: 1}); !errors.Is(err, ErrNoRun) {
		t.Fatalf("Check without a run function: %v, want ErrNoRun", err)
	}
	defer func() {
		if r := recover(); r == nil || m.Refs() != 0 {
			t.Fatalf("Release below zero: recovered %v, refs %d; want a panic, 0", r, m.Refs())
		}
	}()
	m.Release()
}

// TestErrorStopsBatch: the failing entry is released, the ones behind it stay
// queued in order, entries queued by the batch run in the same batch.
func TestErrorStopsBatch(t *testing.T) {
	var q Queue
	var log []string
	add := func(tag string, err error) *Microtask {
		m := New(func() error { log = append(log, tag); return err }, nil)
		q.Push(m)
		m.Release()
		return m
	}
	boom := errors.New("boom")
	add("a", nil)
	q.Push(New(func() error { log = append(log, "b"); add("queued by b", nil); return nil }, nil))
	f := add("fail", boom)
	add("c", nil)
	var ran uint64
	if err := q.RunBatch(&ran); err != boom {
		t.Fatalf("RunBatch = %v, want boom", err)
	}
	if f.Refs() != 0 || q.Len() != 2 {
		t.Fatalf("failed entry refs %d, queue len %d; want 0, 2", f.Refs(), q.Len())
	}
	if err := q.RunBatch(&ran); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "fail", "c", "queued by b"}
	if !slices.Equal(log, want) || ran != 5 {
		t.Fatalf("log %q ran %d, want %q 5", log, ran, want)
	}
}

func TestPanics(t *testing.T) {
	var q Queue
	m := New(func() error { panic("kaboom") }, nil)
	q.Push(m)
	after := New(func() error { return nil }, nil)
	q.Push(after)
	var ran uint64
	err := q.RunBatchRecover(&ran)
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("RunBatch(recover) = %v, want a *PanicError naming the value", err)
	}
	if m.Refs() != 1 || q.Len() != 1 {
		t.Fatalf("panicking entry refs %d (want 1: its entry released), queue len %d (want 1)", m.Refs(), q.Len())
	}
	// A panicking destructor (run by the entry's release) is reported too,
	// without a second release of that entry.
	q.Drop()
	d := New(func() error { return nil }, func() { panic("dtor") })
	q.Push(d)
	d.Release()
	if err := q.RunBatchRecover(&ran); !errors.As(err, &pe) || pe.Value != "dtor" || d.Refs() != 0 {
		t.Fatalf("RunBatch with a panicking destructor = %v, refs %d; want the dtor's *PanicError, 0", err, d.Refs())
	}
	// Without recoverPanics the panic propagates.
	q.Push(New(func() error { panic("out") }, nil))
	defer func() {
		if r := recover(); r != "out" {
			t.Fatalf("RunBatch(no recover): recovered %v, want the microtask's panic", r)
		}
	}()
	_ = q.RunBatch(&ran)
}
