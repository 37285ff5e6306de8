package harness

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// modulePath is corobench's module path, read off this package's import
// path so that it needs no build information.
var modulePath = strings.TrimSuffix(reflect.TypeOf(Cell{}).PkgPath(), "/cmd/benchrun/internal/harness")

// ModuleRoot returns the root of the corobench checkout that contains dir
// (the directory holding corobench's go.mod), or "" when dir is not inside
// one.
func ModuleRoot(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if declaresModule(filepath.Join(dir, "go.mod"), modulePath) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func declaresModule(gomod, path string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == path
		}
	}
	return false
}

// DefaultDir is the default of an output directory flag (results, reports):
// name at the root of the corobench checkout the working directory is in,
// so that a run from a subdirectory writes where a run from the root does;
// outside a checkout, name in the working directory.
func DefaultDir(name string) string {
	wd, err := os.Getwd()
	if err != nil {
		return name
	}
	root := ModuleRoot(wd)
	if root == "" || root == wd {
		return name
	}
	if rel, err := filepath.Rel(wd, filepath.Join(root, name)); err == nil {
		return rel
	}
	return filepath.Join(root, name)
}
