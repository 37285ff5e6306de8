package bodies

import (
	"errors"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// mix folds v into a running checksum (FNV-1a style, on whole words). Every
// body mixes the same values in the same order, so every row that did the
// work ends with the same checksum, and the compiler cannot drop the work.
func mix(sum, v uint64) uint64 {
	return (sum ^ v) * 0x100000001b3
}

// PingPong: two coroutines hand control back and forth N round trips.
var PingPong = register(&scenarios.Scenario{
	Name:    "pingpong",
	Bench:   "PingPong",
	Summary: "Two coroutines handing off to each other through an event; cost per one-way switch.",
	Doc: "Two coroutines hand control back and forth through a reusable one-shot event, N round trips. " +
		"ns/switch is one-way: a round trip counts as 2 switches.",
	Claim: "A full-context switch costs ~10–20 ns on modern x86; stackful 15–200 ns vs stackless 10–50 ns (docs/design.md §1, the claims).",
	Metrics: []scenarios.Metric{
		{Unit: "ns/switch", Kind: scenarios.TimePerOp, Headline: "full suspend/resume (per switch)"},
		{Unit: "allocs/switch", Kind: scenarios.AllocsPerOp},
	},
	Blocking:     pingPongBlocking,
	StateMachine: pingPongStateMachine,
	Want:         pingPongWant,
})

// pingPongBlocking is the blocking body: the main coroutine mixes even
// numbers and fires ping; the partner mixes odd numbers and fires pong.
func pingPongBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
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
	return scenarios.Outcome{Ops: 2 * int64(n), Checksum: sum}, nil
}

func pingPongWant(env *scenarios.Env) uint64 { return mixSequence(2 * env.N) }

// mixSequence is the checksum of mixing 0, 1, ..., n-1 in order.
func mixSequence(n int) uint64 {
	var sum uint64
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(i))
	}
	return sum
}

// pingPongStateMachine is the state-machine twin of pingPongBlocking: the
// same two sides, each an explicit state machine on impl/stackless.
func pingPongStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	var sum uint64
	var pingEv, pongEv stackless.Event // pong waits on pingEv, ping on pongEv
	ping := &pingPongSide{n: env.N, ping: true, sum: &sum, mine: &pongEv, peer: &pingEv}
	pong := &pingPongSide{n: env.N, sum: &sum, mine: &pingEv, peer: &pongEv}
	s := stackless.New()
	defer s.Close()
	if err := s.Spawn(ping); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Spawn(pong); err != nil {
		return scenarios.Outcome{}, err
	}
	env.ResetTimer()
	err := s.Run()
	env.StopTimer()
	return scenarios.Outcome{Ops: 2 * int64(env.N), Checksum: sum}, err
}

// errLostHandoff fails a side whose peer's event was still fired: the peer
// did not consume the previous hand-off, so the protocol is broken.
var errLostHandoff = errors.New("pingpong: the peer's event was already fired; a hand-off was lost")

// States of a pingpong side.
const (
	ppStart uint8 = iota // ping: mix and hand over; pong: wait
	ppWoken              // the peer handed over
)

// pingPongSide is one side of pingpong: the loop of pingPongBlocking's
// partner (or of its main coroutine, when ping is set) lowered by hand.
type pingPongSide struct {
	stackless.Coro
	state      uint8
	ping       bool
	i, n       int
	sum        *uint64
	mine, peer *stackless.Event
}

func (t *pingPongSide) Resume(c *stackless.Context) stackless.Step {
	for {
		switch t.state {
		case ppStart:
			if t.i == t.n {
				return c.Done()
			}
			if t.ping {
				*t.sum = mix(*t.sum, uint64(2*t.i))
				if !t.peer.Resolve(nil) {
					return c.Fail(errLostHandoff)
				}
			}
			t.state = ppWoken
			return c.Await(t.mine)
		case ppWoken:
			t.mine.Reset()
			if !t.ping {
				*t.sum = mix(*t.sum, uint64(2*t.i+1))
				if !t.peer.Resolve(nil) {
					return c.Fail(errLostHandoff)
				}
			}
			t.i++
			t.state = ppStart
		}
	}
}
