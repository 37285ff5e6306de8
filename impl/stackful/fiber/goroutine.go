package fiber

// Goroutine returns an identity of the calling goroutine: the address of
// its runtime g, which no two live goroutines share. It is 0 in a build
// without the switch (see Supported), where callers cannot tell goroutines
// apart this way. It is one load from thread-local storage, for callers
// that must check cheaply that they run on the goroutine they expect.
func Goroutine() uintptr { return uintptr(getg()) }
