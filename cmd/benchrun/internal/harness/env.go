package harness

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// The Go runtime reads a few environment variables at start-up that change
// how a program runs. A cell's child must run under the same runtime
// settings as every other row's, or the rows do not compare: a GOMEMLIMIT
// slows goroutine rows (the collector runs to honour it) while the rows
// that fence the collector ignore it. So benchrun controls them: it sets
// them in every child, alike for every row or per row as the row's policy
// says, and refuses to start when the user has set one (CheckEnv), rather
// than overriding the user's value without a word. What is in effect is
// written to the results file's config (MachineConfig: the runtime-env,
// godebug and gomaxprocs lines).
//
// Not in the list, on purpose:
//   - GOTRACEBACK only changes what a crashing child prints, not how it
//     runs, and a user may need it to diagnose a failed cell (the fiber crash
//     explanations suggest GOTRACEBACK=system): it passes through, the same
//     for every row, and is recorded;
//   - GOEXPERIMENT, GOAMD64, CGO_ENABLED act when the binary is built, not
//     when it runs; the build's values are recorded (BuildConfig);
//   - GOCOVERDIR only says where a coverage build writes its counters at
//     exit (go test -cover sets it).

// controlledEnv lists the runtime variables benchrun controls, with what
// they change and the value every child gets.
var controlledEnv = []struct {
	name, what string
	value      string // "" = unset in every child
	perRow     bool   // set per row, recorded in a config line of its own
}{
	{"GOGC", "sets the collector's pace", "100", false},
	{"GOMEMLIMIT", "sets a soft memory limit that makes the collector run during the timed region of some rows and not others", "off", false},
	{"GODEBUG", "changes runtime behaviour (benchrun sets it per row: " + rowGODEBUGs() + ")", "", true},
	{"GOMAXPROCS", "sets the number of Ps, which benchrun sets per row (1, or every core for goroutine-multi) and for the thread-pool cells of the stackful and stackless rows (1 + pool threads)", "", true},
	{"GORACE", "tunes the race detector of a -race build", "", false},
}

func rowGODEBUGs() string {
	var parts []string
	for _, r := range scenarios.Rows {
		if g := r.GODEBUG(); g != "" {
			parts = append(parts, string(r)+": "+g)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// CheckEnv returns an error naming each runtime variable set in environ
// (os.Environ() form) that benchrun controls, with what it would change and
// how to run without it. benchrun calls it before any cell runs and exits 2
// on an error.
func CheckEnv(environ []string) error {
	var set []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		for _, c := range controlledEnv {
			// The runtime reads an empty value as unset.
			if k == c.name && v != "" {
				set = append(set, fmt.Sprintf("%s=%s is set: it %s", k, v, c.what))
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	sort.Strings(set)
	var names, vars []string
	for _, s := range set {
		k, _, _ := strings.Cut(s, "=")
		vars = append(vars, k)
		names = append(names, "-u "+k)
	}
	return fmt.Errorf("%s;\nbenchrun controls the Go runtime's environment of every cell so that the rows compare, and records it in the results' %s and %s config lines: "+
		"unset %s to run (env %s benchrun [flags])",
		strings.Join(set, ";\n"), results.KeyRuntimeEnv, results.KeyGODEBUG, strings.Join(vars, " and "), strings.Join(names, " "))
}

// childEnv is the environment a cell's child runs with: base (the parent's
// when nil) without any variable benchrun controls, plus the controlled
// values: GOGC and GOMEMLIMIT alike for every row, GODEBUG per row, and
// GOMAXPROCS per row and scenario (Row.CellGOMAXPROCS: a pool cell gets
// 1 + scenarios.PoolThreads()). Whatever the user set is dropped here even
// if CheckEnv was not called, so no cell ever runs under a foreign setting.
func childEnv(base []string, c Cell) []string {
	row := c.Row
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		// The pool placement is benchrun's to give (runCell adds it to a
		// placed pool cell's environment), never the caller's to pass on.
		if !isControlled(kv) && !strings.HasPrefix(kv, scenarios.PoolCPUsEnv+"=") {
			env = append(env, kv)
		}
	}
	for _, c := range controlledEnv {
		if c.value != "" {
			env = append(env, c.name+"="+c.value)
		}
	}
	env = append(env, "GOMAXPROCS="+strconv.Itoa(row.CellGOMAXPROCS(c.Scenario)))
	if g := row.GODEBUG(); g != "" {
		env = append(env, "GODEBUG="+g)
	}
	return env
}

func isControlled(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	for _, c := range controlledEnv {
		if k == c.name {
			return true
		}
	}
	return false
}

// runtimeEnvValue is the runtime-env config line: the controlled variables
// every row shares, and GOTRACEBACK as it passes through.
func runtimeEnvValue() string {
	var parts []string
	for _, c := range controlledEnv {
		switch {
		case c.perRow:
		case c.value == "":
			parts = append(parts, c.name+"=(unset)")
		default:
			parts = append(parts, c.name+"="+c.value)
		}
	}
	tb := os.Getenv("GOTRACEBACK")
	if tb == "" {
		tb = "default"
	}
	parts = append(parts, "GOTRACEBACK="+tb)
	return strings.Join(parts, " ")
}

// godebugPerRow is the value of the godebug config line.
func godebugPerRow() map[string]string {
	out := map[string]string{}
	for _, r := range scenarios.Rows {
		g := r.GODEBUG()
		if g == "" {
			g = "default"
		}
		out[string(r)] = g
	}
	return out
}
