package fiber

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/corobench/corobench/internal/selfexec"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackful/stackpool"
)

// testStackSize is the usable size of the stacks the tests map: 64 KiB minus
// a page, not a power of two.
const testStackSize = 64<<10 - 4096

// mapStack maps a stack for a test and unmaps it when the test ends.
func mapStack(tb testing.TB, size int) (lo, hi uintptr) {
	tb.Helper()
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatalf("mmap: %v", err)
	}
	tb.Cleanup(func() {
		if err := unix.Munmap(mem); err != nil {
			tb.Errorf("munmap: %v", err)
		}
	})
	lo = uintptr(unsafe.Pointer(&mem[0]))
	return lo, lo + uintptr(size)
}

// holdGC holds the collector off for the test and fails it if a collection
// ran anyway.
func holdGC(tb testing.TB) {
	tb.Helper()
	hold := HoldGC()
	tb.Cleanup(func() {
		if err := hold.Release(); err != nil {
			tb.Error(err)
		}
	})
}

func requireSupported(tb testing.TB) {
	tb.Helper()
	if err := Supported(); err != nil {
		tb.Fatalf("Supported() = %v", err)
	}
}

// newFiber maps a stack and initialises c to run entry on it.
func newFiber(tb testing.TB, c *Context, entry func() *Context) {
	tb.Helper()
	lo, hi := mapStack(tb, testStackSize)
	if err := c.Init(lo, hi, entry); err != nil {
		tb.Fatal(err)
	}
}

func TestSupported(t *testing.T) {
	if err := Supported(); err != nil {
		t.Fatalf("self-test failed: %v", err)
	}
	for _, w := range Warnings() {
		t.Logf("warning: %s", w)
	}
}

func TestRoundTrip(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	var got []int
	newFiber(t, &fib, func() *Context {
		for i := 0; i < 3; i++ {
			got = append(got, i)
			Switch(&fib, &root)
		}
		got = append(got, 100)
		return &root
	})
	for i := 0; i < 3; i++ {
		Switch(&root, &fib)
		if len(got) != i+1 || got[i] != i {
			t.Fatalf("after resume %d the fiber recorded %v", i, got)
		}
		if fib.Finished() || !fib.Resumable() {
			t.Fatalf("fiber state after resume %d: %v", i, fib.state)
		}
	}
	Switch(&root, &fib)
	if !fib.Finished() || got[len(got)-1] != 100 {
		t.Fatalf("fiber did not finish: state %v, recorded %v", fib.state, got)
	}
	if !root.Running() {
		t.Fatalf("root state %v, want running", root.state)
	}
}

// TestStackFieldsInsideFiber checks that inside a fiber the goroutine's stack
// fields describe the fiber stack, and that they are restored on the root.
func TestStackFieldsInsideFiber(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	lo, hi := mapStack(t, testStackSize)
	var inLo, inHi, inGuard, local uintptr
	if err := fib.Init(lo, hi, func() *Context {
		var x int
		g := getg()
		inLo, inHi, inGuard = gField(g, offStackLo), gField(g, offStackHi), gField(g, offStackguard0)
		local = uintptr(unsafe.Pointer(&x))
		return &root
	}); err != nil {
		t.Fatal(err)
	}
	g := getg()
	beforeLo, beforeHi := gField(g, offStackLo), gField(g, offStackHi)
	Switch(&root, &fib)
	if inLo != lo || inHi != hi || !(lo <= local && local < hi) {
		t.Errorf("inside the fiber g.stack = [%#x, %#x), local at %#x; want [%#x, %#x) containing it", inLo, inHi, local, lo, hi)
	}
	if inGuard != lo+stackGuard && inGuard < stackguardMarkerMin {
		t.Errorf("inside the fiber stackguard0 = %#x, want %#x", inGuard, lo+stackGuard)
	}
	if l, h := gField(g, offStackLo), gField(g, offStackHi); l != beforeLo || h != beforeHi {
		t.Errorf("root g.stack = [%#x, %#x) after the fiber finished, want [%#x, %#x)", l, h, beforeLo, beforeHi)
	}
	if rl, rh := root.Bounds(); rl != beforeLo || rh != beforeHi {
		t.Errorf("root Context bounds [%#x, %#x), want [%#x, %#x)", rl, rh, beforeLo, beforeHi)
	}
}

