package bodies

import (
	"runtime"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
	_ "github.com/corobench/corobench/scenarios/rows"
)

// withRowGOMAXPROCS sets GOMAXPROCS as benchrun would for row's child
// process, for the duration of the test.
func withRowGOMAXPROCS(t *testing.T, row scenarios.Row) {
	old := runtime.GOMAXPROCS(row.GOMAXPROCS())
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// TestEveryScenarioOnEveryRow runs each scenario at its smallest size on
// every row and checks that every row that runs it produces the checksum
// (Measure fails on a mismatch) and sane figures; rows that cannot run it
// must say "not supported" with a reason.
func TestEveryScenarioOnEveryRow(t *testing.T) {
	for _, s := range scenarios.All {
		for _, row := range scenarios.Rows {
			for _, params := range s.Combos(true, nil) {
				name := s.BenchName(row, params)
				t.Run(name, func(t *testing.T) {
					withCellGOMAXPROCS(t, s, row)
					sm, err := driver.MeasureWith(s, row, params, driver.Options{Benchtime: time.Millisecond, Loadgen: testLoadgen})
					if reason, ok := scenarios.IsNotSupported(err); ok {
						if reason == "" {
							t.Fatal("not supported without a reason")
						}
						t.Skipf("not supported: %s", reason)
					}
					if err != nil {
						t.Fatal(err)
					}
					if sm.Iters < 1 || len(sm.Values) != len(s.Metrics) {
						t.Fatalf("sample %+v does not match metrics %v", sm, s.Metrics)
					}
					for i, v := range sm.Values {
						if v < 0 {
							t.Errorf("%s = %v, negative", s.Metrics[i].Unit, v)
						}
					}
					if s.Metrics[0].Kind == scenarios.TimePerOp && sm.Values[0] == 0 {
						t.Errorf("%s is 0: the timed region measured nothing", s.Metrics[0].Unit)
					}
				})
			}
		}
	}
}

func TestChecksumMismatchIsAnError(t *testing.T) {
	broken := *PingPong
	broken.Want = func(env *scenarios.Env) uint64 { return pingPongWant(env) + 1 }
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	_, err := driver.Measure(&broken, scenarios.GoroutineSingle, nil, time.Millisecond)
	if err == nil {
		t.Fatal("Measure accepted a wrong checksum")
	}
}

func TestUnknownParameterIsAnError(t *testing.T) {
	if _, err := driver.Measure(PingPong, scenarios.GoroutineSingle, map[string]string{"n": "1"}, time.Millisecond); err == nil {
		t.Fatal("Measure accepted a parameter pingpong does not have")
	}
}

func TestBenchNamesAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenarios.All {
		if seen[s.Bench] {
			t.Errorf("benchmark name %s used twice", s.Bench)
		}
		seen[s.Bench] = true
		if s.Doc == "" || s.Claim == "" || len(s.Metrics) == 0 || s.Want == nil {
			t.Errorf("scenario %s lacks a doc, claim, metric or checksum", s.Name)
		}
	}
}

func TestCombosCartesianInOrder(t *testing.T) {
	s := &scenarios.Scenario{Params: []scenarios.Param{{Key: "a", Full: []string{"1", "2"}}, {Key: "b", Full: []string{"x"}, Quick: []string{"y"}}}}
	got := s.Combos(true, map[string][]string{"a": {"3"}})
	if len(got) != 1 || got[0]["a"] != "3" || got[0]["b"] != "y" {
		t.Fatalf("Combos = %v", got)
	}
	got = s.Combos(false, nil)
	if len(got) != 2 || got[0]["a"] != "1" || got[1]["a"] != "2" || got[1]["b"] != "x" {
		t.Fatalf("Combos = %v", got)
	}
}
