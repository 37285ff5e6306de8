package bodies

import (
	"fmt"

	"github.com/corobench/corobench/scenarios"
)

// Handoff: the same hand-off as pingpong, labelled by the path control
// takes: straight from the suspending coroutine to the woken one (direct),
// or through a scheduler context (scheduler).
var Handoff = register(&scenarios.Scenario{
	Name:    "handoff",
	Bench:   "Handoff",
	Summary: "A direct switch against one through the scheduler coroutine (the reference design's direct-switch claim).",
	Doc: "Two coroutines hand control back and forth through reusable one-shot events (pingpong's body), in cells " +
		"labelled by the path each handoff takes: via=direct, one switch from the suspending coroutine to the woken " +
		"one; via=scheduler, two transfers, into a scheduler context and out of it. ns/switch is one-way: one " +
		"handoff, however many transfers it takes. stackful-asm runs both: via=scheduler sets " +
		"stackful.Options.ViaScheduler, which turns its direct switch off and changes nothing else, so the two " +
		"cells price the direct switch. The other rows run only the path they really take: stackful-coro, " +
		"stackless (return to Run's loop + call) and goroutines (g0's schedule) go through their scheduler; " +
		"their via=direct cell says why it cannot.",
	Claim: "Direct switching halves the switches per suspend/resume (docs/design.md §1: the scheduler's tick runs in the " +
		"suspending coroutine's context and switches directly to the next one).",
	Params: []scenarios.Param{{
		Key: "via", Full: []string{"direct", "scheduler"},
		Doc: "the path a handoff takes",
	}},
	Metrics: []scenarios.Metric{
		{Unit: "ns/switch", Kind: scenarios.TimePerOp},
	},
	// The asm row takes either path: its RunBlocking turns the direct
	// switch off for via=scheduler (rows.StackfulOptions), so the two
	// cells differ in nothing else.
	Blocking:     handoffBlocking,
	StateMachine: handoffStateMachine,
	Want:         pingPongWant,
})

func handoffBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	if err := checkVia(env); err != nil {
		return scenarios.Outcome{}, err
	}
	sp, ok := rt.(scenarios.SwitchPaths)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "SwitchPaths", "the row does not say which path its handoffs take")
	}
	if err := handoffPathCheck(sp, env.Params["via"]); err != nil {
		return scenarios.Outcome{}, err
	}
	return pingPongBlocking(rt, env)
}

func checkVia(env *scenarios.Env) error {
	switch v := env.Params["via"]; v {
	case "direct", "scheduler":
		return nil
	default:
		return fmt.Errorf("handoff: via=%q is not a path: use via=direct or via=scheduler", v)
	}
}

// handoffPathCheck returns nil if the row's handoffs take path via, or a
// *NotSupportedError with the row's reason.
func handoffPathCheck(sp scenarios.SwitchPaths, via string) error {
	path, unsupported := sp.HandoffPath()
	if via == path {
		return nil
	}
	if reason, ok := unsupported[via]; ok {
		return scenarios.NotSupported("%s", reason)
	}
	return scenarios.NotSupported("the row's handoffs take the %s path; via=%s is not one it can take", path, via)
}

func handoffStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	if err := checkVia(env); err != nil {
		return scenarios.Outcome{}, err
	}
	if env.Params["via"] != "scheduler" {
		return scenarios.Outcome{}, scenarios.NotSupported("a state machine has no stack to switch to: a task suspends by returning " +
			"from Resume to the scheduler's loop, which calls the next task's Resume, so every handoff goes " +
			"through the scheduler (the reference design's direct switch and scheduler coroutine collapse into Run's loop)")
	}
	return pingPongStateMachine(env)
}
