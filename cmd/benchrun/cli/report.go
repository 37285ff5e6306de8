package cli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/report"
)

// writeReport builds reports/<runstamp>/index.html from a run's results.
func writeReport(resultsPath, reportsDir, runstamp string, stderr io.Writer) error {
	index, err := report.Build([]string{resultsPath}, filepath.Join(reportsDir, runstamp))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "benchrun: report %s\n", index)
	return nil
}

// runReport is `benchrun report [-o DIR] FILE...`.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory (default reports/<name of the first file without .txt>)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageLine("report")+"\nrebuilds an HTML report (with PNG and SVG charts) from results files")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "benchrun report: name at least one results file, e.g. benchrun report results/<runstamp>.txt")
		return ExitUsage
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("reports", strings.TrimSuffix(filepath.Base(fs.Arg(0)), ".txt"))
	}
	index, err := report.Build(fs.Args(), dir)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun report: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintln(stdout, index)
	return ExitOK
}