// TestManyFibers runs fibers round-robin through the root, then lets each one
// switch directly to the next (no root in between), checking that every
// fiber keeps its own locals.
func TestManyFibers(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	const n, rounds = 200, 5
	var root Context
	fibers := make([]Context, n)
	counts := make([]int, n)
	for i := range fibers {
		i := i
		newFiber(t, &fibers[i], func() *Context {
			mine := i * 1000 // a local that must survive every switch
			for r := 0; r < rounds; r++ {
				counts[i]++
				Switch(&fibers[i], &root)
				if mine != i*1000 {
					panic(fmt.Sprintf("fiber %d: local changed to %d", i, mine))
				}
			}
			// Final phase: hand control straight to the next fiber.
			if i+1 < n {
				return &fibers[i+1]
			}
			return &root
		})
	}
	for r := 0; r < rounds; r++ {
		for i := range fibers {
			Switch(&root, &fibers[i])
		}
	}
	// Every fiber is suspended at its last Switch; resuming the first one
	// runs the whole chain of direct fiber-to-fiber handoffs and returns
	// here only from the last.
	for i := range fibers {
		if counts[i] != rounds {
			t.Fatalf("fiber %d ran %d rounds, want %d", i, counts[i], rounds)
		}
	}
	// Each fiber still needs one resume to leave its loop; resume all but
	// let each finish into the next.
	Switch(&root, &fibers[0])
	for i := range fibers {
		if !fibers[i].Finished() {
			// Fibers after 0 were suspended in the loop; the chain resumed
			// them in order as each predecessor finished.
			t.Fatalf("fiber %d not finished: %v", i, fibers[i].state)
		}
	}
}

// TestDefersInterleaved switches between fibers while each has pending defer
// records (defers in a loop are not open-coded, so they live in g._defer).
// Without swapping g._defer, one fiber's return would run another's defers.
func TestDefersInterleaved(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, a, b Context
	var log []string
	body := func(name string, self *Context) func() *Context {
		return func() *Context {
			func() {
				for i := 0; i < 2; i++ {
					defer func() { log = append(log, fmt.Sprintf("%s-defer%d", name, i)) }()
				}
				log = append(log, name+"-suspend")
				Switch(self, &root)
				log = append(log, name+"-resumed")
			}()
			log = append(log, name+"-return")
			return &root
		}
	}
	newFiber(t, &a, body("a", &a))
	newFiber(t, &b, body("b", &b))
	Switch(&root, &a)
	Switch(&root, &b)
	Switch(&root, &a)
	Switch(&root, &b)
	want := "a-suspend b-suspend a-resumed a-defer1 a-defer0 a-return b-resumed b-defer1 b-defer0 b-return"
	if got := strings.Join(log, " "); got != want {
		t.Fatalf("order of events:\n got %s\nwant %s", got, want)
	}
}

// TestPanicsInterleaved panics in fiber A, switches to fiber B from A's
// deferred call (A's panic in flight), panics and recovers in B, switches
// back, and recovers A's panic in A. Each recover must see its own value.
func TestPanicsInterleaved(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, a, b Context
	var gotA, gotB any
	newFiber(t, &a, func() *Context {
		func() {
			defer func() { gotA = recover() }()
			defer func() { Switch(&a, &b) }() // runs while "panic A" unwinds
			panic("panic A")
		}()
		return &root
	})
	newFiber(t, &b, func() *Context {
		func() {
			defer func() { gotB = recover() }()
			panic("panic B")
		}()
		return &a
	})
	Switch(&root, &a)
	if gotA != "panic A" || gotB != "panic B" {
		t.Fatalf("recovered A=%v B=%v, want panic A / panic B", gotA, gotB)
	}
	if !a.Finished() || !b.Finished() {
		t.Fatalf("states a=%v b=%v, want both finished", a.state, b.state)
	}
	// The root's defer/panic chain must be intact: a recover here sees a
	// panic raised here.
	func() {
		defer func() {
			if r := recover(); r != "root" {
				t.Errorf("root recovered %v, want root", r)
			}
		}()
		panic("root")
	}()
}

