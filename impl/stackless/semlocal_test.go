package stackless_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/impl/stackless"
	. "github.com/corobench/corobench/internal/semtest"
)

// TestSemanticsLocal runs further scripts through the same driver, each
// checking one rule of the semtest package doc. They complement the shared
// cases in internal/semtest (which are authoritative); the expected logs are
// derived from that doc.
func TestSemanticsLocal(t *testing.T) {
	for _, c := range localCases() {
		t.Run(c.Program.Name, func(t *testing.T) { RunCase(t, driver{}, c) })
	}
}

// task builds a semtest.Task (keyed, for vet).
func task(name string, ops ...Op) Task { return Task{Name: name, Ops: ops} }

func localCases() []Case {
	return []Case{
		{
			Program: &Program{Name: "priority", Tasks: []Task{
				task("main", Spawn(1, Normal), Spawn(2, High), Spawn(3, Normal), Yield(), Log("m")),
				task("A", Log("a")), task("B", Log("b"), Yield(), Log("b2")), task("C", Log("c")),
			}},
			// B is at the head; its Yield sends it to the tail despite High.
			Want: []string{"B: b", "A: a", "A: exit", "C: c", "C: exit", "main: m", "main: exit", "B: b2", "B: exit"},
		},
		{
			Program: &Program{Name: "high priority wake-up goes to the head", Events: 1, Tasks: []Task{
				task("main", Spawn(1, High), Spawn(2, Normal), Yield(), Resolve(0, 4), Spawn(3, Normal), Yield(), Log("m")),
				task("H", Await(0)), task("A", Log("a")), task("B", Log("b")),
			}},
			Want: []string{"A: a", "A: exit", "H: await e0 = 4", "H: exit", "B: b", "B: exit", "main: m", "main: exit"},
		},
		{
			Program: &Program{Name: "microtasks FIFO, error stops the batch", Tasks: []Task{
				task("main", Microtask("x", false), Microtask("y", true), Microtask("z", false), Log("m1"), Yield(), Log("m2")),
			}},
			Want: []string{"main: m1", "micro x", "micro y failed", "handler: microtask y", "main: m2", "main: exit", "micro z"},
		},
		{
			Program: &Program{Name: "microtask error fails the run", MicrotaskErrors: FailRun, Tasks: []Task{
				task("main", Spawn(1, Normal), Microtask("x", true), Yield(), Log("m2"), Yield(), Log("m3")),
				task("A", Log("a")),
			}},
			Want:    []string{"micro x failed", "main: m2", "main: yield ! cancelled", "main: exit ! cancelled"},
			WantErr: MicrotaskFailed,
		},
		{
			Program: &Program{Name: "fast path", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), Microtask("x", false), Resolve(0, 7), Await(0), Log("m")),
				task("A", Log("a")),
			}},
			// No suspend: neither A nor the microtask runs before main finishes.
			Want: []string{"main: await e0 = 7", "main: m", "main: exit", "micro x", "A: a", "A: exit"},
		},
		{
			Program: &Program{Name: "reject", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Reject(0), Reject(0), Yield()),
				task("A", Defer("d"), Await(0), Log("unreached")),
			}},
			Want: []string{"main: resolve e0 ignored: already fired", "A: await e0 ! rejected", "A: defer d", "A: exit ! rejected", "main: exit"},
		},
		{
			Program: &Program{Name: "deadlock names the waiting tasks", Events: 2, Tasks: []Task{
				task("main", Spawn(1, Normal), Defer("d"), Await(0)),
				task("A", Await(1)),
			}},
			Want: []string{"main: await e0 ! cancelled", "main: defer d", "main: exit ! cancelled",
				"A: await e1 ! cancelled", "A: exit ! cancelled"},
			WantErr: Deadlock,
			Check: func(t *testing.T, _ Driver, _ Stats, err error) {
				var de *stackless.DeadlockError
				if !errors.As(err, &de) || strings.Join(de.Waiting, ",") != "main,A" {
					t.Errorf("deadlock error %v does not name main and A", err)
				}
			},
		},
		{
			Program: &Program{Name: "shutdown unwinds a task that waits again", Events: 2, Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Shutdown(), Log("m")),
				task("A", Defer("da"), Continuing(Await(0)), Log("a2"), Continuing(Await(1)), Log("unreached")),
			}},
			Want: []string{"main: m", "main: exit", "A: await e0 ! cancelled", "A: a2", "A: defer da", "A: exit ! cancelled"},
		},
		{
			Program: &Program{Name: "microtask queued during shutdown runs", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Shutdown(), Log("m")),
				task("A", Continuing(Await(0)), Microtask("late", false), Continuing(Await(0))),
			}},
			// A's microtask is queued after its cancelled wait; A waits again.
			// The next suspend point runs it before the final phase.
			Want: []string{"main: m", "main: exit", "A: await e0 ! cancelled", "micro late", "A: exit ! cancelled"},
		},
		{
			Program: &Program{Name: "final phase drops pending microtasks", MicrotaskErrors: FailRun, Tasks: []Task{
				task("main", Shutdown(), Microtask("x", true), Microtask("y", false), Yield()),
			}},
			// The yield returns at once (the cancellation is pending); at the
			// finish x fails during the graceful phase: final phase, y dropped.
			Want:    []string{"main: yield ! cancelled", "main: exit ! cancelled", "micro x failed"},
			WantErr: MicrotaskFailed,
		},
		{
			Program: &Program{Name: "switch handlers", MainStartHandlers: []int{0}, Tasks: []Task{
				task("main", SwitchHandler(1), Spawn(1, Normal), Yield(), Log("m2"), Yield(), Log("m3")),
				task("A", Log("a"), Yield(), Log("a2")),
			}},
			Want: []string{"main: start handler 0 enter", "main: handler leave", "A: a", "main: handler enter",
				"main: m2", "A: a2", "A: exit", "main: m3", "main: exit"},
		},
		{
			Program: &Program{Name: "yield alone is no switch", Tasks: []Task{
				task("main", SwitchHandler(5), Yield(), Yield(), Log("m")),
			}},
			Want: []string{"main: m", "main: exit", "main: handler finish"},
			Check: func(t *testing.T, _ Driver, st Stats, _ error) {
				if st.Switches != 2 { // into main once, out once
					t.Errorf("Switches = %d, want 2", st.Switches)
				}
			},
		},
		{
			Program: &Program{Name: "waker states", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), WakerState(1), WakerState(0), Yield(), WakerState(1), Resolve(0, 5),
					WakerState(1), Yield(), Yield(), WakerState(1)),
				task("A", Await(0), WakerState(1), Yield(), WakerState(1)),
			}},
			Want: []string{"main: waker A = QUEUED", "main: waker main = NO_STATUS", "main: waker A = WAITING",
				"main: waker A = QUEUED", "A: await e0 = 5", "A: waker A = RESULT", "A: waker A = NO_STATUS",
				"A: exit", "main: waker A = NO_STATUS", "main: exit"},
		},
		{
			Program: &Program{Name: "cancel before start ignores", Tasks: []Task{
				task("main", Spawn(1, Normal), Cancel(1), WakerState(1), Yield(), Log("m")),
				task("A", Log("a")),
			}},
			Want: []string{"main: waker A = IGNORED", "main: m", "main: exit"},
		},
		{
			Program: &Program{Name: "cancel queued keeps its outcome", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Resolve(0, 3), Cancel(1), Yield(), Cancel(1), Log("m")),
				task("A", Await(0), Log("a"), Continuing(Yield()), Log("b")),
			}},
			Want: []string{"A: await e0 = 3", "A: a", "A: yield ! cancelled", "A: b", "A: exit", "main: m", "main: exit"},
		},
		{
			Program: &Program{Name: "resolve before the tick beats an expired timeout", Events: 1, Tasks: []Task{
				// A 20ms timeout: it must not expire before the tick at A's
				// own suspend point, even with the thread descheduled there.
				task("main", Spawn(1, Normal), Yield(), Spin(30*time.Millisecond), Resolve(0, 9), Yield()),
				task("A", AwaitTimeout(0, 20*time.Millisecond)),
			}},
			Want: []string{"A: await e0 = 9", "A: exit", "main: exit"},
		},
		{
			Program: &Program{Name: "a timeout delivered by a tick beats a later resolve", Events: 1, Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Sleep(3*time.Millisecond), Resolve(0, 9), Log("m")),
				task("A", AwaitTimeout(0, time.Millisecond)),
			}},
			Want: []string{"A: await e0 ! timeout", "A: exit ! timeout", "main: m", "main: exit"},
		},
		{
			Program: &Program{Name: "sleep is woken by cancellation", Tasks: []Task{
				task("main", Spawn(1, Normal), Yield(), Cancel(1), Log("m")),
				task("A", Sleep(time.Hour), Log("unreached")),
			}},
			Want: []string{"main: m", "main: exit", "A: sleep ! cancelled", "A: exit ! cancelled"},
		},
	}
}
