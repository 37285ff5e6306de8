package bodies

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/rows"
)

// TestAwaitReadyPaths: on the asm backend, state=ready takes the fast path
// on every await (no switch), and state=pending suspends on every await.
func TestAwaitReadyPaths(t *testing.T) {
	const n = 500
	for _, state := range []string{"ready", "pending"} {
		env := &scenarios.Env{N: n, Params: map[string]string{"state": state}}
		var out scenarios.Outcome
		s := runOnStackful(t, stackful.Asm, func() (err error) {
			out, err = awaitReadyBlocking(rows.Fibers(stackful.Asm, false), env)
			return err
		})
		if out.Checksum != awaitReadyWant(env) {
			t.Errorf("state=%s: checksum %#x, want %#x", state, out.Checksum, awaitReadyWant(env))
		}
		st := s.Stats()
		switch state {
		case "ready":
			if st.FastPaths < n || st.Switches > 2 {
				t.Errorf("state=ready: %d fast paths (want >= %d), %d switches (want <= 2)", st.FastPaths, n, st.Switches)
			}
		case "pending":
			// Only the partner's first await finds its future resolved.
			if st.FastPaths > 1 || st.Switches < 2*n {
				t.Errorf("state=pending: %d fast paths (want <= 1), %d switches (want >= %d)", st.FastPaths, st.Switches, 2*n)
			}
		}
	}
}
