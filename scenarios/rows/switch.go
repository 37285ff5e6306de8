package rows

import (
	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
)

// BareSwitch names the stackful rows' bare switch: fiber.Switch for the
// asm backend, an iter.Pull next/yield pair for the coro backend. The
// switch scenario's body drives it inside a coroutine of the scheduler,
// which does not see these switches: the GC fence the scheduler holds
// covers the extra fiber too.
func (f fibers) BareSwitch() scenarios.BareSwitch {
	if f.backend == stackful.Coro {
		return scenarios.PullSwitch
	}
	return scenarios.FiberSwitch
}
