package scenarios

// mix folds v into a running checksum (FNV-1a style, on whole words). Every
// body mixes the same values in the same order, so every row that did the
// work ends with the same checksum, and the compiler cannot drop the work.
func mix(sum, v uint64) uint64 {
	return (sum ^ v) * 0x100000001b3
}

// PingPong: two coroutines hand control back and forth N round trips.
var PingPong = register(&Scenario{
	Name:  "pingpong",
	Bench: "PingPong",
	Doc: "Two coroutines hand control back and forth through a reusable one-shot event, N round trips. " +
		"ns/switch is one-way: a round trip counts as 2 switches.",
	Claim: "A full-context switch costs ~10–20 ns on modern x86; stackful 15–200 ns vs stackless 10–50 ns (seed tables).",
	Metrics: []Metric{
		{Unit: "ns/switch", Kind: TimePerOp},
		{Unit: "allocs/switch", Kind: AllocsPerOp},
	},
	Blocking: pingPongBlocking,
	Want:     pingPongWant,
})

// pingPongBlocking is the blocking body: the main coroutine mixes even
// numbers and fires ping; the partner mixes odd numbers and fires pong.
func pingPongBlocking(rt Blocking, env *Env) Outcome {
	n := env.N
	ping, pong := rt.NewSignal(), rt.NewSignal()
	var sum uint64
	rt.Go(func() {
		for i := 0; i < n; i++ {
			ping.Wait()
			sum = mix(sum, uint64(2*i+1))
			pong.Fire()
		}
	})
	env.ResetTimer()
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(2*i))
		ping.Fire()
		pong.Wait()
	}
	env.StopTimer()
	return Outcome{Ops: 2 * int64(n), Checksum: sum}
}

func pingPongWant(env *Env) uint64 { return mixSequence(2 * env.N) }

// mixSequence is the checksum of mixing 0, 1, ..., n-1 in order.
func mixSequence(n int) uint64 {
	var sum uint64
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(i))
	}
	return sum
}
