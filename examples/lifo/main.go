// Command benchrun-lifo is corobench's benchrun with one more row, lifo: a
// cooperative runtime with a LIFO wake-up policy (package sched), added
// from this module through the public row contract. It takes every flag
// and subcommand benchrun takes:
//
//	go run . --scenario all --quick
//	go run . --scenario pingpong,yield --impl lifo,stackful-asm,goroutine-single
//
// The row is registered before cli.Main, so the child process of every
// cell, which is this binary again, has it too.
package main

import (
	"os"

	"github.com/corobench/corobench/cmd/benchrun/cli"
	"github.com/corobench/corobench/scenarios"
)

func main() {
	scenarios.RegisterRow(Row)
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
