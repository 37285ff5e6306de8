package scenarios

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/corobench/corobench/internal/dnsserver"
)

// Helper processes: the exec scenario spawns a trivial child, and the dns
// scenario resolves against a responder in a process of its own. Both are
// this program re-executed with a hidden subcommand, so a figure measures
// a Go binary the user has (benchrun), not whatever the system ships.
//
// The program says it serves them with ServeHelpers (benchrun's cli does,
// as it initialises; a test binary does from an init function of its
// own). This is process-wide rather than a field of Env, as Env.Loadgen
// is, because the dns responder's address must be known before a row's
// runtime is created (a stackful row's reactor takes it as an option),
// and a row creates its runtime before the body, which gets Env, runs.

const (
	// ExecChildSubcommand is the hidden subcommand the exec scenario's
	// children run: ExecChildMain.
	ExecChildSubcommand = "exec-child"
	// DNSResponderSubcommand is the hidden subcommand that runs the dns
	// scenario's responder (dnsserver.Main).
	DNSResponderSubcommand = "dns-responder"
)

var helpers struct {
	mu   sync.Mutex
	path string
	dns  *dnsserver.Process
	err  error // the responder's start failure, kept
}

// ServeHelpers declares that the program at path (os.Executable() for
// benchrun) runs ExecChildMain for ExecChildSubcommand and dnsserver.Main
// for DNSResponderSubcommand when given them as its first argument.
func ServeHelpers(path string) {
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	helpers.path = path
}

// HelperCommand returns the argv (argv[0] the program's path) that runs
// the hidden subcommand, or an error naming what is missing.
func HelperCommand(subcommand string) ([]string, error) {
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	return helperCommand(subcommand)
}

// helperCommand is HelperCommand with helpers.mu held.
func helperCommand(subcommand string) ([]string, error) {
	if helpers.path == "" {
		return nil, errors.New("no helper program is declared (scenarios.ServeHelpers): benchrun declares itself; " +
			"a test binary must call ServeHelpers and dispatch the " + ExecChildSubcommand + " and " + DNSResponderSubcommand + " subcommands itself")
	}
	if _, err := os.Stat(helpers.path); err != nil {
		return nil, fmt.Errorf("the helper program (scenarios.ServeHelpers) is missing: %w", err)
	}
	return []string{helpers.path, subcommand}, nil
}

// DNSResponder returns the address ("127.0.0.1:port") of the dns
// scenario's responder, starting it (HelperCommand(DNSResponderSubcommand))
// on the first call; later calls wait for that start. It lives until this
// process exits (its stdin is a pipe from us: our exit ends it). A failure
// to start is kept and returned to every later call.
func DNSResponder() (string, error) {
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	switch {
	case helpers.dns != nil:
		return helpers.dns.Addr(), nil
	case helpers.err != nil:
		return "", helpers.err
	}
	argv, err := helperCommand(DNSResponderSubcommand)
	if err != nil {
		return "", fmt.Errorf("dns responder: %w", err)
	}
	if helpers.dns, err = dnsserver.Start(argv); err != nil {
		helpers.err = fmt.Errorf("dns responder: %w", err)
		return "", helpers.err
	}
	return helpers.dns.Addr(), nil
}

// ExecChildMain is the exec scenario's trivial child: it writes its one
// argument and a newline to stdout and returns 0, the work of echo(1), so
// the exec figure is a Go binary's start, output and exit.
func ExecChildMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "%s: takes exactly one argument (the line to write), got %q\n", ExecChildSubcommand, args)
		return 2
	}
	if _, err := io.WriteString(stdout, args[0]+"\n"); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", ExecChildSubcommand, err)
		return 1
	}
	return 0
}
