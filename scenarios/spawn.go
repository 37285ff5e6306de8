package scenarios

import (
	"fmt"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
)

// spawnCount is how many coroutines one spawn cell creates: enough for a
// stable mean, few enough that the cold cell's fresh memory stays small
// and a quick cell takes a few ms.
const spawnCount = 10000

// Spawn: create, run to completion, destroy.
var Spawn = register(&Scenario{
	Name:  "spawn",
	Bench: "Spawn",
	Doc: fmt.Sprintf("The main coroutine spawns %d coroutines at once, each doing a few ns of work (a checksum "+
		"add), then waits until all have finished: create, run to completion, destroy. ns/spawn and "+
		"allocs/spawn divide the whole by the count. Each cell runs once in a fresh process. pool=cold times "+
		"the first spawns of a fresh runtime: empty stack pool, run queue not grown (stackless: a new state "+
		"struct per task; goroutines: no dead g on Go's free list, so every go statement allocates a g and its "+
		"2 KiB stack). pool=warm first runs an identical untimed round in the same runtime (stackful: stacks "+
		"pooled, queue grown; stackless: the finished structs are re-spawned; goroutines: gfget reuses the dead "+
		"gs, stacks included, from the P's and the global free list). Note: the stackful runtime starts an "+
		"unstarted coroutine on a finished one's context (takeover), so one batch needs one stack and cold "+
		"differs from warm by one slab mapping and the queue's growth; on goroutine-multi the other Ps steal "+
		"and finish goroutines while main still spawns, so even cold reuses some gs. The collector is held "+
		"off in every row, so the warm-up round's garbage is not reclaimed: each spawn's heap allocations "+
		"(stackful: a coroutine record and a closure) land on fresh pages in both cells, and their page "+
		"faults are part of both figures.", spawnCount),
	Claim: "The context pool removes the mmap/mprotect latency from spawning (seed 000); cold and warm spawn " +
		"differ by ~40× (ANCHORS.md: libcopp).",
	Params: []Param{{
		Key: "pool", Full: []string{"cold", "warm"},
		Doc: "cold: nothing pooled before the timed spawns; warm: after an identical warm-up round",
	}},
	Metrics: []Metric{
		{Unit: "ns/spawn", Kind: TimePerOp},
		{Unit: "allocs/spawn", Kind: AllocsPerOp},
	},
	FixedIters:   spawnCount,
	Blocking:     spawnBlocking,
	StateMachine: spawnStateMachine,
	Want:         spawnWant,
})

// spawnValue is what coroutine id adds to the checksum.
func spawnValue(id uint64) uint64 { return mix(id, 0x5157) }

func spawnWant(env *Env) uint64 { return spawnWantN(env.N) }

// spawnWarm reports whether the cell is pool=warm, rejecting other values.
func spawnWarm(env *Env) (bool, error) {
	switch p := env.Params["pool"]; p {
	case "cold":
		return false, nil
	case "warm":
		return true, nil
	default:
		return false, fmt.Errorf("spawn: pool=%q is not a pool state: use pool=cold or pool=warm", p)
	}
}

func spawnBlocking(rt Blocking, env *Env) (Outcome, error) {
	warm, err := spawnWarm(env)
	if err != nil {
		return Outcome{}, err
	}
	if warm {
		spawnRound(rt, 0, env.N)
	}
	env.ResetTimer()
	sum := spawnRound(rt, 0, env.N)
	env.StopTimer()
	return Outcome{Ops: int64(env.N), Checksum: sum}, nil
}

// spawnRound spawns n coroutines with ids base..base+n-1 and returns when
// all have finished, with the sum of their values (added, since on
// goroutine-multi they finish in any order).
func spawnRound(rt Blocking, base, n int) uint64 {
	var total atomic.Uint64
	var finished atomic.Int64
	done := rt.NewSignal()
	for i := 0; i < n; i++ {
		id := uint64(base + i)
		rt.Go(func() {
			total.Add(spawnValue(id))
			if finished.Add(1) == int64(n) {
				done.Fire()
			}
		})
	}
	done.Wait()
	return total.Load()
}

func spawnStateMachine(env *Env) (Outcome, error) {
	warm, err := spawnWarm(env)
	if err != nil {
		return Outcome{}, err
	}
	s := stackless.New()
	defer s.Close()
	var sum uint64
	var tasks []spawnTask
	if warm {
		tasks = make([]spawnTask, env.N)
		for i := range tasks {
			tasks[i] = spawnTask{id: uint64(i), sum: &sum}
			if err := s.Spawn(&tasks[i]); err != nil {
				return Outcome{}, err
			}
		}
		if err := s.Run(); err != nil {
			return Outcome{}, err
		}
		sum = 0
	}
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		var t *spawnTask
		if warm {
			t = &tasks[i] // finished: its fields are as spawnTask.Resume left them
		} else {
			t = &spawnTask{id: uint64(i), sum: &sum}
		}
		if err := s.Spawn(t); err != nil {
			return Outcome{}, err
		}
	}
	err = s.Run()
	env.StopTimer()
	return Outcome{Ops: int64(env.N), Checksum: sum}, err
}

// spawnTask is the spawned coroutine's body: one resume, then done. Its
// fields are not changed by running, so a finished task can be re-spawned
// as it is.
type spawnTask struct {
	stackless.Coro
	id  uint64
	sum *uint64
}

func (t *spawnTask) Resume(c *stackless.Context) stackless.Step {
	*t.sum += spawnValue(t.id)
	return c.Done()
}
