package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// TestSampleMatchesScenarios keeps the committed sample (results/sample/
// and the report built from it in reports/sample/) in step with the code:
// every cell of a full run of today's scenarios is in the sample, as a
// figure or a note, and the sample has no cell the code no longer defines.
// When it fails, regenerate the sample as README.md says.
func TestSampleMatchesScenarios(t *testing.T) {
	files, err := filepath.Glob("../../results/sample/*.txt")
	if err != nil || len(files) != 1 {
		t.Fatalf("want exactly one results file in results/sample/, found %v (%v)", files, err)
	}
	f, err := results.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range f.Results {
		have[r.Name.String()] = true
	}
	for _, n := range f.Notes {
		have[n.Name] = true
	}
	var want []string
	for _, s := range scenarios.All {
		for _, params := range s.Combos(false, nil) {
			for _, row := range scenarios.Rows {
				want = append(want, s.BenchName(row, params))
			}
		}
	}
	for _, name := range want {
		if !have[name] {
			t.Errorf("the sample has no cell %s: regenerate it (README.md, \"The sample\")", name)
		}
	}
	for name := range have {
		if !slices.Contains(want, name) {
			t.Errorf("the sample has cell %s, which today's scenarios do not define: regenerate it", name)
		}
	}
	page, err := os.ReadFile("../../reports/sample/index.html")
	if err != nil {
		t.Fatalf("no sample report: %v", err)
	}
	if base := filepath.Base(files[0]); !strings.Contains(string(page), base) {
		t.Errorf("reports/sample/index.html does not link the sample results file %s", base)
	}
}
