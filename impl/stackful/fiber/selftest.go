package fiber

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

var support struct {
	once sync.Once
	err  error
}

// Supported reports whether fibers can run in this process: nil, or an error
// whose text starts with "not supported: " and says why (the harness reports
// the row unsupported with it). The first call runs the self-test described
// in the package doc; later calls return its cached verdict.
func Supported() error {
	support.once.Do(func() {
		if gateError != nil {
			support.err = gateError
			return
		}
		if err := selfTest(); err != nil {
			support.err = fmt.Errorf("not supported: fiber self-test failed on %s %s/%s: %w", runtime.Version(), runtime.GOOS, runtime.GOARCH, err)
		}
	})
	return support.err
}

// Warnings lists conditions that do not stop fibers from running but weaken
// the fence; the harness records them with the results.
func Warnings() []string {
	var w []string
	if !strings.Contains(os.Getenv("GODEBUG"), GODEBUGShrinkOff) {
		w = append(w, "GODEBUG does not contain "+GODEBUGShrinkOff+": if a garbage collection ran while a fiber existed, it could try to shrink a fiber stack (a clean fatal error, but set it in the child's environment as defence in depth)")
	}
	return w
}

// selfTest checks, on this goroutine and in a probe fiber, that the g field
// offsets the assembly uses hold what they should, and that a switch round
// trip and a traceback inside a fiber work.
func selfTest() error {
	if err := checkGoroutineFields(); err != nil {
		return err
	}
	return probeFiber()
}

//go:noinline
func checkGoroutineFields() error {
	g := getg()
	var local uintptr
	lo, hi := gField(g, offStackLo), gField(g, offStackHi)
	addr := uintptr(unsafe.Pointer(&local))
	guard := gField(g, offStackguard0)
	top := gField(g, offStktopsp)
	if lo == 0 || !(lo <= addr && addr < hi) {
		return fmt.Errorf("g.stack at offsets 0/8 is [%#x, %#x), which does not contain a local variable at %#x", lo, hi, addr)
	}
	if guard != lo+stackGuard && guard < stackguardMarkerMin {
		return fmt.Errorf("g.stackguard0 at offset 16 is %#x, want g.stack.lo+%d = %#x", guard, stackGuard, lo+stackGuard)
	}
	if !(lo < top && top <= hi) {
		return fmt.Errorf("g.stktopsp at offset 128 is %#x, outside the stack [%#x, %#x)", top, lo, hi)
	}
	// The defer and panic chains are checked relative to their current
	// values: the caller may have defer records pending (with -race or -N,
	// even defers that are usually open-coded are linked into g._defer).
	d0, p0 := gField(g, offDefer), gField(g, offPanic)
	if d := deferRecordInFlight(); d == 0 || d == d0 {
		return fmt.Errorf("g._defer at offset 40 stayed %#x while a new defer record was pending", d)
	}
	// The records may live on the stack, which may have moved (grown)
	// meanwhile, so compare positions relative to the stack top.
	nlo, nhi := gField(g, offStackLo), gField(g, offStackHi)
	if d := gField(g, offDefer); !sameRecord(d0, d, lo, hi, nlo, nhi) {
		return fmt.Errorf("g._defer at offset 40 is %#x after the deferred call ran, want %#x as before", d, d0)
	}
	if p := panicRecordInFlight(); p == 0 || p == p0 {
		return fmt.Errorf("g._panic at offset 32 stayed %#x inside a deferred call run by a panic", p)
	}
	nlo, nhi = gField(g, offStackLo), gField(g, offStackHi)
	if p := gField(g, offPanic); !sameRecord(p0, p, lo, hi, nlo, nhi) {
		return fmt.Errorf("g._panic at offset 32 is %#x after the panic was recovered, want %#x as before", p, p0)
	}
	return nil
}

// sameRecord reports whether the record pointers before and after denote the
// same record, allowing for the stack having moved from [lo, hi) to
// [nlo, nhi) in between.
func sameRecord(before, after, lo, hi, nlo, nhi uintptr) bool {
	if lo <= before && before < hi {
		return nlo <= after && after < nhi && hi-before == nhi-after
	}
	return before == after
}

// deferRecordInFlight returns g._defer while a deferred call that cannot be
// open-coded (it is in a loop) is pending, so the runtime has linked a
// _defer record into g._defer.
//
//go:noinline
func deferRecordInFlight() (d uintptr) {
	for i := 0; i < 1; i++ {
		defer func() {}()
	}
	return gField(getg(), offDefer)
}

