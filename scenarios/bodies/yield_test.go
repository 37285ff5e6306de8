package bodies

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

// yieldProbe wraps a row to see what Yield's timed region holds: it counts
// the yields made and the gate waits begun while the timer runs, and
// records whether each gate was opened with the timer running.
type yieldProbe struct {
	scenarios.Blocking
	gates       scenarios.Gates
	env         *scenarios.Env
	timedYields int
	timedWaits  int
	openedTimed []bool
}

func (p *yieldProbe) Yield() {
	if p.env.Timing() {
		p.timedYields++
	}
	p.Blocking.Yield()
}

func (p *yieldProbe) NewGate() scenarios.Gate { return &probeGate{p.gates.NewGate(), p} }

type probeGate struct {
	scenarios.Gate
	p *yieldProbe
}

func (g *probeGate) Wait() {
	if g.p.env.Timing() {
		g.p.timedWaits++
	}
	g.Gate.Wait()
}

func (g *probeGate) Open() {
	g.p.openedTimed = append(g.p.openedTimed, g.p.env.Timing())
	g.Gate.Open()
}

// TestYieldTimesOnlyTheRounds: the start gate's release of the n
// coroutines and their first yield stay outside the timed region, and so
// do the end gate's waits: the region holds the rounds' N yields per
// coroutine and nothing else of theirs. At N=1 the release was the whole
// timed region once, with no yield in it; later the n end-gate waits were
// in it, half the figure at N=2. The body is called with the timer
// stopped, so a timer the body starts before the release shows as a gate
// opened while timing.
func TestYieldTimesOnlyTheRounds(t *testing.T) {
	const n = 64
	for _, rounds := range []int{1, 3} {
		env := &scenarios.Env{N: rounds, Params: map[string]string{"n": "64"}}
		var out scenarios.Outcome
		var p *yieldProbe
		runOnStackful(t, stackful.Asm, func() (err error) {
			rt := rows.Fibers(stackful.Asm, false)
			p = &yieldProbe{Blocking: rt, gates: rt.(scenarios.Gates), env: env}
			out, err = yieldBlocking(p, env)
			return err
		})
		if out.Checksum != yieldWant(env) {
			t.Errorf("N=%d: checksum %#x, want %#x", rounds, out.Checksum, yieldWant(env))
		}
		if len(p.openedTimed) != 2 || p.openedTimed[0] || p.openedTimed[1] {
			t.Errorf("N=%d: gates opened with the timer running: %v; want [false false] (start gate, end gate)", rounds, p.openedTimed)
		}
		if want := n * rounds; p.timedYields != want || out.Ops != int64(want) {
			t.Errorf("N=%d: %d yields in the timed region and %d ops, want %d (n×N, the rounds')", rounds, p.timedYields, out.Ops, want)
		}
		if p.timedWaits != 0 {
			t.Errorf("N=%d: %d gate waits begun in the timed region, want 0", rounds, p.timedWaits)
		}
	}
}
