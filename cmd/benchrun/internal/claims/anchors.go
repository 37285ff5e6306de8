package claims

// Anchor is a published figure quoted for context: a run cannot measure
// other systems, so these are quotations with their sources, never
// corobench measurements. docs/design.md §8 lists them with their
// sources, each read in the source named.
type Anchor struct {
	Topic    string // "Context switch", "Memory per coroutine", "Event loops"
	System   string
	Figure   string // as the source states it
	Counting string // one-way, round trip, per op ... as the source says; "" when it does not apply
	Hardware string // as the source states it
	Source   string
}

// Anchors are the published reference figures, in docs/design.md §8's
// order.
// Context-switch figures are one-way unless the source says otherwise.
var Anchors = []Anchor{
	{"Context switch", "Boost.Context fcontext (callcc)", "9 ns / 19 cycles; ucontext 547 ns", "one-way", "2× Xeon E5-2620v4 2.2 GHz", `boost.org libs/context doc "Performance" (1.87)`},
	{"Context switch", "Boost.Coroutine2", "26 ns (fcontext) vs 542 ns (ucontext)", "one-way", "2× Xeon E5-2620v4 2.2 GHz", `boost.org libs/coroutine2 doc "Performance"`},
	{"Context switch", "libaco acosw", "10.3 ns (resume+yield pair 20.6 ns); create ≈ 65 ns", "one-way; the pair is a round trip", "AWS c5d.large", "hnes/libaco README"},
	{"Context switch", "minicoro (asm)", "9 cycles switch, 31 cycles init; ucontext 352 cycles", "one-way", "i7-8750H", "edubart/minicoro README"},
	{"Context switch", "libdill", "switch 13 ns; create+exit 25 ns", "one-way", "i7-4770K", "sustrik/libdill issue #30"},
	{"Context switch", "libco / goroutine / C++20", "84 / 425 / 5 ns at 1 coroutine; 450 / 1047 / 9 ns at 30k", "one-way", "not stated", "libcopp benchmark gist (owent)"},
	{"Context switch", "PhotonLibOS", "10–20 ns", "one-way", "2.6 GHz i7", "alibaba/PhotonLibOS issue #52"},
	{"Context switch", "Go channel ping-pong", "≈ 160 ns per op", "per channel operation", "not stated", "Go channel benchmarks quoted in TrueAsync's evidence page"},
	{"Context switch", "Go + LockOSThread", "channel op 500 → 7887 ns", "per channel operation", "amd64", "golang/go issue #18023"},
	{"Context switch", "Tokio", "task switch ≈ 0.2 µs; spawn 0.3 µs", "one-way", "4-core laptop", "jimblandy/context-switch README"},
	{"Context switch", "Loom Continuation", "yield+continue 1.5–2.4 µs", "round trip (yield and continue)", "not stated", "openjdk/loom PR #191"},
	{"Context switch", "TrueAsync", `"10–20 ns on modern x86" (a design claim, not a measurement)`, "one-way", "–", "TrueAsync architecture docs"},

	{"Memory per coroutine", "goroutine", "2048 B minimum stack; g struct 440 B (64-bit)", "", "–", "Go runtime stack.go, sizeof_test.go"},
	{"Memory per coroutine", "goroutine (blocked), measured", "2.1–2.7 KB each", "", "–", `"What's in a goroutine" (tpaschalis)`},
	{"Memory per coroutine", "1M sleeping tasks, RSS", "Go 2586 MB; Java Loom 1095 MB; tokio 439 MB; futures join_all 207 MB", "", "–", "hez2010/async-runtimes-benchmarks-2024"},
	{"Memory per coroutine", "Boost.Context", "64 KiB default stack", "", "–", "boostorg/context stack_traits"},
	{"Memory per coroutine", "libaco", "10M coroutines in 2.8 GB with copy-stacks; aco_t ≈ 160 B", "", "–", "hnes/libaco README"},
	{"Memory per coroutine", "minicoro", "56 KB default stack; 100k × 2 MB reserved → 783 MB RSS", "", "–", "edubart/minicoro README"},

	{"Event loops", "libuv timers", "millisecond API; loop time cached per iteration", "", "–", "docs.libuv.org, timer.html"},
	{"Event loops", "libuv", "empty loop ≈ 3.2M ticks/s; TCP ping-pong 44k round trips/s", "round trips (ping-pong)", "–", "libuv/libuv issue #207"},
	{"Event loops", "epoll", "single-fd wake-up 726 ns (floor 483 ns)", "one wake-up", "–", "grpc/grpc issue #10330"},
	{"Event loops", "Go timers", "time.Sleep(50µs) wakes at p50 ≈ 1 ms with epoll_wait's ms timeout; 52.7 µs with epoll_pwait2", "", "–", "golang/go issue #79872 (open)"},
	{"Event loops", "Go netpoll", "only every 10 ms when all Ps are busy", "", "–", "golang/go issue #51651"},
	{"Event loops", "Go net vs netpoll echo", "1 KB, c=100: 242.8k vs 241.4k TPS; p99 2.12 ms vs 1.13 ms", "request/response (round trip)", "–", "cloudwego/netpoll-benchmark issue #3"},
	{"Event loops", "TrueAsync HTTP server", "1 thread: 43k req/s, p99 2.3 ms; coroutine machinery 9.5% of CPU; 5 syscalls per keep-alive request", "request/response (round trip)", "–", "true-async/server docs (COROUTINE_OVERHEAD_ANALYSIS, PERFORMANCE_ANALYSIS)"},
}
