package bodies

import (
	"fmt"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// spawnCount is how many coroutines one alive=10000 cell creates: enough
// for a stable mean, few enough that the cold cell's fresh memory stays
// small and a quick cell takes a few ms.
const spawnCount = 10000

// spawnColdRuns is how many fresh runtimes one alive=1 pool=cold cell
// runs, one lifecycle each: every one costs a runtime's creation and
// teardown outside the timed region (tens of µs), so a cell stays near a
// tenth of a second.
const spawnColdRuns = 1000

// spawnWarmRounds is how many identical untimed rounds an alive=10000
// pool=warm cell runs before its timed one. One is not enough to reach the
// steady state: on plain goroutines (no harness, GOMAXPROCS=1, collector
// off) the round after a single warm-up read a median 391 ns/spawn
// (320-437 over 27 processes), the next 301, then 271 and 271; after three
// warm-up rounds the first timed one read 278 (260-383), as low as the
// rounds after it. stackful-asm's rounds fall the same way (453, 320, 274,
// 240). So with one warm-up the cell timed a transient, not the warm pool.
// Spinning 20 ms instead of the extra rounds did not help (418), so it is
// the runtime's and the pool's state, not the CPU's clock. This moves the
// figure to the steady state; it did not measurably narrow the spread
// between processes on a loaded machine.
const spawnWarmRounds = 3

// Spawn: create, run to completion, destroy.
var Spawn = register(&scenarios.Scenario{
	Name:    "spawn",
	Bench:   "Spawn",
	Summary: "Create, run to completion and destroy coroutines, one at a time (what the context pool does) or 10000 alive together (the memory hierarchy), with the pool cold or warm.",
	Doc: fmt.Sprintf("Create, run to completion, destroy; each coroutine does a few ns of work (a checksum add). "+
		"alive=1 is the lifecycle: the main coroutine spawns one coroutine and waits until it has finished, "+
		"one at a time, so what a spawn costs is what the pool does; every lifecycle spawns one function value made "+
		"once, its id rewritten between lifecycles (as stackless re-spawns its one child struct), so the body "+
		"allocates nothing per spawn and allocs/spawn is the row's own. pool=warm: one runtime, one untimed "+
		"lifecycle first (stackful-asm: one stack pooled and its records on the free lists; stackless: the "+
		"finished task struct is spawned again), then N timed lifecycles. pool=cold: each of %d lifecycles runs "+
		"in a fresh runtime and is timed alone (create+run+destroy, not the runtime's creation or teardown; "+
		"the clock is read around each one, which adds one clock read, tens of ns, to each): stackful-asm's "+
		"stack comes from a slab its main coroutine's start has just mapped, never touched (a first-touch page "+
		"fault), its records are new; stackless: a new task struct. The goroutine rows and stackful-coro report "+
		"not supported: Go keeps finished goroutines for the life of the process, so no runtime of theirs "+
		"starts cold twice. alive=10000 is the memory-hierarchy figure: the main coroutine spawns %d "+
		"coroutines at once, each yields once (so all are alive together and each needs a context of its own) "+
		"and then does its work, and main waits until all have finished; ns/spawn divides the whole by the "+
		"count, the yield included. Its count is fixed, so where other cells grow theirs, a process makes at least "+
		"three timed runs (as many as fit two bench times, at most five), each a new runtime, and reports their median as "+
		"for every other cell: pool=warm on every row, each run with its own warm rounds; pool=cold where a fresh "+
		"runtime is cold (stackful-asm, stackless), and the same for alive=1 pool=cold's %d-lifecycle runs. A process's "+
		"first run can read higher (stackless cold 1.3×, with ~100 minor faults against 0-5: pages the process touches "+
		"for the first time; stackful-coro warm 1.1-1.3×, ~200 faults), and the median leaves it out. pool=cold on the "+
		"goroutine rows and stackful-coro stays one run per process, the process's first: Go keeps dead goroutines for "+
		"the process's life, so a second run would not be cold. pool=cold times the first spawns of a "+
		"fresh runtime: empty stack pool, so every stackful-asm fiber takes a fresh stack (a slab mmap per "+
		"16–1024 stacks and a first-touch page fault each), run queue not grown; stackless: a new state struct "+
		"per task; goroutines: no dead g on Go's free list, so every go statement allocates a g and its 2 KiB "+
		"stack. pool=warm first runs %d identical untimed rounds in the same runtime (stackful: stacks pooled, "+
		"queue grown; stackless: the finished structs are re-spawned; goroutines: gfget reuses the dead gs, "+
		"stacks included): the round after only one still reads 1.06-1.65x the steady cost. On goroutine-multi the other Ps steal and finish goroutines while main still spawns, "+
		"so even cold reuses some gs. The collector is held off in every row over a heap pre-grown and swept "+
		"before the run (the results file's gc-policy), so heap allocations (alive=10000: each coroutine's closure; "+
		"stackful cold: its record) reuse warm pages; what still faults is memory outside the Go heap: minflt/op shows it.",
		spawnColdRuns, spawnCount, spawnColdRuns, spawnWarmRounds),
	Claim: "The context pool removes the mmap/mprotect latency from spawning (docs/design.md §1); cold and warm spawn " +
		"differ by ~40× (docs/design.md §8: libcopp).",
	Params: []scenarios.Param{{
		Key: "alive", Full: []string{"10000", "1"},
		Doc: "10000: all alive together (the memory hierarchy); 1: one coroutine at a time (the lifecycle: what the pool does)",
	}, {
		Key: "pool", Full: []string{"cold", "warm"},
		Doc: "cold: nothing pooled (alive=1: a fresh runtime per lifecycle); warm: after an identical untimed warm-up",
	}},
	Metrics: []scenarios.Metric{
		{Unit: "ns/spawn", Kind: scenarios.TimePerOp, Headline: "spawn cost (cold pool)", HeadlineAt: []string{"alive=10000/pool=cold"}},
		{Unit: "allocs/spawn", Kind: scenarios.AllocsPerOp},
	},
	ItersFor:     spawnIters,
	RerunFixed:   spawnRerun,
	FreshRuntime: spawnFresh,
	Blocking:     spawnBlocking,
	StateMachine: spawnStateMachine,
	Want:         spawnWant,
})

// spawnIters: alive=10000 spawns spawnCount once; the cold lifecycle runs
// spawnColdRuns fresh runtimes; the warm lifecycle fills the bench time.
func spawnIters(params map[string]string) int {
	switch {
	case params["alive"] != "1":
		return spawnCount
	case params["pool"] == "cold":
		return spawnColdRuns
	}
	return 0
}

// spawnRerun: every Spawn cell has a fixed iteration count, and every run
// is a whole measurement in its own runtime (its warm rounds or its one
// warm lifecycle inside the body), so a process makes several timed runs
// and reports their median, as it does for every other scenario: pool=warm
// on every row; pool=cold where a fresh runtime is cold (stackful-asm's
// pool and stackless's structs are the runtime's; the goroutine rows and
// stackful-coro keep Go's dead goroutines for the process's life, so their
// cold cell stays one run per process).
func spawnRerun(params map[string]string) scenarios.Rerun {
	if params["pool"] == "warm" {
		return scenarios.RerunAlways
	}
	return scenarios.RerunIfFresh
}

// spawnFresh: the cold lifecycle needs a fresh runtime per iteration, or
// every lifecycle after the first would find the pool warm.
func spawnFresh(params map[string]string) bool {
	return params["alive"] == "1" && params["pool"] == "cold"
}

// spawnValue is what coroutine id adds to the checksum.
func spawnValue(id uint64) uint64 { return mix(id, 0x5157) }

func spawnWant(env *scenarios.Env) uint64 { return spawnWantN(env.N) }

// spawnWarm reports whether the cell is pool=warm, rejecting other values.
func spawnWarm(env *scenarios.Env) (bool, error) {
	switch p := env.Params["pool"]; p {
	case "cold":
		return false, nil
	case "warm":
		return true, nil
	default:
		return false, fmt.Errorf("spawn: pool=%q is not a pool state: use pool=cold or pool=warm", p)
	}
}

func spawnBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	warm, err := spawnWarm(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	if env.Params["alive"] == "1" {
		return spawnLifecycle(rt, env, warm)
	}
	if warm {
		for range spawnWarmRounds {
			spawnRound(rt, 0, env.N, true)
		}
	}
	env.ResetTimer()
	sum := spawnRound(rt, 0, env.N, true)
	env.StopTimer()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
}

// spawnLifecycle is the alive=1 body: one coroutine at a time, created,
// run to completion and destroyed while main waits. Cold (a fresh runtime
// per call, Scenario.FreshRuntime): one lifecycle, timed alone, its id
// env.Iter. Warm: one untimed lifecycle, then N timed ones.
//
// Every lifecycle spawns the same function value, made once: its
// per-lifecycle data (the id) lives in a spawnChild that main rewrites
// between lifecycles, the way the state-machine twin re-spawns its one
// finished child struct. A closure made per spawn would put one heap
// allocation of the body's own (its captured id, sum and signal: ~12 ns,
// the largest item of stackful-asm's profile) into every row's ns/spawn,
// a cost of how this body passes an argument, not of create + run +
// destroy, and one the state-machine row never paid. What a row's spawn
// allocates itself (a goroutine row's `go` wrapper, a record) stays in.
func spawnLifecycle(rt scenarios.Blocking, env *scenarios.Env, warm bool) (scenarios.Outcome, error) {
	var sum, scratch uint64
	c := &spawnChild{done: rt.NewSignal(), sum: &sum}
	fn := c.run // the one function value every lifecycle spawns
	if !warm {
		c.id = uint64(env.Iter)
		env.StartTimer()
		spawnOne(rt, fn, c.done)
		env.StopTimer()
		return scenarios.Outcome{Ops: 1, Checksum: sum}, nil
	}
	c.sum = &scratch
	spawnOne(rt, fn, c.done)
	c.sum = &sum
	env.ResetTimer()
	// spawnOne's two calls, written out: a frame of the body's own (a call
	// and a return per lifecycle, ~1 ns) is no part of create + run +
	// destroy, and the state-machine twin has none.
	for i := 0; i < env.N; i++ {
		c.id = uint64(i)
		rt.Go(fn)
		c.done.Wait()
	}
	env.StopTimer()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
}

// spawnChild is the lifecycle's spawned coroutine: its id (set by main
// before each spawn), the checksum it adds to and the signal it fires.
// Main writes id only after done's Wait returned, which comes after the
// child's read on every row (the goroutine rows' Fire and Wait are a
// channel hand-off), so the reuse is race-free.
type spawnChild struct {
	id   uint64
	sum  *uint64
	done scenarios.Signal
}

// run is the child's body: its work (a checksum add), then done.
func (c *spawnChild) run() {
	*c.sum += spawnValue(c.id)
	c.done.Fire()
}

// spawnOne spawns fn (a spawnChild's run) and returns when it fires done.
// On the stackful rows the coroutine's context goes back to the pool
// before main resumes (the scheduler releases a finished fiber's stack on
// the way to the next context), so the destroy is inside; on the goroutine
// rows the receive on done happens after the add, so sum is safe to read.
func spawnOne(rt scenarios.Blocking, fn func(), done scenarios.Signal) {
	rt.Go(fn)
	done.Wait()
}

// spawnRound spawns n coroutines with ids base..base+n-1 and returns when
// all have finished, with the sum of their values (added, since on
// goroutine-multi they finish in any order). With together, each coroutine
// yields once first, so that all n are alive at once.
func spawnRound(rt scenarios.Blocking, base, n int, together bool) uint64 {
	var total atomic.Uint64
	var finished atomic.Int64
	done := rt.NewSignal()
	for i := 0; i < n; i++ {
		id := uint64(base + i)
		rt.Go(func() {
			if together {
				rt.Yield()
			}
			total.Add(spawnValue(id))
			if finished.Add(1) == int64(n) {
				done.Fire()
			}
		})
	}
	done.Wait()
	return total.Load()
}

func spawnStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	warm, err := spawnWarm(env)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	if env.Params["alive"] == "1" {
		return spawnLifecycleStateMachine(env, warm)
	}
	s := stackless.New()
	defer s.Close()
	var sum uint64
	var tasks []spawnTask
	if warm {
		tasks = make([]spawnTask, env.N)
		for i := range tasks {
			tasks[i] = spawnTask{id: uint64(i), sum: &sum, together: true}
		}
		for range spawnWarmRounds {
			for i := range tasks {
				tasks[i].state = spawnStart
				if err := s.Spawn(&tasks[i]); err != nil {
					return scenarios.Outcome{}, err
				}
			}
			if err := s.Run(); err != nil {
				return scenarios.Outcome{}, err
			}
		}
		sum = 0
	}
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		var t *spawnTask
		if warm {
			t = &tasks[i] // finished: only its state needs resetting
			t.state = spawnStart
		} else {
			t = &spawnTask{id: uint64(i), sum: &sum, together: true}
		}
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	err = s.Run()
	env.StopTimer()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, err
}

