package scenarios

// Switch: the bare context switch, with no scheduler, waker or queue.
var Switch = register(&Scenario{
	Name:    "switch",
	Bench:   "Switch",
	Summary: "The bare context switch of each row, with no scheduler, waker or event: cost per one-way switch (goroutines have none).",
	Doc: "Two contexts hand control back and forth N round trips with nothing but the switch between them: " +
		"stackful-asm, fiber.Switch between the running coroutine and a fiber on a pooled stack; " +
		"stackful-coro, an iter.Pull next/yield pair (the Go runtime's coroswitch); stackless, a call of a " +
		"state machine's resume method through an interface and its return (a state machine's whole switch). " +
		"Goroutines have no switch to a chosen goroutine that bypasses the scheduler, so their rows say so; " +
		"their cheapest hand-off is pingpong's. ns/switch is one-way: a round trip counts as 2 switches. " +
		"Every other scenario adds the runtime's bookkeeping (waker, queue, reactor tick) to this floor.",
	Claim: "A full-context switch costs ~10–20 ns on modern x86; stackful switch 15–200 ns vs stackless " +
		"10–50 ns (seed tables). DESIGN.md's prototype: ~9.5 ns asm, ~34 ns iter.Pull, ~0.7 ns a state-machine " +
		"resume.",
	Metrics: []Metric{
		{Unit: "ns/switch", Kind: TimePerOp},
		{Unit: "allocs/switch", Kind: AllocsPerOp},
	},
	Blocking:     switchBlocking,
	StateMachine: switchStateMachine,
	Want:         pingPongWant,
})

func switchBlocking(rt Blocking, env *Env) (Outcome, error) {
	bs, ok := rt.(BareSwitches)
	if !ok {
		return Outcome{}, lacking(rt, "BareSwitches", "the row has no switch that bypasses its scheduler")
	}
	sum, err := bs.SwitchRounds(env, env.N)
	return Outcome{Ops: 2 * int64(env.N), Checksum: sum}, err
}

// resumer is how the switch scenario calls a state machine: through an
// interface, as impl/stackless calls Task.Resume, so the call is a real
// call and return and not inlined away.
type resumer interface{ resume() }

// switchMachine is the second context of the stackless row: each resume
// mixes the next odd number and returns.
type switchMachine struct {
	i   int
	sum *uint64
}

//go:noinline
func (m *switchMachine) resume() {
	*m.sum = mix(*m.sum, uint64(2*m.i+1))
	m.i++
}

func switchStateMachine(env *Env) (Outcome, error) {
	var sum uint64
	var m resumer = &switchMachine{sum: &sum}
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		sum = mix(sum, uint64(2*i))
		m.resume()
	}
	env.StopTimer()
	return Outcome{Ops: 2 * int64(env.N), Checksum: sum}, nil
}
