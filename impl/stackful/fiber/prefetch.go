//go:build go1.26 && !go1.27 && linux && (amd64 || arm64)

package fiber

import "unsafe"

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

// PrefetchRingDeepLines is how many 64-byte stack lines PrefetchRing
// fetches from the saved SP upwards on a pick with RingDeep: twelve cover
// a suspended wait's whole chain up to the fiber's entry (Switch, the
// wait, the body, the runtime's entry frames: under 700 bytes), which a
// cancelled or finishing coroutine unwinds.
const PrefetchRingDeepLines = 12

// PrefetchRing's below bits. RingPick: a pick through the scheduler
// rather than a suspend's inline pick (the line below the saved SP for
// writing, and the record's line 3). RingDeep (with RingPick): a pick
// whose coroutines may unwind their whole chain (the stack lines up to
// PrefetchRingDeepLines). Below 0: neither.
const (
	RingPick = 1
	RingDeep = 2
)

// PrefetchTop is Prefetch for a suspended fiber whose saved SP is not
// known yet: the line of c itself (on arm64 its second one too: the frame
// pointer) and the PrefetchTopLines lines below c, where the fiber's first
// frames lie (the Context sits at the top of its stack, and a fiber's
// frames grow down from just below it). It loads nothing, so it does not
// wait on c's line the way PrefetchStack(c.StackTop()) would: it starts
// the misses of a fiber about to be resumed out of turn all at once. For a
// fiber suspended in a shallow chain (a coroutine waiting on an event from
// its body: the chain from Switch to the entry is under 700 bytes) the
// lines below c are the frames its resume returns through; for a deeper
// one they are the entry frames, wasted hints.
//
//go:noescape
func PrefetchTop(c *Context)

// PrefetchTopLines is how many 64-byte lines below its Context PrefetchTop
// fetches: twelve, as PrefetchRingDeepLines (a wait's chain up to the
// entry).
const PrefetchTopLines = 12

// StackTop returns the context's saved stack pointer (0 while it runs or
// before Init): the line a switch to it reads first (its frame and the
// return address of its Switch), for Prefetch.
func (c *Context) StackTop() uintptr { return c.sp }

// The distances, in picks from head, of PrefetchRing's three stages (see
// there), and how many records stages 1 and 2 take at once on amd64;
// prefetch_*.s use them through go_asm.h.
const (
	ringRecordAhead  = 16
	ringContextAhead = 8
	ringStackAhead   = 1
	ringContextBatch = 8 // a power of two; prefetch_amd64.s unrolls this many
)

