package cli

import (
	"fmt"
	"io"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
)

// runCheck is `benchrun check FILE...`: it reads each file exactly as
// report and compare do (cells.Load, i.e. results.ReadChecked and the
// grouping), so a file check accepts is one they accept, and one they
// refuse check refuses with the same reason. A torn last line is a warning
// naming file:line, as in report and compare; the intact cells count.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := subFlags("check", "reads each results file as report and compare do and says what it holds, or why it is refused (exit 1)", stderr)
	if code, done := parseSub(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "benchrun check: name at least one results file, e.g. benchrun check results/<runstamp>.txt")
		return ExitUsage
	}
	code := ExitOK
	for _, path := range fs.Args() {
		set, err := cells.Load(path)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun check: %v\n", err)
			code = ExitFailed
			continue
		}
		warn(stderr, "check", set.Warnings)
		f := set.Files[0]
		fmt.Fprintf(stdout, "%s: %d results, %d failed cells, %d not supported", path, f.Results, f.Failed, f.Unsupported)
		if f.Incomplete != "" {
			fmt.Fprintf(stdout, "; incomplete: %s", f.Incomplete)
		}
		fmt.Fprintln(stdout)
	}
	return code
}

// warn prints the reader's warnings (a torn last line) for a subcommand.
func warn(w io.Writer, sub string, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "benchrun %s: warning: %s\n", sub, s)
	}
}