func TestReinitFinished(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	lo, hi := mapStack(t, testStackSize)
	for i := 0; i < 3; i++ {
		ran := false
		if err := fib.Init(lo, hi, func() *Context { ran = true; return &root }); err != nil {
			t.Fatal(err)
		}
		Switch(&root, &fib)
		if !ran || !fib.Finished() {
			t.Fatalf("run %d: ran=%v state=%v", i, ran, fib.state)
		}
	}
}

// TestRestartFinished: Restart runs a finished context again on the stack
// its Init gave it, with a traceback-clean start (panics and defers work
// in the restarted fiber), as often as wanted; its bounds are Init's.
func TestRestartFinished(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	lo, hi := mapStack(t, testStackSize)
	ran := 0
	recovered := 0
	entry := func() (next *Context) {
		defer func() {
			if recover() != nil {
				recovered++
				next = &root
			}
		}()
		ran++
		panic("in a restarted fiber")
	}
	if err := fib.Init(lo, hi, entry); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		Switch(&root, &fib)
		if ran != i || recovered != i || !fib.Finished() {
			t.Fatalf("run %d: ran %d, recovered %d, state %v", i, ran, recovered, fib.state)
		}
		if l, h := fib.Bounds(); l != lo || h != hi {
			t.Fatalf("run %d: bounds [%#x, %#x), want Init's [%#x, %#x)", i, l, h, lo, hi)
		}
		if err := fib.Restart(entry); err != nil {
			t.Fatal(err)
		}
		if fib.state != stateFresh || fib.pc != startPC || fib.sp != hi-topReserve {
			t.Fatalf("run %d: after Restart state %v pc %#x sp %#x", i, fib.state, fib.pc, fib.sp)
		}
	}
}

// TestRestartMisuse: Restart refuses every context that is not finished
// (its fiber would be lost) and a nil entry, and changes nothing then.
func TestRestartMisuse(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, empty, fresh, busy Context
	entry := func() *Context { return &root }
	if err := empty.Restart(entry); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Restart on an empty context: %v, want an error naming its state", err)
	}
	newFiber(t, &fresh, entry)
	if err := fresh.Restart(entry); err == nil || !strings.Contains(err.Error(), "fresh") {
		t.Errorf("Restart on a fresh context: %v, want an error naming its state", err)
	}
	newFiber(t, &busy, func() *Context {
		if err := busy.Restart(entry); err == nil || !strings.Contains(err.Error(), "running") {
			t.Errorf("Restart on the running context: %v, want an error naming its state", err)
		}
		Switch(&busy, &root)
		return &root
	})
	Switch(&root, &busy)
	if err := busy.Restart(entry); err == nil || !strings.Contains(err.Error(), "suspended") {
		t.Errorf("Restart on a suspended context: %v, want an error naming its state", err)
	}
	Switch(&root, &busy)
	if err := busy.Restart(nil); err == nil || !strings.Contains(err.Error(), "nil entry") {
		t.Errorf("Restart with a nil entry: %v, want an error naming it", err)
	}
	if !busy.Finished() {
		t.Errorf("a refused Restart changed the context: state %v", busy.state)
	}
}

