package stackful

import (
	"testing"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// TestPrefetchedRecordLines: fiber.PrefetchRing fetches a record's lines
// 0, 1 and 3 (byte offsets 0, 64 and 192; records are 320 bytes, a size class
// whose objects start on a line). The fields a pick, a switch, a Yield and
// a resume read or write must sit there: a field moved to line 2 or
// 4 would miss at every switch once thousands of coroutines are
// queued, with no other sign.
func TestPrefetchedRecordLines(t *testing.T) {
	var c coroutine
	fields := []struct {
		name string
		off  uintptr
	}{
		{"fc", unsafe.Offsetof(c.fc)},
		{"stackLo", unsafe.Offsetof(c.stackLo)},
		{"stackSpan", unsafe.Offsetof(c.stackSpan)},
		{"state", unsafe.Offsetof(c.state)},
		{"killed", unsafe.Offsetof(c.killed)},
		{"cancelPending", unsafe.Offsetof(c.cancelPending)},
		{"unwinding", unsafe.Offsetof(c.unwinding)},
		{"waker.status", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.status)},
		{"waker.triggered", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.triggered)},
		{"waker.result", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.result)},
		{"waker.err", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.err)},
		{"handlers", unsafe.Offsetof(c.handlers)},
		{"ctx", unsafe.Offsetof(c.ctx)},
		{"priority", unsafe.Offsetof(c.priority)},
		{"waker.nsubs", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.nsubs)},
		{"waker.mode", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.mode)},
		{"waker.timeout", unsafe.Offsetof(c.waker) + unsafe.Offsetof(c.waker.timeout)},
	}
	for _, f := range fields {
		if line := f.off / 64; line > 1 {
			t.Errorf("coroutine.%s at byte %d is in line %d: PrefetchRing fetches lines 0 and 1", f.name, f.off, line)
		}
	}
	// The timer node is in line 3, which PrefetchRing's first stage also
	// fetches: a sleep's StartFresh reads it right after the wake.
	if lo, hi := unsafe.Offsetof(c.timer)/64, (unsafe.Offsetof(c.timer)+unsafe.Sizeof(c.timer)-1)/64; lo != 3 || hi != 3 {
		t.Errorf("coroutine.timer spans lines %d to %d: PrefetchRing fetches line 3 for it", lo, hi)
	}
	if unsafe.Sizeof(c)%64 != 0 {
		t.Errorf("coroutine record is %d bytes: not a whole number of lines, so records need not start on one", unsafe.Sizeof(c))
	}
}

// TestContextOnALine: an asm coroutine's fiber.Context starts on a cache
// line (its execution context sits at the top of its stack, a whole number
// of lines below the stack's page-aligned top, with the fiber first), so
// the part a switch reads is one line (fiber.TestContextHotLine), the one
// PrefetchRing fetches on amd64.
func TestContextOnALine(t *testing.T) {
	s, err := New(Options{Backend: Asm})
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	var addrs []uintptr
	if err := s.Run(func() {
		for i := 0; i < 3; i++ {
			Go(func() {
				addrs = append(addrs, uintptr(unsafe.Pointer(running.current.fc)))
				_ = Yield()
			})
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 3 {
		t.Fatalf("%d coroutines ran, want 3", len(addrs))
	}
	for _, a := range addrs {
		if a%64 != 0 {
			t.Errorf("a coroutine's fiber.Context at %#x is not on a cache line", a)
		}
	}
}

// TestPrefetchTopCoversAWait: a High coroutine woken while many are queued
// has its Context and the PrefetchTopLines lines below it prefetched when
// it is pushed at the queue's head (enqueue), before its saved SP is
// known. That covers its resume only if a coroutine waiting on an event
// from its body (the Priority scenario's high coroutine) has its saved SP
// within those lines: the chain from Switch up to the fiber's entry. A
// deeper chain (a bigger frame in Await, the entry or the switch) would
// leave the frames a resume returns through to miss one by one.
func TestPrefetchTopCoversAWait(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation makes the frames larger (18 lines); the prefetch is for the uninstrumented build")
	}
	s, err := New(Options{Backend: Asm})
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	var depth uintptr
	if err := s.Run(func() {
		ev := NewEvent()
		var high *coroutine
		GoWith("", High, func() {
			high = running.current
			_, _ = Await(ev)
		})
		_ = Yield() // high runs and waits
		depth = uintptr(unsafe.Pointer(high.fc)) - high.fc.StackTop()
		ev.Resolve(nil)
	}); err != nil {
		t.Fatal(err)
	}
	// The lines from the SP's up to the Context's must all be prefetched:
	// the SP's line is at most PrefetchTopLines below the Context's.
	if lines := (depth + 63) / 64; depth == 0 || lines > fiber.PrefetchTopLines {
		t.Errorf("a High coroutine waiting in Await from its body has its saved SP %d bytes (%d lines) below its Context; fiber.PrefetchTop fetches %d lines below it", depth, lines, fiber.PrefetchTopLines)
	} else {
		t.Logf("saved SP %d bytes below the Context (%d of %d lines)", depth, lines, fiber.PrefetchTopLines)
	}
}