// panicRecordInFlight returns g._panic as seen by a deferred call that a
// panic runs.
//
//go:noinline
func panicRecordInFlight() (p uintptr) {
	defer func() {
		p = gField(getg(), offPanic)
		recover()
	}()
	panic("fiber self-test probe")
}

// probeResult is what the probe fiber observed about itself.
type probeResult struct {
	lo, hi, guard, top, local uintptr
	lastFrame                 string
	sawFiberMain              bool
	recovered                 bool
	resumed                   bool
}

// probeFiber runs one fiber with the collector held off: it checks g's
// fields on the fiber, recovers a panic there, takes a traceback, switches
// back to the root and is resumed to finish; the root's own fields must come
// back unchanged.
func probeFiber() (err error) {
	const size = 64<<10 - 4096
	lo, hi, unmap, err := mapProbeStack(size)
	if err != nil {
		return fmt.Errorf("mapping a probe stack: %v", err)
	}
	defer func() {
		if uerr := unmap(); uerr != nil && err == nil {
			err = fmt.Errorf("unmapping the probe stack: %v", uerr)
		}
	}()
	hold := HoldGC()
	defer func() {
		if herr := hold.Release(); herr != nil && err == nil {
			err = herr
		}
	}()

	var root, fib Context
	var res probeResult
	fib = Context{lo: lo, hi: hi, state: stateFresh, entry: func() *Context {
		probeInFiber(&res)
		Switch(&fib, &root)
		res.resumed = true
		return &root
	}}
	initFrame(&fib)

	g := getg()
	rootLo, rootHi, rootDefer := gField(g, offStackLo), gField(g, offStackHi), gField(g, offDefer)
	Switch(&root, &fib)
	if gField(g, offStackLo) != rootLo || gField(g, offStackHi) != rootHi || gField(g, offDefer) != rootDefer {
		return fmt.Errorf("the goroutine's stack fields were not restored after a switch back from a fiber")
	}
	if !fib.Resumable() {
		return fmt.Errorf("the probe fiber is %v after switching back, want suspended", fib.state)
	}
	Switch(&root, &fib)
	switch {
	case !res.resumed || !fib.Finished():
		return fmt.Errorf("the probe fiber did not finish after being resumed")
	case res.lo != lo || res.hi != hi:
		return fmt.Errorf("inside the fiber g.stack is [%#x, %#x), want the fiber's [%#x, %#x)", res.lo, res.hi, lo, hi)
	case !(lo <= res.local && res.local < hi):
		return fmt.Errorf("a local of the fiber at %#x is outside its stack [%#x, %#x)", res.local, lo, hi)
	case res.guard != lo+stackGuard && res.guard < stackguardMarkerMin:
		return fmt.Errorf("inside the fiber g.stackguard0 is %#x, want lo+%d = %#x", res.guard, stackGuard, lo+stackGuard)
	case res.top != hi-topReserve:
		return fmt.Errorf("inside the fiber g.stktopsp is %#x, want %#x", res.top, hi-topReserve)
	case !res.recovered:
		return fmt.Errorf("recover inside the fiber did not stop a panic")
	case !res.sawFiberMain || res.lastFrame != fiberStartName:
		return fmt.Errorf("a traceback inside the fiber ends at %q (fiberMain seen: %v), want it to pass fiberMain and end at the trampoline %s", res.lastFrame, res.sawFiberMain, fiberStartName)
	}
	return nil
}

// fiberStartName is the symbol of the trampoline, the last frame of every
// fiber's traceback.
const fiberStartName = "github.com/corobench/corobench/impl/stackful/fiber.fiberStart"

// fiberMainName is the symbol of the Go function the trampoline calls.
const fiberMainName = "github.com/corobench/corobench/impl/stackful/fiber.fiberMain"

//go:noinline
func probeInFiber(res *probeResult) {
	g := getg()
	var local uintptr
	res.local = uintptr(unsafe.Pointer(&local))
	res.lo, res.hi = gField(g, offStackLo), gField(g, offStackHi)
	res.guard = gField(g, offStackguard0)
	res.top = gField(g, offStktopsp)
	res.recovered = func() (ok bool) {
		defer func() { ok = recover() != nil }()
		panic("fiber self-test probe")
	}()
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if f.Function == fiberMainName {
			res.sawFiberMain = true
		}
		res.lastFrame = f.Function
		if !more {
			break
		}
	}
}