func TestInitErrors(t *testing.T) {
	requireSupported(t)
	lo, hi := mapStack(t, 64<<10)
	entry := func() *Context { return nil }
	var c Context
	cases := []struct {
		name   string
		lo, hi uintptr
		entry  func() *Context
		want   string
	}{
		{"power of two", lo, hi, entry, "power of two"},
		{"too small", lo, lo + 1024, entry, "smaller than MinStackSize"},
		{"misaligned", lo + 8, hi - 4096, entry, "16-byte aligned"},
		{"inverted", hi, lo, entry, "empty or inverted"},
		{"nil entry", lo, hi - 4096, nil, "nil entry"},
	}
	for _, tc := range cases {
		err := c.Init(tc.lo, tc.hi, tc.entry)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Init error %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

// TestSwitchEntryAlignment checks the code-alignment rule of
// switch_$GOARCH.s: Switch and switchContext start on a 64-byte line, so
// the bare switch's cost does not depend on the size of the code the linker
// places before them. It fails if a PCALIGN is dropped or moved off the
// top of either function, or if the toolchain stops turning it into
// function alignment.
func TestSwitchEntryAlignment(t *testing.T) {
	requireSupported(t)
	sw, sc := switchEntries()
	if sw == 0 || sc == 0 {
		t.Fatalf("switchEntries() = %#x, %#x; want two code addresses", sw, sc)
	}
	for _, f := range []struct {
		name string
		pc   uintptr
	}{{"Switch", sw}, {"switchContext", sc}} {
		if f.pc%switchEntryAlign != 0 {
			t.Errorf("%s starts at %#x, %d bytes past a %d-byte boundary; switch_%s.s must begin it with PCALIGN $%d",
				f.name, f.pc, f.pc%switchEntryAlign, switchEntryAlign, runtime.GOARCH, switchEntryAlign)
		}
	}
}

func TestSwitchMisuse(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib, never Context
	newFiber(t, &fib, func() *Context { return &root })
	Switch(&root, &fib) // fib finishes
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, want) {
				t.Errorf("%s: panic %v, want it to mention %q", name, r, want)
			}
		}()
		f()
	}
	mustPanic("finished", "finished", func() { Switch(&root, &fib) })
	mustPanic("empty", "empty", func() { Switch(&root, &never) })
	mustPanic("self", "itself", func() { Switch(&root, &root) })
	mustPanic("not running", "from must be the running", func() { Switch(&fib, &root) })
	var busy Context
	newFiber(t, &busy, func() *Context { Switch(&busy, &root); return &root })
	Switch(&root, &busy)
	if err := busy.Init(1<<20, 1<<20+testStackSize, func() *Context { return nil }); err == nil || !strings.Contains(err.Error(), "suspended") {
		t.Errorf("Init on a suspended context: %v, want an error naming its state", err)
	}
	Switch(&root, &busy)
}

// TestRecursionWithinStack runs recursion that fits the fiber stack, to show
// that ordinary deep-ish calls work (the stack never needs to grow).
func TestRecursionWithinStack(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	var sum int
	newFiber(t, &fib, func() *Context { sum = recurse(200); return &root })
	Switch(&root, &fib)
	if sum != 200*201/2 {
		t.Fatalf("recurse(200) = %d", sum)
	}
}

//go:noinline
func recurse(n int) int {
	var pad [16]uintptr // 128 bytes of frame, so depth costs stack
	pad[n%16] = uintptr(n)
	if n == 0 {
		return int(pad[0])
	}
	return int(pad[n%16]) + recurse(n-1)
}

func TestFenceRestoresSettings(t *testing.T) {
	prev := debug.SetGCPercent(77)
	defer debug.SetGCPercent(prev)
	h1 := HoldGC()
	h2 := HoldGC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC while held = %d, want -1 (off)", p)
	}
	if err := h1.Release(); err != nil {
		t.Fatal(err)
	}
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC after the first of two releases = %d, want still -1", p)
	}
	if err := h2.Release(); err != nil {
		t.Fatal(err)
	}
	if p := debug.SetGCPercent(77); p != 77 {
		t.Errorf("GOGC after the last release = %d, want 77 restored", p)
	}
	if err := h2.Release(); err == nil {
		t.Error("second Release of one hold: no error")
	}
}

