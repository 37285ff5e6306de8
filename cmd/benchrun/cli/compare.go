package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/corobench/corobench/cmd/benchrun/internal/compare"
)

// runCompare is `benchrun compare OLD NEW`.
func runCompare(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, usageLine("compare")+"\ncompares two results files benchstat-style (median ± 95% CI, Mann-Whitney p, ~ when not significant)")
		return ExitUsage
	}
	if err := compare.Write(stdout, args[0], args[1]); err != nil {
		fmt.Fprintf(stderr, "benchrun compare: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}
