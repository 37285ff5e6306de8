package bodies

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// Memory: n idle suspended coroutines, each having touched 1 KiB of stack
// (stackful, goroutines) or of state (stackless).
var Memory = register(&scenarios.Scenario{
	Name:    "memory",
	Bench:   "Memory",
	Summary: "n idle suspended coroutines, each having touched 1 KiB of stack or state: RSS and heap per coroutine.",
	Doc: "n coroutines each write a 1 KiB local array (stackless: a 1 KiB array in the task's state struct), " +
		"then suspend on one gate with the array live. B/coroutine is the growth of the process's resident set " +
		"(/proc/self/statm) from before the spawns to when all n are suspended, divided by n: stacks, coroutine " +
		"records, queue slots, everything. heap-B/coroutine is the Go heap's part of it (runtime.MemStats.HeapAlloc; " +
		"goroutine stacks are not heap, fiber stacks are mmap'd outside it). A state, not a time: no ns figure.",
	NotJudged:   "its headline is a byte count, which a runqueue wait does not move",
	CoreMarkOff: "its headline is a byte count, which a shared core does not move",
	Claim: "Memory per coroutine: 4–64 KiB stackful vs the exact state size stackless (docs/design.md §1, the claims); " +
		"goroutine ≈ 2–2.7 KB blocked (docs/design.md §8).",
	Params: []scenarios.Param{{
		Key: "n", Full: []string{"1000", "100000", "1000000"}, Quick: []string{"1000", "100000"},
		Min: 1, Max: scenarios.IntLimit, BytesPer: scenarios.CoroutineBytes,
		Doc: "coroutines suspended at once",
	}},
	Metrics: []scenarios.Metric{
		{Unit: "B/coroutine", Kind: scenarios.BodyMeasured, Headline: "memory per coroutine (RSS)", HeadlineAt: []string{"n=100000", "n=1000000", "n=1000"}},
		{Unit: "heap-B/coroutine", Kind: scenarios.BodyMeasured},
	},
	FixedIters: 1,
	// One n=1000000 run takes 3–10 s per row (page faults on ~5 GB, and
	// the teardown); its figure is a byte count that barely moves between
	// repetitions, so 3 of them keep the full run within its budget.
	MaxCount:     map[string]int{"n=1000000": 3},
	Blocking:     memoryBlocking,
	StateMachine: memoryStateMachine,
	Want:         memoryWant,
})

// touchedBytes is what every coroutine of memory and burst writes before
// suspending: 1 KiB of stack or state.
const touchedBytes = 1024

// fillTouched writes the pattern every coroutine writes into its 1 KiB.
func fillTouched(buf *[touchedBytes]byte, id uint64) {
	for i := range buf {
		buf[i] = byte(id + uint64(i))
	}
}

// readTouched reads back two bytes of the array, chosen by id, so the
// whole array must stay live (the compiler cannot know which bytes are
// read) and the checksum proves it survived the suspend.
func readTouched(buf *[touchedBytes]byte, id uint64) uint64 {
	k := id % touchedBytes
	return id<<16 | uint64(buf[k])<<8 | uint64(buf[touchedBytes-1-k])
}

// touchedWant is readTouched's result for an intact array, in O(1).
func touchedWant(id uint64) uint64 {
	k := id % touchedBytes
	return id<<16 | uint64(byte(id+k))<<8 | uint64(byte(id+touchedBytes-1-k))
}

// touchStackAndWait writes a 1 KiB array on the calling coroutine's stack,
// calls wait with it live, and reads it back. noinline keeps the array in
// this frame, on the stack being measured (it does not escape: fillTouched
// and readTouched keep no pointer).
//
//go:noinline
func touchStackAndWait(id uint64, wait func()) uint64 {
	var buf [touchedBytes]byte
	fillTouched(&buf, id)
	wait()
	return readTouched(&buf, id)
}

// sumTouched is the checksum of n coroutines 0..n-1 each reporting
// touchedWant: an order-independent sum, since the coroutines of
// goroutine-multi finish in any order.
func sumTouched(n int) uint64 {
	var sum uint64
	for i := 0; i < n; i++ {
		sum += touchedWant(uint64(i))
	}
	return sum
}

func memoryWant(env *scenarios.Env) uint64 { return sumTouched(env.Int("n")) }

