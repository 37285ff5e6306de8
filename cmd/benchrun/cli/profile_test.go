package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileWritesAReadableProfile: benchrun profile measures one cell in
// process, prints its figures and writes CPU and allocation profiles that
// go tool pprof reads, holding samples of the scenario's body.
func TestProfileWritesAReadableProfile(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"profile", "-scenario", "yield", "-impl", "stackless", "-param", "n=16", "-benchtime", "200ms",
		"-o", cpu, "-memprofile", mem}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"Yield/impl=stackless/n=16", "ns/switch", "minflt/op", "go tool pprof -top " + cpu} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to read the profiles with: %v", err)
	}
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v (empty or missing)", f, err)
		}
		out, err := exec.Command(goTool, "tool", "pprof", "-raw", f).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof -raw %s: %v\n%s", f, err, out)
		}
		if f == cpu && !strings.Contains(string(out), "scenarios/bodies.") {
			t.Errorf("the CPU profile has no sample in the scenario's body:\n%.2000s", out)
		}
	}
}

// TestProfileRefusesBadInput: anything but exactly one valid cell exits 2
// naming the problem, before any measurement.
func TestProfileRefusesBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu.pprof")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name the cell"},
		{[]string{"-scenario", "nope", "-impl", "stackless"}, `unknown scenario "nope"`},
		{[]string{"-scenario", "yield", "-impl", "nope"}, `unknown row "nope"`},
		{[]string{"-scenario", "yield", "-impl", "stackless,goroutine-single"}, "one cell at a time"},
		{[]string{"-scenario", "yield,pingpong", "-impl", "stackless"}, "one cell at a time"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "n=2,16"}, "name one value"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "n=-5"}, "outside the valid range"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-param", "pool=warm"}, "pool"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "-benchtime", "0s"}, "positive duration"},
		{[]string{"-scenario", "yield", "-impl", "stackless", "stray"}, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"profile", "-o", out}, c.args...), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("benchrun profile %v: exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused profile wrote %s", out)
	}
}