// TestFenceDetectsGC forces a collection while holding (no fiber exists, so
// this is safe here) and checks the error.
func TestFenceDetectsGC(t *testing.T) {
	h := HoldGC()
	runtime.GC()
	err := h.Release()
	var gcErr *GCDuringFibersError
	if !errors.As(err, &gcErr) || gcErr.Cycles < 1 || !strings.Contains(err.Error(), "cannot be trusted") {
		t.Fatalf("Release after runtime.GC: %v, want a GCDuringFibersError", err)
	}
}

func TestExplainCrash(t *testing.T) {
	if got := ExplainCrash("panic: ordinary\n\ngoroutine 1 [running]:\nmain.main()\n"); got != "" {
		t.Errorf("ordinary panic explained as %q", got)
	}
	overflow := "fatal error: stack size not a power of 2\n\nruntime stack:\nruntime.throw(...)\nruntime.newstack()\n...\ngoroutine 1 gp=0x1 m=0 mp=0x2 [copystack]:\n" + fiberMainName + "(0x1)\n" + fiberStartName + "()\n"
	if got := ExplainCrash(overflow); !strings.Contains(got, StackSizeOption) {
		t.Errorf("overflow explanation %q does not name %q", got, StackSizeOption)
	}
	if got := ExplainCrash(GoexitMessage + " (t.FailNow ...)"); !strings.Contains(got, "Goexit") {
		t.Errorf("Goexit explanation %q", got)
	}
}

// BenchmarkSwitch measures one ONE-WAY switch (Switch from one context to
// another); each iteration is half of a root→fiber→root round trip, so the
// reported ns/op is per switch and a round trip costs twice that.
func BenchmarkSwitch(b *testing.B) {
	requireSupported(b)
	holdGC(b)
	var root, fib Context
	n := 0
	newFiber(b, &fib, func() *Context {
		for {
			n++
			Switch(&fib, &root)
		}
	})
	b.ResetTimer()
	for i := 0; i < b.N; i += 2 {
		Switch(&root, &fib)
	}
	b.StopTimer()
	if n != (b.N+1)/2 {
		b.Fatalf("fiber ran %d times, want %d", n, (b.N+1)/2)
	}
	// The fiber stays suspended in its loop; its stack is unmapped by the
	// cleanup, which is fine because it is never resumed.
}

// childEnv is the environment variable that selects a child-process scenario.
const childEnv = "FIBER_TEST_CHILD"

// TestChild is the body of the child processes started by runChild; it does
// nothing in a normal run.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as a child process of the crash tests")
	}
	requireSupported(t)
	var root, fib Context
	lo, hi := mapStack(t, testStackSize)
	hold := HoldGC()
	var entry func() *Context
	switch mode {
	case "overflow":
		entry = func() *Context { recurse(1 << 20); return &root }
	case "goexit":
		entry = func() *Context { runtime.Goexit(); return &root }
	case "failnow":
		entry = func() *Context { t.FailNow(); return &root }
	case "panic":
		entry = func() *Context { panic("boom in a fiber") }
	case "gc-in-fiber":
		// A collection while a fiber runs: the root stack is not scanned.
		// The child exits right after, so nothing freed is used.
		entry = func() *Context { runtime.GC(); return &root }
	case "gc-while-suspended":
		entry = func() *Context { Switch(&fib, &root); return &root }
	case "shrink-request":
		// The state a collection before the fence can leave behind: a
		// pending shrink request on the goroutine. Then force a synchronous
		// preemption on the fiber, where newstack acts on such a request.
		*(*bool)(unsafe.Add(getg(), offPreemptShrink)) = true
		entry = func() *Context {
			*(*uintptr)(unsafe.Add(getg(), offStackguard0)) = stackPreemptMarker
			recurse(1) // its prologue sees the marker: morestack, newstack, preempt
			return &root
		}
	default:
		t.Fatalf("unknown child mode %q", mode)
	}
	if err := fib.Init(lo, hi, entry); err != nil {
		t.Fatal(err)
	}
	Switch(&root, &fib)
	if mode == "gc-while-suspended" {
		runtime.GC() // on the root, with a fiber suspended
		Switch(&root, &fib)
	}
	err := hold.Release()
	fmt.Fprintf(os.Stderr, "child result: %v\n", err)
	os.Exit(3)
}

