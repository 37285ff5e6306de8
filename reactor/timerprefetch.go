//go:build amd64 || arm64

package reactor

// prefetchTimerNode asks the CPU to start loading the cache lines of
// [addr-64, addr+192) and returns at once: hints that never fault, whatever
// addr is. popTimers calls it on the node timerPrefetchAhead entries ahead
// in the sorted run, so that the handler's misses overlap the firings
// before it. The span is the node's and the record's around it: both
// runtimes keep a coroutine's node inside its per-coroutine record and
// their OnTimer reads it (stackless: the whole 224-byte Coro, node at byte
// 64, TestCoroAroundTimerNode in impl/stackless). timerprefetch_amd64.s
// and timerprefetch_arm64.s are its two bodies; timerprefetch_other.go
// makes it a no-op elsewhere.
//
//go:noescape
func prefetchTimerNode(addr uintptr)
