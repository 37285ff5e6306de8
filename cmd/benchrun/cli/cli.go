// Package cli is benchrun's command line: the benchmark run and its
// subcommands, as one table. cmd/benchrun's main only calls Main; a runtime
// engineer's own binary does the same after registering a row
// (scenarios.RegisterRow), and gets the whole of benchrun with that row in
// every run, report and comparison:
//
//	func main() {
//		scenarios.RegisterRow(scenarios.RowDef{Name: "my-runtime", ...})
//		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
//	}
//
// Each cell runs in a child process that is this same binary (its hidden
// "cell" subcommand), so a row registered in main before
// Main is there in the children too. See examples/lifo for a whole row.
//
// Main, the exit statuses and the subcommands' behaviour are the stable
// API; everything under cmd/benchrun/internal may change.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/scenarios"
	// The built-in scenarios and rows: benchrun measures them.
	_ "github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/loadgen"
	_ "github.com/corobench/corobench/scenarios/rows"
)

// Exit statuses.
const (
	ExitOK        = 0
	ExitFailed    = 1 // a cell failed, or the run could not be written
	ExitUsage     = 2 // bad flags or arguments
	ExitInterrupt = 130
)

// subcommand is one entry of benchrun's command table: dispatch, -h text
// and the error for a stray argument all come from this one list.
type subcommand struct {
	name   string
	usage  string // argument synopsis, after "benchrun <name>"
	doc    string // one line for -h
	hidden bool   // internal: the harness re-executes the binary with it
	run    func(args []string, stdout, stderr io.Writer) int
}

// subcommands is the table (filled by init: the entries' functions read
// it back for their usage lines). The run itself (no subcommand) is runMain.
var subcommands []subcommand

func init() {
	subcommands = []subcommand{
		{name: "report", usage: "[-o DIR] FILE...", doc: "rebuild a report from results files", run: runReport},
		{name: "compare", usage: "[--force] OLD NEW", doc: "compare two runs, benchstat-style", run: runCompare},
		{name: "check", usage: "FILE...", doc: "validate results files (exit 1 naming file:line if not)", run: runCheck},
		{name: "profile", usage: "-scenario S -impl ROW [-param K=V]... [-benchtime D] [-wall D] [-o FILE] [-memprofile FILE]", doc: "run one cell in this process with a CPU profile of its timed region only", run: runProfile},
		{name: harness.ChildSubcommand, usage: "-scenario S -impl ROW -params K=V,...", doc: "measure one cell (the harness's child process)", hidden: true, run: harness.ChildMain},
		{name: harness.LoadgenSubcommand, usage: "FLAGS", doc: "the echo scenario's load generator process", hidden: true, run: loadgen.Main},
		{name: scenarios.ExecChildSubcommand, usage: "LINE", doc: "the exec scenario's trivial child: write LINE and exit (helpers.go)", hidden: true, run: runExecChild},
		{name: scenarios.DNSResponderSubcommand, doc: "the dns scenario's responder process (helpers.go)", hidden: true, run: runDNSResponder},
	}
}

// Main runs benchrun with args (without the program name) and returns its
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		for _, c := range subcommands {
			if args[0] == c.name {
				return c.run(args[1:], stdout, stderr)
			}
		}
	}
	return runMain(args, stdout, stderr)
}

// visibleNames lists the subcommands -h shows.
func visibleNames() []string {
	var names []string
	for _, c := range subcommands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "benchrun runs corobench's scenarios on every row and writes results/<runstamp>.txt\n"+
		"(Go benchmark format: benchstat -col /impl FILE).\n\nusage:\n")
	lines := [][2]string{{"benchrun [flags]", "run scenarios"}}
	for _, c := range subcommands {
		if !c.hidden {
			lines = append(lines, [2]string{"benchrun " + c.name + " " + c.usage, c.doc})
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s  %s\n", width, l[0], l[1])
	}
	fmt.Fprintf(w, "\nflags:\n")
	fs.PrintDefaults()
}

// usageLine is the synopsis of subcommand name, for its own errors.
// subFlags is subcommand name's flag set: its usage is the table's usage
// line, what (a line on what it does, or "" for none), and the flags. The
// twin steps of every subcommand but the run itself (its flags live in
// run.go), so -h and flag errors read alike.
func subFlags(name, what string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("benchrun "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageLine(name))
		if what != "" {
			fmt.Fprintln(stderr, what)
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseSub parses a subcommand's arguments. When done is true the caller
// returns code: ExitOK after -h, ExitUsage after a flag error (the flag
// package has already said what was wrong).
func parseSub(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, true
		}
		return ExitUsage, true
	}
	return ExitOK, false
}

func usageLine(name string) string {
	for _, c := range subcommands {
		if c.name == name {
			return strings.TrimSpace("usage: benchrun " + c.name + " " + c.usage)
		}
	}
	return "usage: benchrun " + name
}
