package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/cmd/benchrun/internal/report"
)

// writeReport builds reports/<runstamp>/index.html from a run's results.
func writeReport(resultsPath, reportsDir, runstamp string, stderr io.Writer) error {
	index, warnings, err := report.BuildWarn([]string{resultsPath}, filepath.Join(reportsDir, runstamp))
	if err != nil {
		return err
	}
	warn(stderr, "report", warnings)
	fmt.Fprintf(stderr, "benchrun: report %s\n", index)
	return nil
}

// runReport is `benchrun report [-o DIR] FILE...`.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := subFlags("report", "rebuilds an HTML report (with PNG and SVG charts) from results files", stderr)
	out := fs.String("o", "", "output directory (default "+filepath.Join(harness.DefaultDir("reports"), "<name of the first file without .txt>")+": reports/ at the root of the corobench checkout the working directory is in, as for a run)")
	if code, done := parseSub(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "benchrun report: name at least one results file, e.g. benchrun report results/<runstamp>.txt")
		return ExitUsage
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(harness.DefaultDir("reports"), strings.TrimSuffix(filepath.Base(fs.Arg(0)), ".txt"))
	}
	index, warnings, err := report.BuildWarn(fs.Args(), dir)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun report: %v\n", err)
		return ExitFailed
	}
	warn(stderr, "report", warnings)
	fmt.Fprintln(stdout, index)
	return ExitOK
}
