package bodies

import (
	"fmt"
	"iter"
	"unsafe"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/impl/stackful/stackpool"
	"github.com/corobench/corobench/scenarios"
)

// Switch: the bare context switch, with no scheduler, waker or queue.
var Switch = register(&scenarios.Scenario{
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
		"10–50 ns (docs/design.md §1, the claims). docs/design.md §3's prototype: ~9.5 ns asm, ~34 ns iter.Pull, ~0.7 ns a state-machine " +
		"resume.",
	Metrics: []scenarios.Metric{
		{Unit: "ns/switch", Kind: scenarios.TimePerOp, Headline: "bare switch, one-way"},
		{Unit: "allocs/switch", Kind: scenarios.AllocsPerOp},
	},
	Blocking:     switchBlocking,
	StateMachine: switchStateMachine,
	Want:         pingPongWant,
})

func switchBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	bs, ok := rt.(scenarios.BareSwitches)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "BareSwitches", "the row has no switch that bypasses its scheduler")
	}
	var sum uint64
	var err error
	switch kind := bs.BareSwitch(); kind {
	case scenarios.FiberSwitch:
		sum, err = fiberRounds(env, env.N)
	case scenarios.PullSwitch:
		sum = pullRounds(env, env.N)
	default:
		return scenarios.Outcome{}, scenarios.NotSupported("the switch scenario has no loop for the bare switch %q", kind)
	}
	return scenarios.Outcome{Ops: 2 * int64(env.N), Checksum: sum}, err
}

// switchStackSize is the bare-switch fiber's stack: it only loops and
// mixes, so the pool's smallest size would do; 16 KiB leaves room.
const switchStackSize = 16 << 10

// fiberRounds runs n round trips of fiber.Switch between the calling
// coroutine (which mixes the even numbers 0, 2, ...) and a fiber on a
// pooled stack (which mixes the odd ones), and returns the checksum. It
// calls env's timer itself, so that setting the fiber up stays outside the
// timed region. On the stackful rows it runs inside a coroutine of the
// scheduler, which does not see these switches: the GC fence the scheduler
// holds covers the extra fiber too. The loop is little more than the two
// switches, so its figure is as sensitive to where the switch's code sits
// as to what it does: switch_amd64.s keeps Switch and switchContext on
// 64-byte lines for that reason (see its "Code alignment").
func fiberRounds(env *scenarios.Env, n int) (uint64, error) {
	pool, err := stackpool.New(stackpool.Config{StackSize: switchStackSize})
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	st, err := pool.Get()
	if err != nil {
		return 0, err
	}
	defer pool.Put(st)
	var sum uint64
	ctx := new(switchContexts)
	root, fib := &ctx.root, &ctx.fib // root: the zero Context is the running one
	err = fib.Init(st.Lo(), st.Hi(), func() *fiber.Context {
		for i := 0; i < n; i++ {
			sum = mix(sum, uint64(2*i+1))
			fiber.Switch(fib, root)
		}
		return root
	})
	if err != nil {
		return 0, fmt.Errorf("switch: %w", err)
	}
	env.ResetTimer()
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(2*i))
		fiber.Switch(root, fib)
	}
	env.StopTimer()
	fiber.Switch(root, fib) // let the fiber leave its loop and finish
	if !fib.Finished() {
		return 0, fmt.Errorf("switch: the fiber did not finish after %d rounds", n)
	}
	return sum, nil
}

// switchContexts holds fiberRounds' two contexts, each at the start of a
// 64-byte line of its own, as the stackful runtime places its coroutines'
// contexts (a switch reads and writes a Context's first 57 bytes: one line
// when it starts one, fiber.Context). The struct is 256 bytes, a size
// class of Go's allocator whose objects sit at multiples of 256 in their
// page-aligned span, so root is at offset 0 and fib at 128 of an aligned
// block (TestSwitchContextsOnTheirOwnLines). Why not two escaping locals,
// as before: they landed wherever the 96-byte size class had room, which
// any change to what the process allocated first moves. With the
// driver's Signal and Env 40–56 bytes larger (session 9, helper E),
// Switch stackful-asm read 4.86 → 5.09 ns (32 processes each, interleaved)
// with its code unchanged; with the contexts placed here both builds read
// 5.26 and 5.32 ns, and the processes' spread (slowest/fastest) went
// 1.17–1.22 → 1.10–1.12.
type switchContexts struct {
	root fiber.Context
	_    [128 - unsafe.Sizeof(fiber.Context{})]byte
	fib  fiber.Context
	_    [128 - unsafe.Sizeof(fiber.Context{})]byte
}

// pullRounds is the coro backend's bare switch: each next resumes the
// iterator's coroutine, which mixes and yields back (two switches).
func pullRounds(env *scenarios.Env, n int) uint64 {
	var sum uint64
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		for i := 0; i < n; i++ {
			sum = mix(sum, uint64(2*i+1))
			if !yield(struct{}{}) {
				return
			}
		}
	})
	defer stop()
	env.ResetTimer()
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(2*i))
		next()
	}
	env.StopTimer()
	return sum
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

func switchStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	var sum uint64
	var m resumer = &switchMachine{sum: &sum}
	env.ResetTimer()
	for i := 0; i < env.N; i++ {
		sum = mix(sum, uint64(2*i))
		m.resume()
	}
	env.StopTimer()
	return scenarios.Outcome{Ops: 2 * int64(env.N), Checksum: sum}, nil
}
