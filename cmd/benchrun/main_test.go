package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corobench/corobench/scenarios"
)

func TestFlagErrorsExit2AndNameTheFix(t *testing.T) {
	cases := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"--scenario", "nope"}, []string{`unknown scenario "nope"`, "pingpong", "calibrate"}},
		{[]string{"--impl", "fibers"}, []string{`unknown row "fibers"`, "stackful-asm", "goroutine-multi"}},
		{[]string{"--scenario", "pingpong", "--param", "n=1,2"}, []string{`unknown parameter "n"`}},
		{[]string{"--param", "n"}, []string{"want key=v1,v2"}},
		{[]string{"--count", "0"}, []string{"--count 0", "at least 1"}},
		{[]string{"--timeout", "-1s"}, []string{"--timeout", "positive duration"}},
		{[]string{"--benchtime", "0s"}, []string{"--benchtime", "positive"}},
		{[]string{"--frobnicate"}, []string{"flag provided but not defined: -frobnicate"}},
		{[]string{"stray"}, []string{`unexpected argument "stray"`}},
		{[]string{"--out", ""}, []string{"--out is empty"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(c.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not clean on error: %q", stdout.String())
			}
		})
	}
}

func TestHelpAndList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, &stdout, &stderr); code != exitOK {
		t.Errorf("-h exit %d", code)
	}
	if !strings.Contains(stderr.String(), "--quick") && !strings.Contains(stderr.String(), "-quick") {
		t.Errorf("-h does not list flags:\n%s", stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--list"}, &stdout, &stderr); code != exitOK {
		t.Errorf("--list exit %d", code)
	}
	for _, w := range []string{"BenchmarkPingPong", "ns/switch", "goroutine-single"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("--list lacks %q:\n%s", w, stdout.String())
		}
	}
}

func TestCheckNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("goos: linux\nBenchmarkX/impl=a 10 oops ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", bad}, &stdout, &stderr); code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if !strings.Contains(stderr.String(), bad+":2") {
		t.Errorf("stderr does not name file:line: %s", stderr.String())
	}
	if code := run([]string{"check"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("check without files: exit %d", code)
	}
}

// TestReadmeShowsTheMarkDeclaration: each scenario's line in the README's
// scenario table ends with the disturbance mark's column as its
// declarations read (Scenario.NotJudged, and Scenario.CoreMarkOff for the
// core mark, which also judges a scenario the disturbance mark does not),
// so the README's list of scenarios not judged is the code's.
func TestReadmeShowsTheMarkDeclaration(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	if !strings.Contains(text, "| scenario | benchmark | measures | units | disturbance mark |") {
		t.Fatal("README.md's scenario table has no disturbance mark column")
	}
	for _, s := range scenarios.All {
		want := " judged"
		if s.NotJudged != "" {
			want = " not judged: " + s.NotJudged
		}
		if s.CoreMarkOff != "" {
			want += "; core mark: not judged: " + s.CoreMarkOff
		} else if s.NotJudged != "" {
			want += "; core mark: judged"
		}
		want += " |"
		found := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "| `"+s.Name+"` | "+s.Bench+" |") {
				found = true
				if !strings.HasSuffix(line, "|"+want) {
					t.Errorf("README.md's line for %s does not end with %q (its NotJudged)", s.Name, want)
				}
			}
		}
		if !found {
			t.Errorf("README.md has no scenario table line for %s", s.Name)
		}
	}
}

// TestReadmeListsScenariosAndRows keeps README.md in step with the code:
// every scenario and row has a line in its tables, and no table line names
// a scenario that does not exist.
func TestReadmeListsScenariosAndRows(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, s := range scenarios.All {
		if !strings.Contains(text, "| `"+s.Name+"` | "+s.Bench+" |") {
			t.Errorf("README.md has no scenario table line for %s (Benchmark%s)", s.Name, s.Bench)
		}
	}
	for _, r := range scenarios.RowNames() {
		if !strings.Contains(text, "| `"+r+"` |") {
			t.Errorf("README.md has no row table line for %s", r)
		}
	}
	_, section, _ := strings.Cut(text, "## Scenarios")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(rest, "`")
			if _, ok := scenarios.Lookup(name); !ok {
				t.Errorf("README.md lists scenario %q, which does not exist", name)
			}
		}
	}
	if !strings.Contains(text, "go test ./...") || !strings.Contains(text, "go run ./cmd/benchrun --scenario all") {
		t.Error("README.md lost its two set-up commands")
	}
}
