// Package bodies is corobench's scenario set: for each scenario its
// definition (scenarios.Scenario: name, summary, parameters, metrics,
// checksum) and its two bodies, registered with the scenarios registry as
// the package initialises.
//
//   - The blocking body is straight-line Go written against
//     scenarios.Blocking and the optional capabilities; the stackful rows,
//     the goroutine rows and any row added from another module run
//     literally the same function.
//   - The state-machine body is written against impl/stackless directly,
//     because that is the point of the stackless row: the same work
//     lowered by hand into explicit states.
//
// Everything in this package is scenario code: package scenarios/bodylines
// counts each body's lines by that boundary (BodyLines). The rows live in
// scenarios/rows, the measurement driver in scenarios/driver.
package bodies

import "github.com/corobench/corobench/scenarios"

// register adds a scenario to the registry in its display place; a
// package-level var holding its result is the scenario's definition.
func register(s *scenarios.Scenario) *scenarios.Scenario { return scenarios.Register(s) }
