package harness

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// ChildSubcommand is the hidden benchrun subcommand that runs one cell.
const ChildSubcommand = "cell"

// cellErrorPrefix starts the line on which a failed child states its error,
// so the parent can tell it from whatever else the child printed.
const cellErrorPrefix = "benchrun cell error: "

// childReport is the one JSON line a child writes to stdout.
type childReport struct {
	Iters       int       `json:"iters,omitempty"`
	Values      []float64 `json:"values,omitempty"`
	Unsupported string    `json:"unsupported,omitempty"`
}

// childArgs are the arguments that make benchrun run cell c as a child.
func childArgs(c Cell, opts Options) []string {
	args := []string{ChildSubcommand,
		"-scenario", c.Scenario.Name,
		"-impl", string(c.Row),
		"-params", scenarios.FormatParams(c.Params),
		"-benchtime", opts.Benchtime.String(),
	}
	if opts.GCOn {
		args = append(args, "-gc-on")
	}
	return args
}

// ChildMain is the body of `benchrun cell`: it measures one cell in this
// process and writes a childReport line to stdout. A row that does not
// support the scenario is a report, not a failure; any other error goes to
// stderr with exit status 1.
func ChildMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun "+ChildSubcommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", "", "scenario name")
	impl := fs.String("impl", "", "row")
	params := fs.String("params", "", "key=value,... parameter values")
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, "minimum duration of the timed run")
	gcOn := fs.Bool("gc-on", false, "leave the collector on during the timed run (GC-safe rows only)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s, ok := scenarios.Lookup(*name)
	if !ok {
		fmt.Fprintf(stderr, "benchrun %s: unknown scenario %q\n", ChildSubcommand, *name)
		return 2
	}
	row, ok := scenarios.ParseRow(*impl)
	if !ok {
		fmt.Fprintf(stderr, "benchrun %s: unknown row %q\n", ChildSubcommand, *impl)
		return 2
	}
	p, err := scenarios.ParseParams(*params)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun %s: %v\n", ChildSubcommand, err)
		return 2
	}
	sm, err := driver.MeasureWith(s, row, p, driver.Options{Benchtime: *benchtime, GCOn: *gcOn, Loadgen: scenarios.ReexecLoadgen(LoadgenSubcommand)})
	var rep childReport
	if reason, ok := scenarios.IsNotSupported(err); ok {
		rep.Unsupported = reason
	} else if err != nil {
		// The first line is the reason the parent records (failureReason);
		// the whole error, panics' stacks included, follows for the log.
		msg := fmt.Sprintf("%s: %v", s.BenchName(row, p), err)
		first, rest, _ := strings.Cut(msg, "\n")
		fmt.Fprintf(stderr, "%s%s\n", cellErrorPrefix, first)
		if rest != "" {
			fmt.Fprintln(stderr, rest)
		}
		return 1
	} else {
		rep.Iters, rep.Values = sm.Iters, sm.Values
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintf(stderr, "benchrun %s: writing the report: %v\n", ChildSubcommand, err)
		return 1
	}
	return 0
}
