package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/cmd/benchrun/internal/report"
	"github.com/corobench/corobench/scenarios"
)

// TestOneSourceOfTruth holds every list of scenarios and rows to the
// scenarios registry (scenarios.All, scenarios.Rows, scenarios.RowFacts):
// the CLI listing, the harness plan, the results reader's display order,
// the report's sections with their descriptions, and the README's tables
// must name the same scenarios and rows in the same order. Anything that
// keeps a list of its own fails here when it drifts.
func TestOneSourceOfTruth(t *testing.T) {
	var names, benches []string
	for _, s := range scenarios.All {
		names = append(names, s.Name)
		benches = append(benches, s.Bench)
	}
	rows := scenarios.RowNames()

	t.Run("rows have facts", func(t *testing.T) {
		colours := map[[3]uint8]scenarios.Row{}
		for _, r := range scenarios.Rows {
			d, ok := r.Def()
			if !ok || d.Doc == "" || d.Colour == ([3]uint8{}) {
				t.Errorf("row %s has no doc or colour in its RowDef", r)
			}
			if other, ok := colours[d.Colour]; ok {
				t.Errorf("rows %s and %s share a colour", other, r)
			}
			colours[d.Colour] = r
		}
	})

	t.Run("cli listing", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"--list"}, &stdout, &stderr); code != exitOK {
			t.Fatalf("--list exit %d: %s", code, stderr.String())
		}
		listed := regexp.MustCompile(`(?m)^  (\S+)\s+Benchmark`).FindAllStringSubmatch(stdout.String(), -1)
		var got []string
		for _, m := range listed {
			got = append(got, m[1])
		}
		if !slices.Equal(got, names) {
			t.Errorf("--list names %v, the registry %v", got, names)
		}
		if !strings.Contains(stdout.String(), "rows: "+strings.Join(rows, ", ")) {
			t.Errorf("--list rows differ from the registry %v:\n%s", rows, stdout.String())
		}
	})

	t.Run("harness plan", func(t *testing.T) {
		var got []string
		var gotRows []string
		for _, c := range harness.Plan(scenarios.All, scenarios.Rows, true, nil, 1) {
			if !slices.Contains(got, c.Scenario.Name) {
				got = append(got, c.Scenario.Name)
			}
			if !slices.Contains(gotRows, string(c.Row)) {
				gotRows = append(gotRows, string(c.Row))
			}
		}
		if !slices.Equal(got, names) || !slices.Equal(gotRows, rows) {
			t.Errorf("plan order %v × %v, the registry %v × %v", got, gotRows, names, rows)
		}
	})

	t.Run("results reader order", func(t *testing.T) {
		if !slices.Equal(cells.ScenarioOrder(), benches) || !slices.Equal(cells.RowOrder(), rows) {
			t.Errorf("cells orders %v × %v, the registry %v × %v", cells.ScenarioOrder(), cells.RowOrder(), benches, rows)
		}
	})

	t.Run("report sections", func(t *testing.T) {
		// A results file with the scenarios and rows written backwards: the
		// report must still list them in the registry's order, each with
		// its description.
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\n")
		for i := len(scenarios.All) - 1; i >= 0; i-- {
			s := scenarios.All[i]
			params := s.Combos(true, nil)[0]
			for j := len(scenarios.Rows) - 1; j >= 0; j-- {
				fmt.Fprintf(&b, "Benchmark%s 100 %d %s\n", s.BenchName(scenarios.Rows[j], params), 10+j, s.Metrics[0].Unit)
			}
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "run.txt")
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		index, err := report.Build([]string{file}, filepath.Join(dir, "report"))
		if err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		sections := regexp.MustCompile(`<section id="s-[^"]*">\s*<h2>([^<]*)<`).FindAllStringSubmatch(string(page), -1)
		var got []string
		for _, m := range sections {
			got = append(got, m[1])
		}
		if !slices.Equal(got, benches) {
			t.Errorf("report sections %v, the registry %v", got, benches)
		}
		for _, s := range scenarios.All {
			if !strings.Contains(string(page), htmlEscape(s.Summary)) {
				t.Errorf("report lacks %s's description %q", s.Bench, s.Summary)
			}
		}
	})

	t.Run("readme tables", func(t *testing.T) {
		readme, err := os.ReadFile("../../README.md")
		if err != nil {
			t.Fatal(err)
		}
		if got := tableNames(string(readme), "## Scenarios"); !slices.Equal(got, names) {
			t.Errorf("README.md's scenario table lists %v, the registry %v", got, names)
		}
		if got := tableNames(string(readme), "## Rows"); !slices.Equal(got, rows) {
			t.Errorf("README.md's row table lists %v, the registry %v", got, rows)
		}
	})
}

// tableNames returns the first column's `name`s of the table in README
// section heading.
func tableNames(readme, heading string) []string {
	_, section, _ := strings.Cut(readme, heading+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(rest, "`")
			out = append(out, name)
		}
	}
	return out
}

func htmlEscape(s string) string {
	var b bytes.Buffer
	template.HTMLEscape(&b, []byte(s))
	return b.String()
}
