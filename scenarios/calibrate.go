package scenarios

// Calibrate measures the harness's own cost per iteration: the loop and
// checksum bookkeeping every body does, run inside each row's runtime, with
// no coroutine operation at all. Subtracting it from another scenario's
// ns/op is the reader's call; corobench never does it silently.
var Calibrate = register(&Scenario{
	Name:    "calibrate",
	Bench:   "Calibrate",
	Summary: "The harness's own cost per iteration: subtract it mentally from the cheapest figures.",
	Doc:     "One iteration of a body's bookkeeping (loop counter and checksum mix) with no coroutine operation: the harness's floor.",
	Claim:   "Measurement pitfall (ANCHORS.md): know what the harness itself costs before quoting a few-ns figure.",
	Metrics: []Metric{
		{Unit: "ns/op", Kind: TimePerOp},
	},
	Blocking:     func(_ Blocking, env *Env) (Outcome, error) { return calibrateLoop(env), nil },
	StateMachine: func(env *Env) (Outcome, error) { return calibrateLoop(env), nil },
	Want:         calibrateWant,
})

func calibrateLoop(env *Env) Outcome {
	var sum uint64
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		sum = mix(sum, uint64(i))
	}
	env.StopTimer()
	return Outcome{Ops: int64(env.N), Checksum: sum}
}

func calibrateWant(env *Env) uint64 { return mixSequence(env.N) }
