package bodies

import "github.com/corobench/corobench/scenarios"

// Calibrate measures the harness's own cost per iteration: the loop and
// checksum bookkeeping every body does, run inside each row's runtime, with
// no coroutine operation at all. Subtracting it from another scenario's
// ns/op is the reader's call; corobench never does it silently.
var Calibrate = register(&scenarios.Scenario{
	Name:    "calibrate",
	Bench:   "Calibrate",
	Summary: "The harness's own cost per iteration: subtract it mentally from the cheapest figures.",
	Doc:     "One iteration of a body's bookkeeping (loop counter and checksum mix) with no coroutine operation: the harness's floor.",
	Claim:   "Measurement pitfall (docs/design.md §6): know what the harness itself costs before quoting a few-ns figure.",
	Metrics: []scenarios.Metric{
		{Unit: "ns/op", Kind: scenarios.TimePerOp},
	},
	Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
		return calibrateLoop(env), nil
	},
	StateMachine: func(env *scenarios.Env) (scenarios.Outcome, error) { return calibrateLoop(env), nil },
	Want:         calibrateWant,
})

func calibrateLoop(env *scenarios.Env) scenarios.Outcome {
	var sum uint64
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		sum = mix(sum, uint64(i))
	}
	env.StopTimer()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}
}

func calibrateWant(env *scenarios.Env) uint64 { return mixSequence(env.N) }
