package cli

import (
	"fmt"
	"io"

	"github.com/corobench/corobench/cmd/benchrun/internal/compare"
)

// runCompare is `benchrun compare [--force] OLD NEW`.
func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := subFlags("compare", "compares two results files benchstat-style (median ± 95% CI, Mann-Whitney p, ~ when not significant)", stderr)
	force := fs.Bool("force", false, "compare even when the runs' config differs in a key that changes the figures (cpu, benchtime, gc-policy, gomaxprocs, runtime-env, godebug, go-version, ...); the differences are printed above the tables")
	if code, done := parseSub(fs, args); done {
		return code
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return ExitUsage
	}
	if err := compare.Write(stdout, fs.Arg(0), fs.Arg(1), compare.Options{Force: *force, Warn: prefixed{stderr, "benchrun compare: "}}); err != nil {
		fmt.Fprintf(stderr, "benchrun compare: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

// prefixed writes each Write (one warning line) with a prefix.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
