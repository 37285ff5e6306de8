package fiber

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// GODEBUGShrinkOff is the GODEBUG setting that stops the collector from
// shrinking goroutine stacks. With the fence working no collection runs while
// fibers exist, so this is defence in depth. GODEBUG is read when the runtime
// starts, so it cannot be set from inside a process: the harness adds it to
// the environment of the child process that runs a stackful-asm cell
// (GODEBUG=gcshrinkstackoff=1, appended with a comma to any existing value).
const GODEBUGShrinkOff = "gcshrinkstackoff=1"

// gcFence is the process-wide state behind HoldGC: the collector settings
// saved by the first holder and restored by the last.
var gcFence struct {
	sync.Mutex
	holders     int
	prevPercent int
	prevLimit   int64
}

// GCHold is one holder of the collector fence (see HoldGC).
type GCHold struct {
	startCycles uint64
	released    bool
	err         error // Check's verdict at Release
}

// HoldGC turns the garbage collector off for as long as any hold exists:
// GOGC=off (debug.SetGCPercent(-1), which also waits for a collection in
// progress to finish its mark phase) and no memory limit
// (debug.SetMemoryLimit(math.MaxInt64), since a limit triggers collections
// even with GOGC=off). The first hold saves the previous settings and the
// last Release restores them. The scheduler takes a hold before its first
// fiber exists and releases it after the last has finished.
//
// Holding the collector off cannot stop an explicit runtime.GC or
// debug.FreeOSMemory; Check and Release detect such a cycle.
func HoldGC() *GCHold {
	gcFence.Lock()
	defer gcFence.Unlock()
	if gcFence.holders == 0 {
		gcFence.prevPercent = debug.SetGCPercent(-1)
		gcFence.prevLimit = debug.SetMemoryLimit(math.MaxInt64)
	}
	gcFence.holders++
	return &GCHold{startCycles: completedGCCycles()}
}

// Check returns a *GCDuringFibersError if a collection ran since the hold was
// taken, nil otherwise. A mark phase still in progress is waited for first,
// so that it is counted. After Release it returns Release's verdict.
func (h *GCHold) Check() error {
	if h.released {
		return h.err
	}
	debug.SetGCPercent(-1) // no change while held; waits for an in-flight mark to finish
	if n := completedGCCycles() - h.startCycles; n > 0 {
		return &GCDuringFibersError{Cycles: n}
	}
	return nil
}

// Release ends the hold, restoring the collector settings when it was the
// last one, and returns Check's verdict for the whole hold. Releasing twice
// is an error.
func (h *GCHold) Release() error {
	if h.released {
		return errors.New("fiber: GCHold released twice")
	}
	err := h.Check()
	h.released, h.err = true, err
	gcFence.Lock()
	defer gcFence.Unlock()
	gcFence.holders--
	if gcFence.holders == 0 {
		debug.SetMemoryLimit(gcFence.prevLimit)
		debug.SetGCPercent(gcFence.prevPercent)
	}
	return err
}

// GCDuringFibersError reports garbage-collection cycles that completed while
// the collector was held off for fibers. The run that saw it is invalid.
type GCDuringFibersError struct {
	Cycles uint64 // completed cycles during the hold
}

func (e *GCDuringFibersError) Error() string {
	return fmt.Sprintf("fiber: %d garbage-collection cycle(s) ran while fibers existed, although the collector was held off (GOGC=off, no memory limit). "+
		"The collector scans only the stack the goroutine is running on, so objects referenced only from a suspended fiber's stack "+
		"(or from the goroutine's own stack while a fiber ran) may have been freed and reused: this run's results cannot be trusted. "+
		"Something called runtime.GC or debug.FreeOSMemory, or changed GOGC/the memory limit, during the run", e.Cycles)
}

var gcCyclesSample = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
var gcCyclesMu sync.Mutex

// completedGCCycles reads /gc/cycles/total:gc-cycles, the number of
// completed collection cycles since the process started.
func completedGCCycles() uint64 {
	gcCyclesMu.Lock()
	defer gcCyclesMu.Unlock()
	metrics.Read(gcCyclesSample)
	if gcCyclesSample[0].Value.Kind() != metrics.KindUint64 {
		panic("fiber: runtime/metrics has no /gc/cycles/total:gc-cycles on this toolchain")
	}
	return gcCyclesSample[0].Value.Uint64()
}
