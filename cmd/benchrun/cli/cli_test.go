package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/corobench/corobench/scenarios"
)

func TestQuickDefaults(t *testing.T) {
	var stderr bytes.Buffer
	cfg, err := parseFlags([]string{"--quick"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.count != 6 || cfg.benchtime.Milliseconds() != 10 {
		t.Errorf("--quick gave count %d benchtime %v", cfg.count, cfg.benchtime)
	}
	cfg, err = parseFlags([]string{"--quick", "--count", "2"}, &stderr)
	if err != nil || cfg.count != 2 {
		t.Errorf("--count not honoured with --quick: %v %v", cfg, err)
	}
}

// TestSubcommandTableIsTheOneList: -h, the stray-argument error and
// dispatch all come from the subcommand table, hidden entries stay out of
// the help, and every visible entry dispatches to its own function.
func TestSubcommandTableIsTheOneList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-h"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("-h exit %d", code)
	}
	help := stderr.String()
	stderr.Reset()
	Main([]string{"stray"}, &stdout, &stderr)
	stray := stderr.String()
	for _, c := range subcommands {
		line := "benchrun " + c.name + " "
		if c.hidden {
			if strings.Contains(help, line) {
				t.Errorf("-h shows the hidden subcommand %s", c.name)
			}
			continue
		}
		if !strings.Contains(help, line+c.usage) || !strings.Contains(help, c.doc) {
			t.Errorf("-h lacks %s's line:\n%s", c.name, help)
		}
		if !strings.Contains(stray, c.name) {
			t.Errorf("the stray-argument error does not name %s: %s", c.name, stray)
		}
		// With no arguments each visible subcommand answers with its own
		// usage line, exit 2: proof that dispatch reached it.
		stderr.Reset()
		if code := Main([]string{c.name}, &stdout, &stderr); code != ExitUsage {
			t.Errorf("benchrun %s without arguments: exit %d, want %d", c.name, code, ExitUsage)
		}
		if !strings.Contains(stderr.String(), "benchrun "+c.name) {
			t.Errorf("benchrun %s without arguments says %q, not naming itself", c.name, stderr.String())
		}
	}
}

// TestBadParamsExitBeforeAnyCell: a bad --param value, a size the machine
// cannot hold, and a repeated name exit 2 with a message naming the valid
// range or the fix, before any cell runs: no results directory is made.
func TestBadParamsExitBeforeAnyCell(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--scenario", "yield", "--param", "n=-5"}, []string{"n=-5", "valid range 1..16777216", "fix:"}},
		{[]string{"--scenario", "yield", "--param", "n=abc"}, []string{"not an integer", "1..16777216"}},
		{[]string{"--scenario", "yield", "--param", "n=99999999999"}, []string{"outside the valid range"}},
		{[]string{"--scenario", "handoff", "--param", "via=sideways"}, []string{"direct, scheduler"}},
		{[]string{"--scenario", "echo", "--param", "c=0"}, []string{"c=0", "1..16384"}},
		{[]string{"--scenario", "switch,switch"}, []string{`"switch" twice`}},
		{[]string{"--scenario", "pingpong", "--impl", "stackless,stackless"}, []string{`"stackless" twice`}},
		{[]string{"--scenario", "yield", "--param", "n=2,2"}, []string{"given twice"}},
	}
	if avail := memAvailable(); avail > 0 && avail < 10_000_000*6<<10 {
		cases = append(cases, struct {
			args []string
			want []string
		}{[]string{"--scenario", "memory", "--param", "n=10000000"}, []string{"needs about", "available", "fits"}})
	}
	for _, c := range cases {
		out := t.TempDir() + "/res"
		var stdout, stderr bytes.Buffer
		args := append(c.args, "--out", out, "--reports", out+"-rep", "--count", "1")
		if code := Main(args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %s", c.args, code, ExitUsage, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%v: message %q lacks %q", c.args, stderr.String(), w)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: %s exists (a cell ran or a results file was started): %v", c.args, out, err)
		}
	}
}

