package harness

import (
	"github.com/corobench/corobench/scenarios"
	// The built-in scenarios and rows fill the registry the child looks
	// cells up in; rows from another module are added by that module's
	// main before cli.Main.
	_ "github.com/corobench/corobench/scenarios/bodies"
	_ "github.com/corobench/corobench/scenarios/rows"
)

// LoadgenSubcommand is the hidden benchrun subcommand that runs the echo
// scenario's load generator (loadgen.Main): a cell's child process passes
// the scenarios a command that re-executes the binary with it
// (scenarios.Options.Loadgen), as the harness re-executes it with
// ChildSubcommand for each cell.
const LoadgenSubcommand = "loadgen"

// Cell is one child-process run: one sample of one scenario on one row
// with one set of parameter values.
type Cell struct {
	Scenario *scenarios.Scenario
	Row      scenarios.Row
	Params   map[string]string
	Rep      int // 0-based repetition
}

// Name is the cell's benchmark name (without "Benchmark").
func (c Cell) Name() string { return c.Scenario.BenchName(c.Row, c.Params) }

// Plan lists the cells of a run in the order they execute: repetition by
// repetition, and within a repetition scenario by scenario and parameter
// combination by combination, with every row taking its turn (round-robin)
// before the next combination starts.
func Plan(ss []*scenarios.Scenario, rows []scenarios.Row, quick bool, overrides map[string][]string, count int) []Cell {
	var cells []Cell
	for rep := 0; rep < count; rep++ {
		for _, s := range ss {
			for _, params := range s.Combos(quick, overridesFor(s, overrides)) {
				if max, ok := s.MaxCount[scenarios.FormatParams(params)]; ok && rep >= max {
					continue
				}
				for _, row := range rows {
					cells = append(cells, Cell{Scenario: s, Row: row, Params: params, Rep: rep})
				}
			}
		}
	}
	return cells
}

// overridesFor keeps the overrides that name one of s's parameters: a
// --param applies to every selected scenario that has that key.
func overridesFor(s *scenarios.Scenario, overrides map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range overrides {
		if _, ok := s.Param(k); ok {
			out[k] = v
		}
	}
	return out
}
