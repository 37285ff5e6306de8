// Command bodylinesgen writes bodylines_gen.go, the count of every
// scenario's blocking and state-machine body lines (see package
// scenarios/bodylines), into the package directory it runs in. It is run by
// go generate in scenarios/bodies:
//
//	//go:generate go run ../bodylines/bodylinesgen
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corobench/corobench/scenarios/bodylines"
)

func main() {
	dir := flag.String("dir", ".", "the package directory to count and write into")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bodylinesgen: unexpected arguments %q: the only flag is -dir\n", flag.Args())
		os.Exit(2)
	}
	src, err := bodylines.Generate(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bodylinesgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*dir, bodylines.GeneratedFile), src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bodylinesgen:", err)
		os.Exit(1)
	}
}