// States of a spawned task.
const (
	spawnStart   uint8 = iota // with together: yield once, so every task of the batch starts
	spawnYielded              // add to the checksum and finish
)

// spawnTask is the spawned coroutine's body: a yield if together, then its
// work.
type spawnTask struct {
	stackless.Coro
	state    uint8
	together bool
	id       uint64
	sum      *uint64
}

func (t *spawnTask) Resume(c *stackless.Context) stackless.Step {
	if t.together && t.state == spawnStart {
		t.state = spawnYielded
		return c.Yield()
	}
	*t.sum += spawnValue(t.id)
	return c.Done()
}

// spawnLifecycleStateMachine is spawnLifecycle's twin: a main task spawns
// one child task at a time and awaits its done event. Warm re-spawns the
// one finished child struct (how stackless callers pool task memory);
// cold runs one lifecycle in a fresh scheduler with a new child struct.
func spawnLifecycleStateMachine(env *scenarios.Env, warm bool) (scenarios.Outcome, error) {
	s := stackless.New()
	defer s.Close()
	var sum, scratch uint64
	m := &spawnLifeMain{env: env, warm: warm, sum: &sum, scratch: &scratch}
	if warm {
		m.n = env.N
		m.child = &spawnLifeChild{done: &m.done}
	} else {
		m.n, m.base = 1, env.Iter
	}
	if err := s.Spawn(m); err != nil {
		return scenarios.Outcome{}, err
	}
	err := s.Run()
	return scenarios.Outcome{Ops: int64(m.n), Checksum: sum}, err
}