// runChild re-executes the test binary to run TestChild in mode, with extra
// environment, and returns its combined output and exit error.
func runChild(t *testing.T, mode string, env ...string) (string, error) {
	t.Helper()
	requireSupported(t)
	return selfexec.CombinedOutput([]string{"-test.run=^TestChild$", "-test.v"}, append([]string{childEnv + "=" + mode}, env...)...)
}

// stackPreemptMarker is the runtime's stackPreempt (-1314 as a uintptr): a
// stackguard0 value that sends the next prologue to newstack as a
// preemption request.
const stackPreemptMarker = ^uintptr(1314 - 1)

// TestChildShrinkRequest: a stack-shrink request pending on the goroutine
// when a fiber starts (left by a collection before the GC fence) must not
// make the runtime shrink the fiber's stack at the fiber's next synchronous
// preemption. Without Switch clearing g.preemptShrink this child dies with
// "fatal error: stack size not a power of 2"; it runs without
// GODEBUG=gcshrinkstackoff=1, which would hide the request.
func TestChildShrinkRequest(t *testing.T) {
	out, err := runChild(t, "shrink-request", "GODEBUG=gcshrinkstackoff=0")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(out, "child result: <nil>") {
		t.Fatalf("child with a pending shrink request: %v; output:\n%s", err, tail(out))
	}
}

func TestChildOverflow(t *testing.T) {
	out, err := runChild(t, "overflow")
	if err == nil || !strings.Contains(out, "fatal error: stack size not a power of 2") {
		t.Fatalf("overflow child: err=%v, want fatal error: stack size not a power of 2; output:\n%s", err, tail(out))
	}
	if exp := ExplainCrash(out); !strings.Contains(exp, StackSizeOption) || !strings.Contains(exp, "overflowed") {
		t.Fatalf("ExplainCrash does not explain the real overflow output as an overflow naming the stack-size option: %q\noutput:\n%s", exp, tail(out))
	}
	// Without a traceback the message alone still leads to the option.
	out, err = runChild(t, "overflow", "GOTRACEBACK=none")
	if exp := ExplainCrash(out); err == nil || !strings.Contains(exp, StackSizeOption) {
		t.Fatalf("overflow with GOTRACEBACK=none: err=%v, explanation %q; output:\n%s", err, exp, tail(out))
	}
}

func TestChildGoexit(t *testing.T) {
	for _, mode := range []string{"goexit", "failnow"} {
		out, err := runChild(t, mode)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, GoexitMessage) {
			t.Errorf("%s child: err=%v, want exit 2 with %q; output:\n%s", mode, err, GoexitMessage, tail(out))
		}
		if exp := ExplainCrash(out); !strings.Contains(exp, "Goexit") {
			t.Errorf("%s: ExplainCrash = %q", mode, exp)
		}
	}
}

// TestChildPanic checks that a panic escaping a fiber crashes with the panic
// value and a traceback through the trampoline. The panic's unwind walks to
// the top of the fiber stack with a checked unwinder, so a wrong g.stktopsp
// would show as "traceback did not unwind completely" instead.
func TestChildPanic(t *testing.T) {
	out, err := runChild(t, "panic")
	if err == nil || !strings.Contains(out, "panic: boom in a fiber") || !strings.Contains(out, "fiber.fiberStart") {
		t.Fatalf("panic child: err=%v, want the panic and a traceback down to fiberStart; output:\n%s", err, tail(out))
	}
	if strings.Contains(out, "did not unwind") {
		t.Fatalf("unwinder did not end at stktopsp:\n%s", tail(out))
	}
}

