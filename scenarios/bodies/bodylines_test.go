package bodies

import (
	"bytes"
	"os"
	"testing"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodylines"
)

// TestBodyLinesFresh regenerates bodylines_gen.go in memory and fails if
// the committed file differs: the line counts cannot drift from the code.
func TestBodyLinesFresh(t *testing.T) {
	want, err := bodylines.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(bodylines.GeneratedFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		i := 0
		for i < len(gl) && i < len(wl) && bytes.Equal(gl[i], wl[i]) {
			i++
		}
		line := func(ls [][]byte) string {
			if i < len(ls) {
				return string(ls[i])
			}
			return "(end of file)"
		}
		t.Errorf("%s is stale: run `go generate ./scenarios/bodies` and commit the result; first difference at line %d:\ncommitted: %s\n   source: %s",
			bodylines.GeneratedFile, i+1, line(gl), line(wl))
	}
}

// TestBodyLinesCoverAll checks every registered scenario has a count for
// each body it defines, and none for a body it does not.
func TestBodyLinesCoverAll(t *testing.T) {
	for _, s := range scenarios.All {
		c, ok := BodyLines[s.Name]
		if !ok {
			t.Errorf("scenario %s has no BodyLines entry", s.Name)
			continue
		}
		if got, want := c.Blocking.Lines > 0, s.Blocking != nil; got != want {
			t.Errorf("%s: blocking body counted %d lines, but the body is defined: %v", s.Name, c.Blocking.Lines, want)
		}
		if got, want := c.StateMachine.Lines > 0, s.StateMachine != nil; got != want {
			t.Errorf("%s: state-machine body counted %d lines, but the body is defined: %v", s.Name, c.StateMachine.Lines, want)
		}
	}
	if len(BodyLines) != len(scenarios.All) {
		t.Errorf("BodyLines has %d entries for %d scenarios", len(BodyLines), len(scenarios.All))
	}
}
