//go:build go1.26 && !go1.27 && linux && (amd64 || arm64)

package fiber

// Prefetch asks the CPU to start loading the cache line at addr and returns
// at once (PREFETCHT0 on amd64, PRFM PLDL1KEEP on arm64). It is a hint: it
// never faults, whatever addr is. Go has no prefetch intrinsic outside the
// runtime, so this costs a call (a few ns): worth it only where the line
// would otherwise miss and there is other work to overlap with the load.
//
//go:noescape
func Prefetch(addr uintptr)

// PrefetchStack is Prefetch for the PrefetchStackLines cache lines from the
// one holding sp upwards: what resuming a suspended fiber whose saved SP is
// sp reads first (Switch's return address, then the frames of the calls
// that suspended it, up to the user's code), in one call rather than one
// per line.
//
//go:noescape
func PrefetchStack(sp uintptr)

// PrefetchStackLines is how many 64-byte lines PrefetchStack fetches: six
// cover a suspend's frames up to the user's loop (Switch, Yield or
// AwaitWith, an adapter, the body: about 300 bytes), starting anywhere in
// the first line.
const PrefetchStackLines = 6

// StackTop returns the context's saved stack pointer (0 while it runs or
// before Init): the line a switch to it reads first (its frame and the
// return address of its Switch), for Prefetch.
func (c *Context) StackTop() uintptr { return c.sp }
