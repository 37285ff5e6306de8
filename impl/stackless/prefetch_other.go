//go:build !amd64 && !arm64

package stackless

// prefetchTaskFields is a no-op where the runtime has no assembly for it
// (see prefetch.go).
func prefetchTaskFields(addr uintptr) {}

// prefetchTask is a no-op here too (see prefetch.go).
func prefetchTask(addr uintptr) {}
