package scenarios_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// combosText renders combos in order, FormatParams form, for comparison.
func combosText(cs []map[string]string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = scenarios.FormatParams(c)
	}
	return strings.Join(parts, " ")
}

// TestGridsNarrowTheProduct: a scenario with Grids runs the union of its
// grids, in the product's order; --quick values narrow the grids' values;
// an override lifts the grids' restriction of its key.
func TestGridsNarrowTheProduct(t *testing.T) {
	s := &scenarios.Scenario{
		Name: "grid",
		Params: []scenarios.Param{
			{Key: "c", Full: []string{"1", "64", "1024"}, Quick: []string{"64", "1024"}},
			{Key: "rate", Full: []string{"10", "20", "40"}, Quick: []string{"10", "40"}},
		},
		Grids: []scenarios.Grid{{"c": {"64"}}, {"rate": {"20"}}},
	}
	for _, tc := range []struct {
		name      string
		quick     bool
		overrides map[string][]string
		want      string
	}{
		{"full", false, nil, "c=1,rate=20 c=64,rate=10 c=64,rate=20 c=64,rate=40 c=1024,rate=20"},
		// rate=20 is not a quick value: the second grid admits nothing.
		{"quick", true, nil, "c=64,rate=10 c=64,rate=40"},
		// c=128 lifts the first grid's c=64: rate is swept at c=128.
		{"override c", false, map[string][]string{"c": {"128"}}, "c=128,rate=10 c=128,rate=20 c=128,rate=40"},
		// rate=10 lifts the second grid's rate=20: c is swept at rate=10.
		{"override rate", false, map[string][]string{"rate": {"10"}}, "c=1,rate=10 c=64,rate=10 c=1024,rate=10"},
		{"override both", false, map[string][]string{"rate": {"10", "20"}, "c": {"1"}}, "c=1,rate=10 c=1,rate=20"},
	} {
		if got := combosText(s.Combos(tc.quick, tc.overrides)); got != tc.want {
			t.Errorf("%s: combos %q, want %q", tc.name, got, tc.want)
		}
	}
	s.Grids = nil
	if got := len(s.Combos(false, nil)); got != 9 {
		t.Errorf("without grids: %d combos, want the full product of 9", got)
	}
}

// TestRegisterRefusesBadGrids: a grid naming a parameter the scenario does
// not have, a value outside its full sweep, or nothing at all is refused
// by name at registration.
func TestRegisterRefusesBadGrids(t *testing.T) {
	for _, tc := range []struct {
		grid scenarios.Grid
		want string
	}{
		{scenarios.Grid{"n": {"1"}}, `names parameter "n"`},
		{scenarios.Grid{"c": {"3"}}, "c=3, which is not among its full values"},
		{scenarios.Grid{}, "restricts nothing"},
	} {
		func() {
			defer func() {
				if p := fmt.Sprint(recover()); !strings.Contains(p, tc.want) {
					t.Errorf("grid %v: panic %q, want one containing %q", tc.grid, p, tc.want)
				}
			}()
			s := *bodies.Echo
			s.Grids = []scenarios.Grid{tc.grid}
			scenarios.Register(&s)
		}()
	}
}

// TestRegisterRefusesBadLoad: a load sweep naming a parameter or metric
// the scenario lacks, or a share outside (0, 1], is refused by name.
func TestRegisterRefusesBadLoad(t *testing.T) {
	for _, tc := range []struct {
		edit func(l *scenarios.LoadSweep)
		want string
	}{
		{func(l *scenarios.LoadSweep) { l.Key = "n" }, `Load.Key "n"`},
		{func(l *scenarios.LoadSweep) { l.Achieved = "ops/s" }, `Load.Achieved "ops/s"`},
		{func(l *scenarios.LoadSweep) { l.Share = 1.5 }, "Share in (0, 1]"},
	} {
		func() {
			defer func() {
				if p := fmt.Sprint(recover()); !strings.Contains(p, tc.want) {
					t.Errorf("panic %q, want one containing %q", p, tc.want)
				}
			}()
			s := *bodies.Echo
			l := *s.Load
			tc.edit(&l)
			s.Load = &l
			scenarios.Register(&s)
		}()
	}
}
