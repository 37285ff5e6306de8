//go:build !(go1.26 && !go1.27 && linux && (amd64 || arm64))

package fiber

import (
	"errors"
	"runtime"
	"unsafe"
)

// gateError explains why this build has no switch: the assembly exists only
// for the toolchain whose runtime.g layout was verified.
var gateError = errors.New("not supported: the fiber context switch is built only for go1.26 on linux/amd64 and linux/arm64 (its runtime.g offsets were verified for that toolchain); this binary is " +
	runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH)

func switchContext(from, to *Context) { panic(gateError) }

// Switch panics: there is no switch in this build (see Supported).
func Switch(from, to *Context) { panic(gateError) }

func fiberStartPC() uintptr { return 0 }

func finishedResumedPC() uintptr { return 0 }

var startPC, finishedPC uintptr // fiberStartPC's and finishedResumedPC's values (none here)

func getg() unsafe.Pointer { return nil }

func switchEntries() (sw, sc uintptr) { return 0, 0 }

const switchEntryAlign = 64

func initFrame(c *Context) { panic(gateError) }

func mapProbeStack(size int) (lo, hi uintptr, unmap func() error, err error) {
	return 0, 0, nil, gateError
}

// Prefetch does nothing where the fiber switch is not supported.
func Prefetch(addr uintptr) {}

// PrefetchStack does nothing where the fiber switch is not supported.
func PrefetchStack(sp uintptr) {}

// PrefetchTop does nothing where the fiber switch is not supported.
func PrefetchTop(c *Context) {}

// PrefetchTopLines is PrefetchTop's line count (see prefetch.go).
const PrefetchTopLines = 12

// PrefetchRing does nothing where the fiber switch is not supported.
func PrefetchRing(ring unsafe.Pointer, head, mask, below uintptr) {}

// PrefetchStackLines is PrefetchStack's line count (see prefetch.go).
const PrefetchStackLines = 6

// PrefetchRingDeepLines is PrefetchRing's deep line count (see prefetch.go).
const PrefetchRingDeepLines = 12

// PrefetchRing's below bits (see prefetch.go).
const (
	RingPick = 1
	RingDeep = 2
)

// StackTop returns 0 where the fiber switch is not supported.
func (c *Context) StackTop() uintptr { return 0 }

// PrefetchRing's stage distances (see prefetch.go).
const (
	ringRecordAhead  = 16
	ringContextAhead = 8
	ringStackAhead   = 1
	ringContextBatch = 8
)