// States of the lifecycle's main task.
const (
	lifeSpawn   uint8 = iota // start the next lifecycle (or the timing)
	lifeAwaited              // the child has fired done
)

// spawnLifeMain is spawnLifecycle's main coroutine lowered by hand: with
// warm, lifecycle -1 is the untimed warm-up and 0..n-1 are timed
// together; without, its one lifecycle is timed alone.
type spawnLifeMain struct {
	stackless.Coro
	state        uint8
	warm         bool
	i, n, base   int
	started      bool
	env          *scenarios.Env
	done         stackless.Event
	child        *spawnLifeChild // warm: the one struct, re-spawned
	sum, scratch *uint64
}

func (t *spawnLifeMain) Resume(c *stackless.Context) stackless.Step {
	for {
		switch t.state {
		case lifeSpawn:
			if !t.started {
				t.started = true
				if t.warm {
					t.i = -1 // the untimed warm-up lifecycle first
				} else {
					t.env.StartTimer()
				}
			}
			if t.i == 0 && t.warm {
				t.env.ResetTimer()
			}
			if t.i == t.n {
				t.env.StopTimer()
				return c.Done()
			}
			child := t.child
			if !t.warm {
				child = &spawnLifeChild{done: &t.done} // cold: a new struct
			}
			child.id, child.sum = uint64(t.base+t.i), t.sum
			if t.i < 0 {
				child.sum = t.scratch
			}
			if err := c.Spawn(child); err != nil {
				return c.Fail(err)
			}
			t.state = lifeAwaited
			return c.Await(&t.done)
		case lifeAwaited:
			t.done.Reset()
			t.i++
			t.state = lifeSpawn
		}
	}
}

// spawnLifeChild is the spawned coroutine: its work, then done.
type spawnLifeChild struct {
	stackless.Coro
	id   uint64
	sum  *uint64
	done *stackless.Event
}

func (t *spawnLifeChild) Resume(c *stackless.Context) stackless.Step {
	*t.sum += spawnValue(t.id)
	t.done.Resolve(nil)
	return c.Done()
}
