//go:build !amd64 && !arm64

package reactor

// prefetchTimerNode is a no-op where the reactor has no assembly for it
// (see timerprefetch.go).
func prefetchTimerNode(addr uintptr) {}
