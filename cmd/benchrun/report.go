package main

import (
	"errors"
	"fmt"
	"io"
)

// errNoReports says the report generator has not landed yet (issue 7).
var errNoReports = errors.New("not supported yet: the report generator (issue 7) has not landed; the results file is complete and benchstat reads it")

func writeReport(resultsPath, runstamp string, stderr io.Writer) error {
	return errNoReports
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "benchrun report: %v\n", errNoReports)
	return exitUsage
}

func runCompare(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "benchrun compare: %v\n", errNoReports)
	return exitUsage
}
