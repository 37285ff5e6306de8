package bodies

import (
	"fmt"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// spawnCount is how many coroutines one spawn cell creates: enough for a
// stable mean, few enough that the cold cell's fresh memory stays small
// and a quick cell takes a few ms.
const spawnCount = 10000

// Spawn: create, run to completion, destroy.
var Spawn = register(&scenarios.Scenario{
	Name:    "spawn",
	Bench:   "Spawn",
	Summary: "Create, run to completion and destroy one coroutine, with the context pool cold or warm.",
	Doc: fmt.Sprintf("The main coroutine spawns %d coroutines at once, each of which yields once and then does "+
		"a few ns of work (a checksum add), and waits until all have finished: create, run to completion, "+
		"destroy. The yield makes every coroutine start before the first one finishes, so all %d are alive "+
		"together and each needs a context of its own (without it the stackful runtime would start each "+
		"unstarted coroutine on the finished one's context, and one stack would serve the whole batch). "+
		"ns/spawn and allocs/spawn divide the whole by the count, the yield included. Each cell runs once in a "+
		"fresh process. pool=cold times the first spawns of a fresh runtime: empty stack pool, so every "+
		"stackful-asm fiber takes a fresh stack (a slab mmap per 16–1024 stacks and a first-touch page fault "+
		"each), run queue not grown; stackless: a new state struct per task; goroutines: no dead g on Go's free "+
		"list, so every go statement allocates a g and its 2 KiB stack. pool=warm first runs an identical "+
		"untimed round in the same runtime (stackful: stacks pooled, queue grown; stackless: the finished "+
		"structs are re-spawned; goroutines: gfget reuses the dead gs, stacks included). On goroutine-multi the "+
		"other Ps steal and finish goroutines while main still spawns, so even cold reuses some gs. The "+
		"collector is held off in every row, so the warm-up round's garbage is not reclaimed: each spawn's heap "+
		"allocations (stackful: a coroutine record and a closure) land on fresh pages in both cells.",
		spawnCount, spawnCount),
	Claim: "The context pool removes the mmap/mprotect latency from spawning (docs/design.md §1); cold and warm spawn " +
		"differ by ~40× (docs/design.md §8: libcopp).",
	Params: []scenarios.Param{{
		Key: "pool", Full: []string{"cold", "warm"},
		Doc: "cold: nothing pooled before the timed spawns; warm: after an identical warm-up round",
	}},
	Metrics: []scenarios.Metric{
		{Unit: "ns/spawn", Kind: scenarios.TimePerOp, Headline: "spawn cost (cold pool)", HeadlineAt: []string{"pool=cold"}},
		{Unit: "allocs/spawn", Kind: scenarios.AllocsPerOp},
	},
	FixedIters:   spawnCount,
	Blocking:     spawnBlocking,
	StateMachine: spawnStateMachine,
	Want:         spawnWant,
})

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
	if warm {
		spawnRound(rt, 0, env.N, true)
	}
	env.ResetTimer()
	sum := spawnRound(rt, 0, env.N, true)
	env.StopTimer()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
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
	s := stackless.New()
	defer s.Close()
	var sum uint64
	var tasks []spawnTask
	if warm {
		tasks = make([]spawnTask, env.N)
		for i := range tasks {
			tasks[i] = spawnTask{id: uint64(i), sum: &sum, together: true}
			if err := s.Spawn(&tasks[i]); err != nil {
				return scenarios.Outcome{}, err
			}
		}
		if err := s.Run(); err != nil {
			return scenarios.Outcome{}, err
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
