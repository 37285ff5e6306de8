package bodies

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// withCellGOMAXPROCS sets GOMAXPROCS as benchrun would for the child of
// scenario s on row (Row.CellGOMAXPROCS: a pool cell gets 1 + pool
// threads), for the duration of the test.
func withCellGOMAXPROCS(t *testing.T, s *scenarios.Scenario, row scenarios.Row) {
	old := runtime.GOMAXPROCS(row.CellGOMAXPROCS(s))
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// TestPoolScenariosRunOnPoolRows: with the Ps benchrun gives them, the
// offload and fileio bodies run on the stackful and stackless rows at
// their --quick sizes and produce the checksum (MeasureWith fails on a
// mismatch); with one P they say not supported, naming why.
func TestPoolScenariosRunOnPoolRows(t *testing.T) {
	for _, s := range []*scenarios.Scenario{Offload, FileIO} {
		for _, row := range []scenarios.Row{scenarios.StackfulAsm, scenarios.StackfulCoro, scenarios.Stackless} {
			if !row.PoolCell(s) {
				t.Errorf("%s on %s is not a pool cell", s.Name, row)
			}
			for _, params := range s.Combos(true, nil) {
				t.Run(s.BenchName(row, params), func(t *testing.T) {
					withCellGOMAXPROCS(t, s, row)
					if runtime.GOMAXPROCS(0) < 2 {
						t.Fatalf("pool cell planned with GOMAXPROCS=%d", runtime.GOMAXPROCS(0))
					}
					sm, err := driver.MeasureWith(s, row, params, driver.Options{Benchtime: time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					if sm.Iters < 1 || sm.Values[0] <= 0 {
						t.Errorf("sample %+v measured nothing", sm)
					}
					runtime.GOMAXPROCS(1)
					_, err = driver.MeasureWith(s, row, params, driver.Options{Benchtime: time.Millisecond})
					if reason, ok := scenarios.IsNotSupported(err); !ok || reason == "" {
						t.Errorf("with one P: %v, want not supported with a reason", err)
					}
				})
			}
		}
	}
}

// TestPoolPlacementReachesTheBodies: a pool cell runs with its pool placed
// where benchrun's variable says (here CPU 0, which every machine has),
// on a stackful and the stackless row, and a malformed value fails the
// cell with an error naming the variable, before anything runs.
func TestPoolPlacementReachesTheBodies(t *testing.T) {
	params := FileIO.Combos(true, nil)[0]
	for _, row := range []scenarios.Row{scenarios.StackfulAsm, scenarios.Stackless} {
		withCellGOMAXPROCS(t, FileIO, row)
		t.Setenv(scenarios.PoolCPUsEnv, "0")
		if _, err := driver.MeasureWith(FileIO, row, params, driver.Options{Benchtime: time.Millisecond}); err != nil {
			t.Errorf("%s placed on cpu0: %v", row, err)
		}
		t.Setenv(scenarios.PoolCPUsEnv, "zero")
		_, err := driver.MeasureWith(FileIO, row, params, driver.Options{Benchtime: time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), scenarios.PoolCPUsEnv) {
			t.Errorf("%s with a malformed placement: %v; want an error naming %s", row, err, scenarios.PoolCPUsEnv)
		}
	}
}
