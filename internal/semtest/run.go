package semtest

import (
	"slices"
	"strings"
	"testing"
)

// Case is one semantic test: a program, the log it must produce and the kind
// of error the run must end with. Check, if set, makes further checks on the
// run's stats and error (called on the test goroutine, after the run).
type Case struct {
	Program *Program
	Want    []string
	WantErr ErrKind
	Check   func(t *testing.T, d Driver, stats Stats, err error)
}

// Outcome is what one run produced.
type Outcome struct {
	Log   []string
	Stats Stats
	Err   error
}

// Exec validates p and runs it on d.
func Exec(d Driver, p *Program) (Outcome, error) {
	if err := p.Validate(); err != nil {
		return Outcome{}, err
	}
	rec := NewRecorder(p)
	stats, err := d.Run(p, rec)
	return Outcome{Log: rec.Lines(), Stats: stats, Err: err}, nil
}

// Run runs every case in Cases on d, one subtest each. Call it from a test
// on the root test goroutine: drivers run scripts inside coroutines, where
// t.Fatal must not be called.
func Run(t *testing.T, d Driver) {
	for _, c := range Cases() {
		t.Run(c.Program.Name, func(t *testing.T) { RunCase(t, d, c) })
	}
}

// RunCase runs one case on d and reports every difference.
func RunCase(t *testing.T, d Driver, c Case) {
	t.Helper()
	var dir string
	if c.Program.IO != nil {
		dir = t.TempDir()
	}
	cleanup, skip, err := prepareIO(d, c.Program, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if skip != "" {
		t.Skip(skip)
	}
	out, err := Exec(d, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Kind(out.Err); got != c.WantErr {
		t.Errorf("%s: run error kind = %s (%v), want %s", d.Name(), got, out.Err, c.WantErr)
	}
	if !slices.Equal(out.Log, c.Want) {
		t.Errorf("%s: log differs\n%s", d.Name(), diff(out.Log, c.Want))
	}
	if c.Check != nil {
		c.Check(t, d, out.Stats, out.Err)
	}
}

// diff renders got and want side by side, marking differing lines.
func diff(got, want []string) string {
	var b strings.Builder
	n := max(len(got), len(want))
	b.WriteString("   got                                      | want\n")
	for i := 0; i < n; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		mark := "  "
		if g != w {
			mark = "! "
		}
		b.WriteString(mark + padRight(g, 41) + "| " + w + "\n")
	}
	return b.String()
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s + " "
	}
	return s + strings.Repeat(" ", n-len(s))
}