// TestMemoryCheck: the memory estimate is compared with the available
// memory given, independent of this machine's.
func TestMemoryCheck(t *testing.T) {
	mem, _ := scenarios.Lookup("memory")
	over := map[string][]string{"n": {"1000000"}}
	if err := checkCells([]*scenarios.Scenario{mem}, false, over, 1<<30); err == nil || !strings.Contains(err.Error(), "1.0 GiB available") {
		t.Errorf("1M coroutines in 1 GiB: %v", err)
	}
	if err := checkCells([]*scenarios.Scenario{mem}, false, over, 16<<30); err != nil {
		t.Errorf("1M coroutines in 16 GiB refused: %v", err)
	}
	if err := checkCells([]*scenarios.Scenario{mem}, false, over, 0); err != nil {
		t.Errorf("unknown memory should not refuse: %v", err)
	}
}

// TestOneReaderOneVerdict: check, report and compare accept and refuse the
// same files for the same reason: plain go test -bench output and binary
// data are refused by all three (exit 1) naming why; a torn last line is a
// warning naming file:line for all three, which go on with the cells before
// it (exit 0).
func TestOneReaderOneVerdict(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../internal/compare/testdata/old.txt")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.txt", []byte("goos: linux\nBenchmarkFoo-2 \t1000\t 12.5 ns/op\nPASS\n"))
	binary := write("binary.txt", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...))
	cut := bytes.Index(good, []byte("12.2 ns/switch")) + 4
	torn := write("torn.txt", good[:cut])
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		return code, stderr.String()
	}
	for _, c := range []struct {
		file, want string
		code       int
	}{
		{plain, "has no /impl=<row> part", ExitFailed},
		{binary, "not a results file", ExitFailed},
		{torn, "torn.txt:8: file is truncated", ExitOK},
	} {
		for _, args := range [][]string{
			{"check", c.file},
			{"report", "-o", dir + "/rep", c.file},
			{"compare", c.file, c.file},
		} {
			code, msg := run(args...)
			if code != c.code || !strings.Contains(msg, c.want) {
				t.Errorf("benchrun %v: exit %d, stderr %q; want exit %d and %q", args, code, msg, c.code, c.want)
			}
		}
	}
	// An interrupted run: check says so, compare warns.
	cutRun := write("cut.txt", append(good, "# corobench:incomplete interrupted by SIGINT after 3 of 10 cells\n"...))
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"check", cutRun}, &stdout, &stderr); code != ExitOK || !strings.Contains(stdout.String(), "incomplete: interrupted by SIGINT after 3 of 10 cells") {
		t.Errorf("check of an interrupted run: exit %d, %q", code, stdout.String())
	}
	if code, msg := run("compare", cutRun, cutRun); code != ExitOK || !strings.Contains(msg, "old run is incomplete (interrupted by SIGINT") {
		t.Errorf("compare of an interrupted run: exit %d, %q", code, msg)
	}
	code, msg := run("check", "-h")
	if code != ExitOK || !strings.Contains(msg, "benchrun check FILE") || strings.Contains(msg, "open") {
		t.Errorf("check -h: exit %d, %q", code, msg)
	}
}

// TestReportDefaultDirIsAtTheModuleRoot: `benchrun report FILE` run from a
// subdirectory of a checkout writes under the checkout's reports/, as a
// run does, not under the working directory.
func TestReportDefaultDirIsAtTheModuleRoot(t *testing.T) {
	good, err := os.ReadFile("../internal/compare/testdata/old.txt")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(root+"/go.mod", []byte("module github.com/corobench/corobench\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root+"/sub/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/run1.txt", good, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root + "/sub/dir")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", "../../run1.txt"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(root + "/reports/run1/index.html"); err != nil {
		t.Errorf("no report under the root's reports/: %v (stdout %s)", err, stdout.String())
	}
	if _, err := os.Stat("reports"); err == nil {
		t.Error("report wrote reports/ in the working directory")
	}
}
