package main

import (
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	_ "github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/driver"
)

func init() { scenarios.RegisterRow(Row) }

// TestEveryScenarioOnLifo runs every scenario at its smallest --quick size
// on the lifo row: each one it claims must produce the scenario's checksum
// (the driver fails the cell otherwise), and the rest must say "not
// supported" with a reason.
func TestEveryScenarioOnLifo(t *testing.T) {
	ran, unsupported := 0, 0
	for _, s := range scenarios.All {
		params := s.Combos(true, nil)[0]
		t.Run(s.BenchName(Row.Name, params), func(t *testing.T) {
			sm, err := driver.MeasureWith(s, Row.Name, params, driver.Options{Benchtime: time.Millisecond})
			if reason, ok := scenarios.IsNotSupported(err); ok {
				if reason == "" {
					t.Fatal("not supported without a reason")
				}
				unsupported++
				t.Logf("not supported: %s", reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Memory's RSS growth can round to 0 at small n; nothing is
			// negative or NaN.
			if v := sm.Values[0]; !(v >= 0) {
				t.Errorf("%s = %v", s.Metrics[0].Unit, v)
			}
			ran++
		})
	}
	if ran+unsupported == len(scenarios.All) && ran < 8 {
		t.Errorf("the lifo row ran %d scenarios (%d not supported); it claims at least 8", ran, unsupported)
	}
}