// PrefetchRing runs the three stages of a scheduler's prefetch pipeline
// over its run queue in one call (one call instead of three: the calls
// cost more than the prefetches): ring is the queue's ring buffer, an
// array of mask+1 record pointers (mask+1 a power of two), and head the
// index of the record that runs next. Each stage fetches what a later
// stage, some picks later, will follow; the stages are that many picks
// apart so that the line a stage loads from has arrived when it runs
// (ringRecordAhead and the others below):
//
//   - ring[(head+ringRecordAhead)&mask]: the record's first two lines
//     (byte offsets 0 and 64: where a stackful coroutine record keeps what
//     the pick, the switch and the resume read; line 0 holds the *Context
//     the next stage reads) and, if below is not 0, its line 3 (byte
//     offset 192: the timer node, which a coroutine that sleeps again
//     after its wake reads first, in StartFresh). Without line 3, perf of
//     `benchrun profile -scenario timer -impl stackful-asm -param n=10000
//     -benchtime 3s` (cpu-clock at 20 kHz) put 9.2 % of the samples in
//     StartFresh, 97 % of them on the load of the node's loop pointer;
//     with it, 3.0 %. Only the scheduler's picks (Sleep and the other
//     waits pick through pickNext) fetch it: on every pick it cost a
//     pure Yield round 8 % at n = 65536 (in-package BenchmarkYieldN
//     prefetch=on, 4 pairs alternated: 89.5-97.9 against 94.0-107.1
//     cpu-ns per yield), whose coroutines never touch line 3;
//   - ring[(head+ringContextAhead)&mask]: what Switch reads of its
//     *Context (the saved registers it loads and the state byte it
//     checks): the Context's first line on amd64 (a Context that starts on
//     a line; see Context), its first two on arm64, whose frame pointer is
//     in the second;
//   - ring[(head+ringStackAhead)&mask]: PrefetchStack's lines from its saved SP upwards.
//     If below is not 0 (RingPick: a pick through the scheduler rather
//     than a suspend's inline pick), also the line below the SP for
//     writing: its next suspend pushes frames below the SP when it calls
//     out to the pick. With RingDeep, also the next lines up to
//     PrefetchRingDeepLines in all: a coroutine picked while its
//     scheduler shuts down or after a finish often runs its whole chain
//     of frames, not just the top of its loop (a cancelled wait unwinds
//     to the fiber's entry, a body returns). A woken sleeper does not: it
//     returns into its loop, and the six deep lines on every timer wake
//     cost BenchmarkTimerWakeRing 10 % (6 pairs alternated, medians 178.6
//     against 157.4 cpu-ns per wake; session 16), so pickNext passes
//     RingDeep only during a shutdown. An inline
//     pick passes 0: its coroutine returns into its own loop, and the
//     extra lines would be traffic for nothing (BenchmarkYieldN n=4096,
//     medians of 4 rounds: 16.2 cpu-ns per yield with the line below,
//     15.7 without; Shutdown n=100000, 4 rounds alternated: 377 ns per
//     coroutine with six lines on every pick, 239 with twelve on the
//     scheduler's picks only, 514 with twelve on every pick).
//
// On amd64 stages 1 and 2 run only when head is a multiple of
// ringContextBatch, each for that many consecutive slots (records
// head+16 to head+23, Contexts head+8 to head+15; the batches at
// successive multiples tile the ring, so each slot is fetched once a
// lap, its record 8 picks before its Context). Why: every Context is on
// a page of its own (its stack's top page), so with thousands queued each
// Context prefetch misses the TLB, and on this Xeon (KVM guest, nested
// paging) a PREFETCHT0 does not retire before its page walk is done. With
// one Context per pick, pprof of `benchrun profile -scenario yield -impl
// stackful-asm -param n=262144` put 85 % of the timed region in
// PrefetchRing, 1.11 s of 2.42 s on the instruction right after the
// Context's PREFETCHT0: each walk waited alone at the head of the reorder
// buffer. Several in a row walk together. Interleaved A/B of benchrun
// (`--scenario yield --impl stackful-asm --param n=2,4096,262144 --count 2
// --adapt-budget 0`, 8 rounds, benchstat): Contexts batched, records 12
// ahead one per pick: n=262144 288 -> 230 ns/switch (-20 %, p=0.000),
// n=2 and n=4096 unchanged (p=0.93, 0.25); then records batched too:
// 225 -> 209 (-7 %, p=0.005, 12 rounds), n=2 and n=4096 unchanged; then
// batches of 8 (records 16 ahead, Contexts 8) against batches of 4
// (records 12, Contexts 4): 203.7 -> 194.0 (-4.8 %, p=0.000, 12 rounds),
// n=2 10.13 -> 10.14, n=4096 36.9 -> 38.2 (~, p=0.22). Batches of 2
// (records 10 ahead) read worse than 4 in BenchmarkYieldN; the stack stage
// one pick further (records 13, Contexts 5, stack 2) changed nothing
// (201.7 against 199.9, p=0.35). arm64 keeps one record per pick for both
// stages (prefetch_arm64.s; not measured there).
//
// The distances were one pick apart (2, 1 and 0) until a stage's own load
// was seen waiting: with the machine's other core busy, pprof put 57 % of
// BenchmarkYieldN n=4096's time in PrefetchRing, on the loads of the
// record's first word and of the saved SP, the lines fetched only a pick
// (15 to 35 ns) before. In-package BenchmarkYieldN prefetch=on, cpu-ns per
// yield, 3 rounds each, distances record/context/stack: 2/1/0 32.8-35.8
// at n=4096 and 166-184 at n=262144; 8/4/1 27.5-28.7 and 139-156; 10/5/2
// 28.0-28.4 and 146-152; 12/6/2 28.9-30.6; 16/8/3 30.6-31.7 (see the
// commit for the A/B of the whole suite).
//
// Invariants the caller keeps: every slot is nil or points at a live
// record whose first word is nil or a *Context (the lines fetched past a
// shorter record are wasted hints, not faults), and such a Context is
// live: not freed, its stack still taken. PrefetchRing then loads only
// slots, first words and saved SPs, all valid memory; what it fetches
// through them is a hint that never faults, so a saved SP of 0 (a running
// context) or stale frames only waste the hint.
//
//go:noescape
func PrefetchRing(ring unsafe.Pointer, head, mask, below uintptr)
