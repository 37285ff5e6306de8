package rows

import (
	"runtime"
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
	for _, procs := range []int{2, 3} {
		old := runtime.GOMAXPROCS(procs)
		for _, b := range []stackful.Backend{stackful.Asm, stackful.Coro} {
			for _, name := range []string{"offload", "fileio"} {
				if got := StackfulOptions(b, scenarios.CellInfo{Scenario: name}).Reactor.PoolThreads; got != procs-1 {
					t.Errorf("GOMAXPROCS=%d %v %s: PoolThreads %d, want %d", procs, b, name, got, procs-1)
				}
			}
			if got := StackfulOptions(b, scenarios.CellInfo{Scenario: "pingpong"}).Reactor.PoolThreads; got != 0 {
				t.Errorf("GOMAXPROCS=%d %v pingpong: PoolThreads %d, want 0 (the reactor's default)", procs, b, got)
			}
		}
		runtime.GOMAXPROCS(old)
	}
}
