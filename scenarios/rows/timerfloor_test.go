package rows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/reactor"
)

// TestTimerFloorIsTheRunsWait: the timer-floor facts of our rows name the
// slack a Run really waits with (the asm and stackless runtimes lower it to
// 1 ns; coro keeps the thread's), not that of a loop made on the side, and
// that every one of our runtimes' waits keeps its P (hold-P).
func TestTimerFloorIsTheRunsWait(t *testing.T) {
	asm, coro, sl := stackfulTimerFloor(stackful.Asm)(), stackfulTimerFloor(stackful.Coro)(), stacklessTimerFloor()
	if !strings.Contains(asm, "wait=epoll_pwait2") {
		t.Skipf("the reactor waits without epoll_pwait2 here (%s): no slack to lower", asm)
	}
	for name, line := range map[string]string{"stackful-asm": asm, "stackless": sl} {
		if !strings.Contains(line, "timerslack=1ns (lowered by Run)") {
			t.Errorf("%s: %q, want the 1 ns slack its Run sets", name, line)
		}
	}
	for name, line := range map[string]string{"stackful-asm": asm, "stackful-coro": coro, "stackless": sl} {
		if want := fmt.Sprintf("coalesce=%dns", reactor.DefaultCoalesce.Nanoseconds()); !strings.Contains(line, want) {
			t.Errorf("%s: %q, want the reactor's coalescing window (%s)", name, line, want)
		}
	}
	for name, line := range map[string]string{"stackful-asm": asm, "stackful-coro": coro, "stackless": sl} {
		if !strings.HasSuffix(line, " hold-P") {
			t.Errorf("%s: %q, want hold-P: the runtime's loop keeps its P while it waits (reactor.Options.HoldP)", name, line)
		}
	}
	if strings.Contains(coro, "lowered by Run") {
		t.Errorf("stackful-coro: %q; coro cannot lock its thread, so its Run lowers no slack", coro)
	}
}