// suspendedCrowd spawns n coroutines that each touch 1 KiB of stack and
// wait on gate, and returns once all n have touched their stack (the
// caller yields until they have). Each adds its readTouched to sum when
// released; the last to finish fires done.
func suspendedCrowd(rt scenarios.Blocking, n int, gate scenarios.Gate, sum *atomic.Uint64, done scenarios.Signal) {
	var started, finished atomic.Int64
	for i := 0; i < n; i++ {
		id := uint64(i)
		rt.Go(func() {
			v := touchStackAndWait(id, func() {
				started.Add(1)
				gate.Wait()
			})
			sum.Add(v)
			if finished.Add(1) == int64(n) {
				done.Fire()
			}
		})
	}
	for started.Load() < int64(n) {
		rt.Yield()
	}
}

func memoryBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	g, ok := rt.(scenarios.Gates)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Gates", "the row has no broadcast gate")
	}
	n := env.Int("n")
	gate, done := g.NewGate(), rt.NewSignal()
	var sum atomic.Uint64
	rss0, heap0 := residentBytes(), heapBytes()
	suspendedCrowd(rt, n, gate, &sum, done)
	rss1, heap1 := residentBytes(), heapBytes()
	gate.Open()
	done.Wait()
	return scenarios.Outcome{Ops: int64(n), Checksum: sum.Load(), Values: perCoroutine(n, rss0, rss1, heap0, heap1)}, nil
}

func perCoroutine(n int, rss0, rss1, heap0, heap1 int64) map[string]float64 {
	return map[string]float64{
		"B/coroutine":      max(0, float64(rss1-rss0)/float64(n)),
		"heap-B/coroutine": max(0, float64(heap1-heap0)/float64(n)),
	}
}

// memoryStateMachine is the stackless twin: n tasks whose state struct
// holds the 1 KiB array, all suspended on one event.
func memoryStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	n := env.Int("n")
	s := stackless.New()
	defer s.Close()
	var gate stackless.Event
	var sum uint64
	rss0, heap0 := residentBytes(), heapBytes()
	// No slice of the tasks: it would add 8 B per task to the figure. The
	// scheduler holds them, and the collector is off during the run.
	for i := 0; i < n; i++ {
		if err := s.Spawn(&memoryTask{id: uint64(i), gate: &gate, sum: &sum}); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	var rss1, heap1 int64
	opener := &gateOpener{gate: &gate, measure: func() { rss1, heap1 = residentBytes(), heapBytes() }}
	if err := s.Spawn(opener); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum, Values: perCoroutine(n, rss0, rss1, heap0, heap1)}, nil
}

// memoryTask is touchStackAndWait as a state machine: the array lives in
// the state struct.
type memoryTask struct {
	stackless.Coro
	state uint8
	id    uint64
	gate  *stackless.Event
	sum   *uint64
	buf   [touchedBytes]byte
}

func (t *memoryTask) Resume(c *stackless.Context) stackless.Step {
	if t.state == 0 {
		fillTouched(&t.buf, t.id)
		t.state = 1
		return c.Await(t.gate)
	}
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	*t.sum += readTouched(&t.buf, t.id)
	return c.Done()
}

// gateOpener runs after every task spawned before it has suspended (the
// queue is FIFO): it takes the measurement, then opens the gate.
type gateOpener struct {
	stackless.Coro
	gate    *stackless.Event
	measure func()
}

func (t *gateOpener) Resume(c *stackless.Context) stackless.Step {
	t.measure()
	t.gate.Resolve(nil)
	return c.Done()
}

// residentBytes returns the process's resident set size: the second field
// of /proc/self/statm, in pages.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		panic("scenarios: reading /proc/self/statm for the resident set size: " + err.Error())
	}
	rss, err := parseStatmResident(string(b))
	if err != nil {
		panic("scenarios: " + err.Error())
	}
	return rss * int64(os.Getpagesize())
}

// parseStatmResident returns the resident field (in pages) of a
// /proc/<pid>/statm line: "size resident shared text lib data dt".
func parseStatmResident(statm string) (int64, error) {
	fields := strings.Fields(statm)
	if len(fields) < 2 {
		return 0, &statmError{statm}
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || pages < 0 {
		return 0, &statmError{statm}
	}
	return pages, nil
}

type statmError struct{ line string }

func (e *statmError) Error() string {
	return "/proc/self/statm line " + strconv.Quote(e.line) + " has no resident page count in its second field"
}

// heapBytes returns the bytes of live (and not yet collected) heap objects.
func heapBytes() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
