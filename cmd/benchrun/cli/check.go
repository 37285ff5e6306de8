package cli

import (
	"fmt"
	"io"

	"github.com/corobench/corobench/internal/results"
)

// runCheck validates results files: each must read back as benchfmt with
// well-formed cell notes.
func runCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "benchrun check: name at least one results file, e.g. benchrun check results/<runstamp>.txt")
		return ExitUsage
	}
	code := ExitOK
	for _, path := range args {
		f, err := results.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun check: %v\n", err)
			code = ExitFailed
			continue
		}
		failed := 0
		for _, n := range f.Notes {
			if n.Kind == results.NoteFailed {
				failed++
			}
		}
		fmt.Fprintf(stdout, "%s: %d results, %d failed cells, %d not supported\n", path, len(f.Results), failed, len(f.Notes)-failed)
	}
	return code
}
