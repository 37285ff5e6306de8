package bodies

import (
	"testing"
	"time"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
	"github.com/corobench/corobench/scenarios/rows"
)

// TestSpawnLifecycleColdIsColdEveryTime: in the lifecycle's cold cell
// every timed spawn on stackful-asm runs on a stack nobody touched before
// (a fresh runtime's pool), so it takes at least one minor page fault;
// in the warm cell the pooled stack is resident and faults are rare. If the
// cold cell reused a runtime, all but its first lifecycle would be warm and
// its faults per spawn would fall far below one.
func TestSpawnLifecycleColdIsColdEveryTime(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.StackfulAsm)
	faults := func(pool string) float64 {
		sm, err := driver.Measure(Spawn, scenarios.StackfulAsm, map[string]string{"alive": "1", "pool": pool}, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return sm.Values[len(sm.Values)-1]
	}
	// The race detector's shadow memory adds faults to both cells (about
	// a quarter per spawn in the warm one), so warm is held to a fraction
	// of cold rather than to a fixed bound.
	cold, warm := faults("cold"), faults("warm")
	if cold < 1 {
		t.Errorf("alive=1 pool=cold on stackful-asm: %.3f minflt/spawn, want >= 1 (a fresh stack per lifecycle)", cold)
	}
	if warm > cold/3 {
		t.Errorf("alive=1 pool=warm on stackful-asm: %.3f minflt/spawn against cold's %.3f, want under a third (the pooled stack reused)", warm, cold)
	}
}

// TestSpawnLifecycleBodyDoesNotAllocate: the warm lifecycle's body spawns
// one function value made once, so on the rows whose warm spawn allocates
// nothing (stackful-asm: a record from the free list, the spare context;
// stackless: the one child struct re-spawned) allocs/spawn is zero. A
// closure made per spawn would read 1.
func TestSpawnLifecycleBodyDoesNotAllocate(t *testing.T) {
	for _, row := range []scenarios.Row{scenarios.StackfulAsm, scenarios.Stackless} {
		withRowGOMAXPROCS(t, row)
		sm, err := driver.Measure(Spawn, row, map[string]string{"alive": "1", "pool": "warm"}, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if allocs := sm.Values[1]; allocs > 0.01 {
			t.Errorf("alive=1 pool=warm on %s: %.3f allocs/spawn, want 0 (the body's function value is made once)", row, allocs)
		}
	}
}

// TestSpawnCellsAreDeclared: the lifecycle's cold cell is the only one
// needing a fresh runtime per iteration; it runs spawnColdRuns of them,
// the warm lifecycle grows N, the alive=10000 cells spawn spawnCount once.
func TestSpawnCellsAreDeclared(t *testing.T) {
	for _, c := range []struct {
		alive, pool string
		fresh       bool
		iters       int
	}{
		{"1", "cold", true, spawnColdRuns},
		{"1", "warm", false, 0},
		{"10000", "cold", false, spawnCount},
		{"10000", "warm", false, spawnCount},
	} {
		p := map[string]string{"alive": c.alive, "pool": c.pool}
		if Spawn.FreshRuntime(p) != c.fresh || Spawn.Iters(p) != c.iters {
			t.Errorf("alive=%s pool=%s: fresh %v iters %d, want %v %d", c.alive, c.pool, Spawn.FreshRuntime(p), Spawn.Iters(p), c.fresh, c.iters)
		}
		if err := Spawn.CheckCell(p, 0); err != nil {
			t.Error(err)
		}
	}
	if Spawn.CheckCell(map[string]string{"alive": "2", "pool": "cold"}, 0) == nil {
		t.Error("alive=2 accepted: alive is an enumeration of 1 and 10000")
	}
}

// countingRow counts the coroutines a body spawns, and how many of them it
// spawned while the env's clock ran (the timed ones).
type countingRow struct {
	scenarios.Blocking
	env           *scenarios.Env
	spawns, timed int
}

func (c *countingRow) Go(fn func()) {
	c.spawns++
	if c.env.Timing() {
		c.timed++
	}
	c.Blocking.Go(fn)
}

// TestSpawnWarmRunsItsWarmRoundsUntimed: alive=10000 pool=warm spawns
// spawnWarmRounds untimed rounds, then one timed round; pool=cold spawns
// only the timed one. Both still sum every coroutine of the timed round
// once.
func TestSpawnWarmRunsItsWarmRoundsUntimed(t *testing.T) {
	const n = 50
	for _, c := range []struct {
		pool   string
		spawns int
	}{{"cold", n}, {"warm", (spawnWarmRounds + 1) * n}} {
		env := &scenarios.Env{N: n, Params: map[string]string{"alive": "10000", "pool": c.pool}}
		row := &countingRow{Blocking: rows.Fibers(stackful.Asm, false), env: env}
		var out scenarios.Outcome
		runOnStackful(t, stackful.Asm, func() (err error) {
			out, err = spawnBlocking(row, env)
			return err
		})
		if row.spawns != c.spawns || row.timed != n {
			t.Errorf("pool=%s: %d spawns, %d of them timed; want %d, %d timed", c.pool, row.spawns, row.timed, c.spawns, n)
		}
		if out.Checksum != spawnWant(env) || out.Ops != n {
			t.Errorf("pool=%s: checksum %#x ops %d, want %#x %d", c.pool, out.Checksum, out.Ops, spawnWant(env), n)
		}
	}
}
