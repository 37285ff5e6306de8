package main

import (
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
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
			sm, err := scenarios.MeasureWith(s, Row.Name, params, scenarios.Options{Benchtime: time.Millisecond})
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
			if sm.Values[0] <= 0 {
				t.Errorf("%s = %v", s.Metrics[0].Unit, sm.Values[0])
			}
			ran++
		})
	}
	if ran < 8 {
		t.Errorf("the lifo row ran %d scenarios (%d not supported); it claims at least 8", ran, unsupported)
	}
}
