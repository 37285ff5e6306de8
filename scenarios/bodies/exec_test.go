package bodies

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corobench/corobench/internal/dnsserver"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// The test binary serves the scenarios' helper subcommands as benchrun does
// (scenarios.ServeHelpers): the exec scenario's children and the dns
// scenario's responder are this binary re-executed with the subcommand as
// its first argument. init runs before the testing flags are parsed, so a
// helper never runs tests.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case scenarios.ExecChildSubcommand:
			// syscall.Exit, not os.Exit: a race-enabled test binary
			// would otherwise sleep 1 s at exit (GORACE atexit_sleep_ms).
			syscall.Exit(scenarios.ExecChildMain(os.Args[2:], os.Stdout, os.Stderr))
		case scenarios.DNSResponderSubcommand:
			syscall.Exit(dnsserver.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	if exe, err := os.Executable(); err == nil {
		scenarios.ServeHelpers(exe)
	}
}

// withHelpers declares path as the helper program for the test's duration.
func withHelpers(t *testing.T, path string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	scenarios.ServeHelpers(path)
	t.Cleanup(func() { scenarios.ServeHelpers(exe) })
}

func TestExecChildMain(t *testing.T) {
	var out, errOut strings.Builder
	if code := scenarios.ExecChildMain([]string{"17"}, &out, &errOut); code != 0 || out.String() != "17\n" {
		t.Errorf("exec-child 17: exit %d, wrote %q (stderr %q)", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := scenarios.ExecChildMain(nil, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "exactly one argument") {
		t.Errorf("exec-child without its argument: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// TestExecChildIsThisBinary checks the child every row spawns: the running
// program re-executed with the subcommand, not a system binary.
func TestExecChildIsThisBinary(t *testing.T) {
	argv, err := execCommand()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if len(argv) != 2 || argv[0] != exe || argv[1] != scenarios.ExecChildSubcommand {
		t.Fatalf("exec child argv %q, want [%s %s]", argv, exe, scenarios.ExecChildSubcommand)
	}
	if got := execArgv(argv, 5); len(got) != 3 || got[2] != "5" || len(argv) != 2 {
		t.Fatalf("execArgv = %q (prefix now %q)", got, argv)
	}
}

// TestExecWithoutHelperFails: no helper program declared, or one whose path
// is gone, is a clear error on every row that gets that far, not a hang or
// a figure.
func TestExecWithoutHelperFails(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"", "scenarios.ServeHelpers"},
		{"/nonexistent/benchrun", "is missing"},
	} {
		withHelpers(t, c.path)
		for _, row := range scenarios.Rows {
			withRowGOMAXPROCS(t, row)
			_, err := driver.Measure(Exec, row, map[string]string{"c": "1"}, time.Millisecond)
			if _, ok := scenarios.IsNotSupported(err); ok {
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with helper %q: %v, want an error containing %q", row, c.path, err, c.want)
			}
		}
	}
}

// TestExecCheckRejectsWrongOutput: a child that printed the wrong line or
// exited non-zero fails the run.
func TestExecCheckRejectsWrongOutput(t *testing.T) {
	if _, err := execCheck(3, []byte("3\n"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := execCheck(3, []byte("4\n"), 0); err == nil {
		t.Error("wrong output accepted")
	}
	if _, err := execCheck(3, []byte("3\n"), 1); err == nil {
		t.Error("exit status 1 accepted")
	}
}