// TestChildGCInFiber forces a collection while a fiber runs. The collector
// scans the fiber stack with a checked unwinder (so stktopsp must be right);
// with gcshrinkstackoff it does not try to shrink it, and the fence reports
// the cycle. Without it, the shrink attempt is a clean fatal error.
func TestChildGCInFiber(t *testing.T) {
	out, err := runChild(t, "gc-in-fiber", "GODEBUG="+GODEBUGShrinkOff)
	if !strings.Contains(out, "child result: fiber: ") || !strings.Contains(out, "cycle(s) ran while fibers existed") {
		t.Fatalf("gc-in-fiber child: err=%v, want the fence's GC error; output:\n%s", err, tail(out))
	}
	if strings.Contains(out, "did not unwind") || strings.Contains(out, "fatal error") {
		t.Fatalf("GC scan of a fiber stack failed:\n%s", tail(out))
	}
	out, err = runChild(t, "gc-in-fiber", "GODEBUG=gcshrinkstackoff=0")
	if err == nil || !strings.Contains(out, "fatal error: stack size not a power of 2") {
		t.Fatalf("gc-in-fiber child without gcshrinkstackoff: err=%v, want the clean shrink fatal; output:\n%s", err, tail(out))
	}
	if exp := ExplainCrash(out); !strings.Contains(exp, "shrink") || !strings.Contains(exp, GODEBUGShrinkOff) {
		t.Errorf("ExplainCrash = %q for the GC shrink crash, want it to name the shrink and %s:\n%s", exp, GODEBUGShrinkOff, tail(out))
	}
}

func TestChildGCWhileSuspended(t *testing.T) {
	out, err := runChild(t, "gc-while-suspended")
	if !strings.Contains(out, "child result: fiber: ") || !strings.Contains(out, "cycle(s) ran while fibers existed") {
		t.Fatalf("gc-while-suspended child: err=%v, want the fence's GC error; output:\n%s", err, tail(out))
	}
}

// tail returns the last lines of a child's output for failure messages.
func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 40 {
		lines = append([]string{"..."}, lines[len(lines)-40:]...)
	}
	return strings.Join(lines, "\n")
}

// stackPreempt is the runtime's preemption request marker for stackguard0
// (runtime/stack.go: uintptrMask & -1314).
const stackPreempt = ^uintptr(1314 - 1)

// TestPreemptMarkerKept stores the runtime's preemption marker in
// g.stackguard0, exactly as the runtime's preemptone does, right before a
// switch, in both directions. The side that resumes reads the guard right
// after its Switch call returns, before any function prologue could consume
// the marker: it must still be there (a switch that overwrote it with the new
// stack's bound would lose the preemption request). The next prologue then
// honours the request (the goroutine yields) and the runtime resets the guard
// from the current, correct, bounds.
func TestPreemptMarkerKept(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	var root, fib Context
	lo, hi := mapStack(t, testStackSize)
	var inFiber uintptr
	if err := fib.Init(lo, hi, func() *Context {
		g := getg()
		guard := (*uintptr)(unsafe.Add(g, offStackguard0))
		*guard = stackPreempt
		Switch(&fib, &root)
		inFiber = *guard // no call between the return and this load
		return &root
	}); err != nil {
		t.Fatal(err)
	}
	g := getg()
	guard := (*uintptr)(unsafe.Add(g, offStackguard0))
	Switch(&root, &fib)
	inRoot := *guard // no call between the return and this load
	*guard = stackPreempt
	Switch(&root, &fib)
	if inRoot != stackPreempt || inFiber != stackPreempt {
		t.Fatalf("stackguard0 after a switch with a pending preemption request: root %#x, fiber %#x; want the marker %#x kept", inRoot, inFiber, stackPreempt)
	}
	if gl := readGuard(); gl != gField(g, offStackLo)+stackGuard && gl < stackguardMarkerMin {
		t.Fatalf("root stackguard0 = %#x once the request was honoured, want lo+%d", gl, stackGuard)
	}
}

