package bodies

import (
	"testing"

	"github.com/corobench/corobench/scenarios"
)

// TestSchedScenariosRejectBadValues: a parameter value outside the sweep's
// vocabulary is bad input (an error naming the fix), not "not supported".
func TestSchedScenariosRejectBadValues(t *testing.T) {
	for _, c := range []struct {
		s     *scenarios.Scenario
		param string
	}{{Spawn, "pool"}, {AwaitReady, "state"}, {Microtask, "kind"}, {Handoff, "via"}} {
		env := &scenarios.Env{N: 1, Params: map[string]string{c.param: "bogus"}}
		_, err := c.s.StateMachine(env)
		if err == nil {
			t.Errorf("%s: %s=bogus accepted", c.s.Name, c.param)
			continue
		}
		if _, ns := scenarios.IsNotSupported(err); ns {
			t.Errorf("%s: %s=bogus reported as not supported: %v", c.s.Name, c.param, err)
		}
	}
}
