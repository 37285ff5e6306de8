package cli

import (
	"io"
	"os"

	"github.com/corobench/corobench/internal/dnsserver"
	"github.com/corobench/corobench/scenarios"
)

// The hidden helper subcommands: processes the scenarios start from this
// same binary (scenarios.ServeHelpers), so what they measure is a program
// the user has. exec-child is the exec scenario's trivial child;
// dns-responder is the dns scenario's DNS server, kept in a process of its
// own so its work runs on none of the measured row's Ps.

func init() {
	// benchrun serves the helper subcommands (the table in cli.go lists
	// them): the scenarios re-execute this binary for them. An unreadable
	// executable path leaves them undeclared; the exec and dns cells then
	// fail naming scenarios.ServeHelpers.
	if exe, err := os.Executable(); err == nil {
		scenarios.ServeHelpers(exe)
	}
}

// runExecChild is `benchrun exec-child LINE`: writes LINE and a newline.
func runExecChild(args []string, stdout, stderr io.Writer) int {
	return scenarios.ExecChildMain(args, stdout, stderr)
}

// runDNSResponder is `benchrun dns-responder`: answers the dns scenario's
// zone on 127.0.0.1 until its stdin closes, after printing its address.
func runDNSResponder(args []string, stdout, stderr io.Writer) int {
	return dnsserver.Main(args, os.Stdin, stdout, stderr)
}
