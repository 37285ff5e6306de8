package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLifeOfACellNamesRealFunctions keeps the package doc's walk in step
// with the code: every function it names (an identifier followed by a
// space or punctuation, written as Name or pkg.Name) is declared in
// cmd/benchrun or scenarios.
func TestLifeOfACellNamesRealFunctions(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, walk, ok := strings.Cut(string(doc), "# Life of a cell")
	if !ok {
		t.Fatal("doc.go has no \"Life of a cell\" section")
	}
	var src strings.Builder
	for _, dir := range []string{"../..", "../../../../scenarios"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			src.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"runMain", "parseFlags", "runBench", "Plan", "MachineConfig", "Run", "runCell",
		"selfCommand", "childArgs", "childEnv", "ChildMain", "MeasureWith", "runOnce", "RunBlocking",
		"Want", "readSched", "summarize", "resultFor", "writeReport", "Build", "Main"}
	for _, name := range names {
		if !strings.Contains(walk, name) {
			t.Errorf("the walk no longer names %s: update this list", name)
		}
		decl := regexp.MustCompile(`func (\([^)]*\) )?` + name + `\(|\t` + name + ` +func\(`)
		if !decl.MatchString(src.String()) {
			t.Errorf("the walk names %s, which is not declared in cmd/benchrun or scenarios", name)
		}
	}
}
