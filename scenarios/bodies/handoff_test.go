package bodies

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

// TestHandoffDirectIsDirect: on the asm backend the handoff body's switches
// really bypass the scheduler context (Stats counts them).
func TestHandoffDirectIsDirect(t *testing.T) {
	const rounds = 1000
	env := &scenarios.Env{N: rounds, Params: map[string]string{"via": "direct"}}
	var out scenarios.Outcome
	s := runOnStackful(t, stackful.Asm, func() (err error) {
		out, err = handoffBlocking(rows.Fibers(stackful.Asm, false), env)
		return err
	})
	if out.Checksum != pingPongWant(env) {
		t.Fatalf("checksum %#x, want %#x", out.Checksum, pingPongWant(env))
	}
	st := s.Stats()
	if direct := st.Switches - st.SchedulerSwitches; direct < 2*rounds {
		t.Errorf("%d direct switches of %d (scheduler: %d) for %d handoffs: the direct path was not taken",
			direct, st.Switches, st.SchedulerSwitches, 2*rounds)
	}
	if st.SchedulerSwitches > 10 {
		t.Errorf("%d switches went through the scheduler context; the timed handoffs should take none", st.SchedulerSwitches)
	}
}

// TestHandoffViaSchedulerIsViaScheduler: with the scenario's options for
// via=scheduler the asm row's handoffs all pass through the scheduler
// context, two switches each, and the body still does the same work.
func TestHandoffViaSchedulerIsViaScheduler(t *testing.T) {
	const rounds = 1000
	params := map[string]string{"via": "scheduler"}
	env := &scenarios.Env{N: rounds, Params: params}
	opts, err := rows.StackfulOptions(stackful.Asm, scenarios.CellInfo{Scenario: Handoff.Name, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	var out scenarios.Outcome
	s := runOnStackfulWith(t, opts, func() (err error) {
		out, err = handoffBlocking(rows.Fibers(stackful.Asm, opts.ViaScheduler), env)
		return err
	})
	if out.Checksum != pingPongWant(env) {
		t.Fatalf("checksum %#x, want %#x", out.Checksum, pingPongWant(env))
	}
	st := s.Stats()
	if st.SchedulerSwitches < 4*rounds {
		t.Errorf("%d of %d switches through the scheduler for %d handoffs; want 2 per handoff", st.SchedulerSwitches, st.Switches, 2*rounds)
	}
	// A finishing coroutine's exit may still go straight to the next one
	// (outside the timed handoffs), as in the direct test's scheduler count.
	if direct := st.Switches - st.SchedulerSwitches; direct > 10 {
		t.Errorf("%d direct switches with ViaScheduler set; the timed handoffs should take none", direct)
	}
}

func TestHandoffRejectsUnknownPath(t *testing.T) {
	env := &scenarios.Env{N: 1, Params: map[string]string{"via": "sideways"}}
	if _, err := handoffStateMachine(env); err == nil {
		t.Fatal("via=sideways accepted")
	} else if _, ok := scenarios.IsNotSupported(err); ok {
		t.Fatalf("via=sideways reported as not supported (%v); it is bad input", err)
	}
}
