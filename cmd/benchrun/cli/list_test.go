package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/corobench/corobench/scenarios"
)

// TestListGrids: a scenario's grids are listed in its parameters' order,
// each with the settings it admits, then the union the run has, full and
// --quick; a scenario without grids lists none.
func TestListGrids(t *testing.T) {
	s := &scenarios.Scenario{
		Name: "fake",
		Params: []scenarios.Param{
			{Key: "a", Full: []string{"1", "2", "3"}, Quick: []string{"1", "2"}},
			{Key: "b", Full: []string{"x", "y"}, Quick: []string{"x"}},
		},
		// The map's order must not matter: a grid naming both keys lists
		// them as the parameters come.
		Grids: []scenarios.Grid{{"a": {"1"}}, {"b": {"y"}}, {"b": {"x"}, "a": {"3"}}},
	}
	var out bytes.Buffer
	listGrids(&out, s)
	want := `      grid a=1 × every b: 2 settings (quick: 1)
      grid b=y × every a: 3 settings (quick: 0)
      grid a=3 b=x: 1 setting (quick: 0)
      runs the grids' union: 5 settings (quick: 1) of the product's 6 (quick: 2); a --param override of a key lifts the grids' restriction of it
`
	if out.String() != want {
		t.Errorf("listGrids:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	s.Grids = nil
	if listGrids(&out, s); out.Len() != 0 {
		t.Errorf("a scenario without grids lists %q", out.String())
	}
}

// TestListShowsEveryScenariosGrids: --list shows, for every registered
// scenario with grids, as many grid lines as it has and the number of
// settings its runs plan.
func TestListShowsEveryScenariosGrids(t *testing.T) {
	var out bytes.Buffer
	listScenarios(&out)
	text := out.String()
	withGrids := 0
	for _, s := range scenarios.All {
		if len(s.Grids) == 0 {
			continue
		}
		withGrids++
		// The scenario's block: its line and the indented lines under it.
		var block string
		in := false
		for _, line := range strings.Split(text, "\n") {
			switch {
			case strings.HasPrefix(line, "  "+s.Name+" "):
				in = true
			case in && !strings.HasPrefix(line, "      "):
				in = false
			}
			if in {
				block += line + "\n"
			}
		}
		if block == "" {
			t.Fatalf("--list lacks scenario %s", s.Name)
		}
		if n := strings.Count(block, "\n      grid "); n != len(s.Grids) {
			t.Errorf("%s: %d grid lines, want %d:\n%s", s.Name, n, len(s.Grids), block)
		}
		union := fmt.Sprintf("runs the grids' union: %d settings (quick: %d)", len(s.Combos(false, nil)), len(s.Combos(true, nil)))
		if !strings.Contains(block, union) {
			t.Errorf("%s: the listing lacks %q:\n%s", s.Name, union, block)
		}
	}
	if withGrids == 0 {
		t.Skip("no registered scenario has grids")
	}
}

// TestListShowsTheMarkDeclaration: --list says "not judged" under every
// scenario that declares it (Scenario.NotJudged for the disturbance mark,
// Scenario.CoreMarkOff for the core mark), with its reason, and under no
// other.
func TestListShowsTheMarkDeclaration(t *testing.T) {
	var out bytes.Buffer
	listScenarios(&out)
	blocks := map[string]string{}
	var name string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  "); ok && !strings.HasPrefix(rest, " ") {
			name, _, _ = strings.Cut(rest, " ")
		}
		blocks[name] += line + "\n"
	}
	for _, m := range []struct {
		prefix string
		field  func(*scenarios.Scenario) string
	}{
		{"      not judged by the disturbance mark: ", func(s *scenarios.Scenario) string { return s.NotJudged }},
		{"      not judged by the core mark: ", func(s *scenarios.Scenario) string { return s.CoreMarkOff }},
	} {
		declared := 0
		for _, s := range scenarios.All {
			got := strings.Contains(blocks[s.Name], m.prefix)
			if why := m.field(s); why != "" {
				declared++
				if !strings.Contains(blocks[s.Name], m.prefix+why+"\n") {
					t.Errorf("%s declares %q; its --list entry lacks it:\n%s", s.Name, why, blocks[s.Name])
				}
			} else if got {
				t.Errorf("%s is judged, but --list says %q:\n%s", s.Name, m.prefix, blocks[s.Name])
			}
		}
		if declared == 0 {
			t.Errorf("no registered scenario declares %q: the test checks nothing", m.prefix)
		}
	}
}
