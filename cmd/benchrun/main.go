// Command benchrun runs corobench's scenarios on every row and writes the
// results in the Go benchmark format (results/<runstamp>.txt), readable by
// benchstat:
//
//	go run ./cmd/benchrun --scenario all
//	benchstat -col /impl results/<runstamp>.txt
//
// Each cell (scenario × row × parameter values) runs in a fresh child
// process, rows interleaved round-robin, --count times. See -h for flags
// and subcommands. The command line is package cli; this main only calls
// it, as a runtime engineer's own binary does after registering a row.
package main

import (
	"io"
	"os"

	"github.com/corobench/corobench/cmd/benchrun/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: tests call it directly.
func run(args []string, stdout, stderr io.Writer) int { return cli.Main(args, stdout, stderr) }

// Exit statuses, as the tests name them.
const (
	exitOK        = cli.ExitOK
	exitFailed    = cli.ExitFailed
	exitUsage     = cli.ExitUsage
	exitInterrupt = cli.ExitInterrupt
)
