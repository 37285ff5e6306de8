package bodies

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

// TestMicrotasksRunWithoutSwitching: kind=microtask on the asm backend runs
// every microtask, in order, and the yields that run them do not switch
// (nobody else is ready), so the figure is the microtasks' own cost.
func TestMicrotasksRunWithoutSwitching(t *testing.T) {
	const n = 1000
	env := &scenarios.Env{N: n, Params: map[string]string{"kind": "microtask"}}
	var out scenarios.Outcome
	s := runOnStackful(t, stackful.Asm, func() (err error) {
		out, err = microtaskBlocking(rows.Fibers(stackful.Asm, false), env)
		return err
	})
	if out.Checksum != microtaskWant(env) {
		t.Errorf("checksum %#x, want %#x", out.Checksum, microtaskWant(env))
	}
	st := s.Stats()
	if st.MicrotasksRun != n {
		t.Errorf("%d microtasks ran, want %d", st.MicrotasksRun, n)
	}
	if st.Switches > 2 {
		t.Errorf("%d switches in a run of microtasks and lone yields; want none beyond the main coroutine's start and end", st.Switches)
	}
}
