package rows

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	_ "github.com/corobench/corobench/scenarios/bodies"
)

// TestPoolRows: the stackful and stackless rows declare PoolBound (and the
// stackful adapter implements it), the goroutine rows do not; a stackful
// row's runtime gets one pool thread per P beside the scheduler's in a
// pool scenario's cell, and the reactor's default elsewhere.
func TestPoolRows(t *testing.T) {
	for _, r := range scenarios.Rows {
		d, _ := r.Def()
		want := r == scenarios.StackfulAsm || r == scenarios.StackfulCoro || r == scenarios.Stackless
		if d.PoolBound != want {
			t.Errorf("%s: PoolBound = %v, want %v", r, d.PoolBound, want)
		}
	}
	if _, ok := Fibers(stackful.Asm, false).(scenarios.PoolBound); !ok {
		t.Error("the stackful adapter does not implement scenarios.PoolBound")
	}
	if _, ok := any(&goroutines{}).(scenarios.PoolBound); ok {
		t.Error("the goroutine adapter implements scenarios.PoolBound")
	}
	options := func(b stackful.Backend, scenario string) stackful.Options {
		t.Helper()
		opts, err := StackfulOptions(b, scenarios.CellInfo{Scenario: scenario})
		if err != nil {
			t.Fatalf("%v %s: %v", b, scenario, err)
		}
		return opts
	}
	for _, procs := range []int{2, 3} {
		old := runtime.GOMAXPROCS(procs)
		for _, b := range []stackful.Backend{stackful.Asm, stackful.Coro} {
			for _, name := range []string{"offload", "fileio"} {
				if got := options(b, name).Reactor.PoolThreads; got != procs-1 {
					t.Errorf("GOMAXPROCS=%d %v %s: PoolThreads %d, want %d", procs, b, name, got, procs-1)
				}
			}
			if got := options(b, "pingpong").Reactor.PoolThreads; got != 0 {
				t.Errorf("GOMAXPROCS=%d %v pingpong: PoolThreads %d, want 0 (the reactor's default)", procs, b, got)
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestPoolRowsPlacement: a stackful row's pool goes where benchrun's
// variable says, in pool scenarios only, and a value that is not a CPU
// list is an error naming the variable.
func TestPoolRowsPlacement(t *testing.T) {
	t.Setenv(scenarios.PoolCPUsEnv, "")
	if opts, err := StackfulOptions(stackful.Asm, scenarios.CellInfo{Scenario: "fileio"}); err != nil || opts.Reactor.PoolCPUs != nil {
		t.Errorf("unset: PoolCPUs %v, err %v; want none", opts.Reactor.PoolCPUs, err)
	}
	t.Setenv(scenarios.PoolCPUsEnv, "0,2-3")
	if opts, err := StackfulOptions(stackful.Asm, scenarios.CellInfo{Scenario: "fileio"}); err != nil || !slices.Equal(opts.Reactor.PoolCPUs, []int{0, 2, 3}) {
		t.Errorf("fileio: PoolCPUs %v, err %v; want [0 2 3]", opts.Reactor.PoolCPUs, err)
	}
	if opts, err := StackfulOptions(stackful.Asm, scenarios.CellInfo{Scenario: "pingpong"}); err != nil || opts.Reactor.PoolCPUs != nil {
		t.Errorf("pingpong: PoolCPUs %v, err %v; want none (no pool)", opts.Reactor.PoolCPUs, err)
	}
	t.Setenv(scenarios.PoolCPUsEnv, "cpu0")
	if _, err := StackfulOptions(stackful.Asm, scenarios.CellInfo{Scenario: "fileio"}); err == nil || !strings.Contains(err.Error(), scenarios.PoolCPUsEnv) {
		t.Errorf("a malformed list: err %v; want one naming %s", err, scenarios.PoolCPUsEnv)
	}
}