//go:noinline
func readGuard() uintptr { return gField(getg(), offStackguard0) }

// BenchmarkLifecycle measures one whole fiber life with a pooled stack:
// stackpool Get, Init, the switch into the fresh fiber, its entry running and
// returning (the switch back), and Put. It is the stackful counterpart of a
// goroutine's create+run+exit.
func BenchmarkLifecycle(b *testing.B) {
	requireSupported(b)
	holdGC(b)
	pool, err := stackpool.New(stackpool.Config{StackSize: 64 << 10, DecayOps: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	root, fib := new(Context), new(Context)
	ran := 0
	entry := func() *Context { ran++; return root }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := pool.Get()
		if err != nil {
			b.Fatal(err)
		}
		if err := fib.Init(st.Lo(), st.Hi(), entry); err != nil {
			b.Fatal(err)
		}
		Switch(root, fib)
		pool.Put(st)
	}
	b.StopTimer()
	if ran != b.N {
		b.Fatalf("%d fibers ran, want %d", ran, b.N)
	}
}

// TestRuntimeServicesInsideFiber blocks the goroutine while it runs on a
// fiber stack (channel receive, timer sleep, a system call, a mutex handed
// over by another goroutine), so the scheduler parks it with g.stack
// describing the fiber and may resume it on another thread; and it spins
// without calls long enough for sysmon's signal-based preemption to land on
// the fiber stack. Everything must come back intact.
func TestRuntimeServicesInsideFiber(t *testing.T) {
	requireSupported(t)
	holdGC(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var root, fib Context
	var log []string
	newFiber(t, &fib, func() *Context {
		ch := make(chan int)
		go func() { ch <- 42 }()
		log = append(log, fmt.Sprint("recv ", <-ch))
		Switch(&fib, &root)

		time.Sleep(time.Millisecond)
		if _, err := os.ReadFile("/proc/self/stat"); err != nil {
			panic(err)
		}
		var mu sync.Mutex
		mu.Lock()
		go func() { time.Sleep(time.Millisecond); mu.Unlock() }()
		mu.Lock() // parks until the other goroutine unlocks
		log = append(log, "slept, read, locked")
		Switch(&fib, &root)

		// Spin for 30ms: sysmon asks for preemption after 10ms, which a
		// function prologue (time.Now's) honours on the fiber stack.
		deadline := time.Now().Add(30 * time.Millisecond)
		n := 0
		for time.Now().Before(deadline) {
			for i := 0; i < 1000; i++ {
				n += i
			}
		}
		// Spin without any call until another goroutine has run. With
		// GOMAXPROCS=1 it can run only if this loop is preempted by signal
		// (asyncPreempt, which runs on the fiber stack); the loop is bounded
		// so that a failure cannot hang the test.
		var other atomic.Bool
		go other.Store(true)
		spinUntil(&other, 1_000_000_000)
		if !other.Load() {
			panic("the spinning fiber was never preempted asynchronously")
		}
		spinSink = n
		log = append(log, "spun")
		return &root
	})
	Switch(&root, &fib)
	Switch(&root, &fib)
	Switch(&root, &fib)
	if got := strings.Join(log, "; "); got != "recv 42; slept, read, locked; spun" || !fib.Finished() {
		t.Fatalf("log %q, finished %v", got, fib.Finished())
	}
}

// spinSink keeps the spin loop's result alive.
var spinSink int

// spinUntil loops without calls (atomic loads are intrinsics) until done is
// set or the iterations run out, so it can only be preempted asynchronously.
//
//go:noinline
func spinUntil(done *atomic.Bool, iterations int) {
	for i := 0; i < iterations && !done.Load(); i++ {
		spinSink += i
	}
}
