package stackless

import (
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// TestTaskPrefetchSpan: prefetchTask's assembly bodies are unrolled for
// 416 bytes, the Coro's 224 and three lines of fields. A Coro that grows or
// shrinks changes taskPrefetchSpan, and this test says that the unrolled
// hints no longer match it.
func TestTaskPrefetchSpan(t *testing.T) {
	if taskPrefetchSpan != 416 {
		t.Fatalf("taskPrefetchSpan = %d (HeaderSize %d + 3 lines): prefetch_amd64.s and prefetch_arm64.s fetch 416 bytes; update their hints and this test", taskPrefetchSpan, HeaderSize)
	}
}

// TestPrefetchNeverFaults: the prefetch helpers take any address, the
// queue's head or a task's fields, and must never fault, even on memory
// that is not mapped: a load in their place would crash here.
func TestPrefetchNeverFaults(t *testing.T) {
	for _, addr := range []uintptr{0, 1, 4096 - 1, 1 << 47, ^uintptr(0) - 63} {
		prefetchTask(addr)
		prefetchTaskFields(addr)
	}
}

// queueLogger records its name each time it runs; it yields the first
// times turns, then finishes.
type queueLogger struct {
	Coro
	name  string
	turns int
	out   *[]string
}

func (t *queueLogger) Resume(c *Context) Step {
	*t.out = append(*t.out, t.name)
	if t.turns == 0 {
		return c.Done()
	}
	t.turns--
	return c.Yield()
}

// TestSleepWithQueuedTasks: a task that goes to sleep while others are
// queued (addTimer, which prefetches the queue's head) leaves
// the queue as it was: the queued tasks run next in FIFO order, and the
// sleeper wakes after them.
func TestSleepWithQueuedTasks(t *testing.T) {
	s := New()
	defer s.Close()
	// The reactor exists before the sleep, as for every sleep after a
	// scheduler's first: the sleep then goes straight to addTimer.
	if _, err := s.Loop(); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := s.Spawn(&sleeper{d: time.Millisecond, name: "sleeper", out: &out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := s.Spawn(&queueLogger{name: name, turns: 1, out: &out}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if want := "a b c a b c sleeper"; join(out) != want {
		t.Fatalf("run order %q, want %q", join(out), want)
	}
}

// TestCoroAroundTimerNode: the reactor prefetches [node-64, node+192)
// ahead of a timer's firing (reactor prefetchTimerNode), and coTimer.OnTimer
// and the resume after it read the Coro: every field of it must lie in that
// span around its waker's timer node, or the firing waits on a line nobody
// fetched.
func TestCoroAroundTimerNode(t *testing.T) {
	var co Coro
	node := unsafe.Offsetof(co.waker) + unsafe.Offsetof(co.waker.timer)
	lo, hi := int(node)-64, int(node)+192
	rt := reflect.TypeOf(co)
	for i := range rt.NumField() {
		f := rt.Field(i)
		if start, end := int(f.Offset), int(f.Offset+f.Type.Size()); start < lo || end > hi {
			t.Errorf("Coro.%s at bytes [%d, %d) is outside [%d, %d), the span the reactor prefetches around the timer node at %d", f.Name, start, end, lo, hi, node)
		}
	}
}
