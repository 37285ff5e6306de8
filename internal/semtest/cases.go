package semtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Cases returns every semantic test case, each a fresh value. The comment on
// each case traces the schedule that produces its log.
func Cases() []Case {
	return append([]Case{
		fifoOrder(),
		highPriorityFirst(),
		highPriorityWake(),
		fastPath(),
		resetReuse(),
		rejectAndDoubleResolve(),
		waitersInSubscriptionOrder(),
		microtaskOrder(),
		microtaskErrorHandled(),
		microtaskErrorFailsRun(),
		microtaskAfterLastTask(),
		wakerStates(),
		timeoutExpires(),
		sleepOrder(),
		sleepZeroThroughTimer(),
		raceResolveBeforeTick(),
		raceTimeoutFirst(),
		cancelWaiting(),
		cancelDeliveredOnce(),
		cancelQueuedFirstWins(),
		cancelAtOnceKeepsWakerStatus(),
		shutdownRunsEveryDefer(),
		shutdownFinalCleanup(),
		shutdownFinalRunQueueOrder(),
		deadlockNamesWaiters(),
		switchHandlerKeep(),
		yieldAloneNoSwitch(),
		mainStartHandlers(),
		directSwitchCount(),
		leaveSpawnRunsFirst(),
		leaveSpawnRunsFirstAfterWait(),
		preRunHandlers(),
		shutdownSpawnStartsCancelled(),
		destroyStarted(),
		generalAny(),
		generalAll(),
		generalFastPath(),
	}, ioCases()...)
}

// generalAny: the first subscribed event to fire ends the wait; the other,
// fired afterwards, is not in the triggered set (its subscription stopped).
func generalAny() Case {
	return Case{
		Program: &Program{Name: "general/any", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), AwaitAny(0, 1), Log("m")}},
			{"A", []Op{Resolve(1, 7), Resolve(0, 8)}},
		}},
		Want: []string{"A: exit", "main: awaitany e0 e1 = 7, triggered e1", "main: m", "main: exit"},
	}
}

// generalAll: a custom callback ends the wait only when all three events
// have fired; the triggered set lists them in firing order.
func generalAll() Case {
	return Case{
		Program: &Program{Name: "general/all", Events: 3, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), AwaitAll(0, 1, 2), Log("m")}},
			{"A", []Op{Resolve(2, 1), Yield(), Resolve(0, 1), Yield(), Resolve(1, 1)}},
		}},
		Want: []string{"A: exit", "main: awaitall e0 e1 e2 = 3, triggered e2 e0 e1", "main: m", "main: exit"},
	}
}

// generalFastPath: an event that fired before the wait decides it at once:
// no suspend, so A (queued) has not run yet.
func generalFastPath() Case {
	return Case{
		Program: &Program{Name: "general/fast-path", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Resolve(0, 5), AwaitAny(1, 0), Log("m")}},
			{"A", []Op{Log("a")}},
		}},
		Want: []string{"main: awaitany e1 e0 = 5, triggered e0", "main: m", "main: exit", "A: a", "A: exit"},
	}
}

// leaveSpawnRunsFirst: Leave is called before the scheduler picks the next
// task, so a High task spawned by a Leave handler runs before B, which was
// queued first (the reference design's shutdown-destructor example).
// Queue: [B] -> main yields [B main] -> Leave spawns H [H B main] -> H, B,
// main.
func leaveSpawnRunsFirst() Case {
	return Case{
		Program: &Program{Name: "switch-handler/leave-spawn-high", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), LeaveSpawn(2, High), Yield(), Log("m")}},
			{"B", []Op{Log("b")}},
			{"H", []Op{Log("h")}},
		}},
		Want: []string{
			"main: leave handler spawns H", "H: h", "H: exit", "B: b", "B: exit",
			"main: m", "main: exit",
		},
	}
}

// leaveSpawnRunsFirstAfterWait: the same when main suspends in a wait.
func leaveSpawnRunsFirstAfterWait() Case {
	return Case{
		Program: &Program{Name: "switch-handler/leave-spawn-high-wait", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), LeaveSpawn(2, High), Await(0), Log("m")}},
			{"B", []Op{Log("b"), Resolve(0, 1)}},
			{"H", []Op{Log("h")}},
		}},
		Want: []string{
			"main: leave handler spawns H", "H: h", "H: exit", "B: b", "B: exit",
			"main: await e0 = 1", "main: m", "main: exit",
		},
	}
}

// preRunHandlers: a handler added before the run with the "current
// coroutine" form binds to main and sees its start as Enter.
func preRunHandlers() Case {
	return Case{
		Program: &Program{Name: "switch-handler/pre-run", PreRunHandlers: []int{5}, Tasks: []Task{
			{"main", []Op{Log("m"), Spawn(1, Normal), Yield(), Log("m2")}},
			{"A", []Op{Log("a")}},
		}},
		Want: []string{
			"main: pre-run handler 0 enter", "main: m", "main: pre-run handler 0 leave",
			"A: a", "A: exit", "main: pre-run handler 0 enter", "main: m2", "main: exit",
			"main: pre-run handler 0 finish",
		},
	}
}

// shutdownSpawnStartsCancelled: a cleanup that spawns a sleeper during a
// graceful shutdown does not hold the run open: the sleeper starts
// cancelled, so its Sleep returns Cancelled at once.
func shutdownSpawnStartsCancelled() Case {
	return Case{
		Program: &Program{Name: "shutdown/spawn-starts-cancelled", Tasks: []Task{
			{"main", []Op{DeferSpawn(1, Normal), Shutdown(), Log("m")}},
			{"S", []Op{Sleep(2 * time.Second), Log("s")}},
		}},
		Want: []string{"main: m", "main: exit", "S: sleep ! cancelled", "S: exit ! cancelled"},
	}
}

// destroyStarted: Destroy of a started task, queued (A) or waiting (B),
// marks it Ignored; when the scheduler reaches it, it unwinds (its defers
// run) without returning into its code. Queue: [A B] -> main yields
// [A B main] -> A yields [B main A] -> B waits -> main destroys A (stays
// queued) and B (woken, queued) [A B] -> main yields [A B main].
func destroyStarted() Case {
	return Case{
		Program: &Program{Name: "destroy/started", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Yield(), Destroy(1), Destroy(2),
				WakerState(1), WakerState(2), Yield(), Log("m")}},
			{"A", []Op{Defer("a"), Yield(), Log("a-after")}},
			{"B", []Op{Defer("b"), Await(0), Log("b-after")}},
		}},
		Want: []string{
			"main: waker A = IGNORED", "main: waker B = IGNORED",
			"A: defer a", "A: exit ! cancelled", "B: defer b", "B: exit ! cancelled",
			"main: m", "main: exit",
		},
	}
}

const (
	short = time.Millisecond
	long  = 20 * time.Millisecond
	spin  = 5 * time.Millisecond // > the 1ms tick throttle bound, > short
	// The race cases need a timer that must not expire between its start and
	// the tick at its own task's suspend point, even when the thread is
	// descheduled there (a loaded 2-core machine, qemu): raceTimeout is that
	// margin, and raceSpin lets it expire unnoticed.
	raceTimeout = long
	raceSpin    = raceTimeout + 10*time.Millisecond
)

// fifoOrder: spawned tasks run in spawn order; Yield sends the task to the tail.
func fifoOrder() Case {
	worker := func(name, tag string) Task {
		return Task{name, []Op{Log(tag + "1"), Yield(), Log(tag + "2")}}
	}
	return Case{
		Program: &Program{Name: "fifo", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Spawn(3, Normal), Log("m1"), Yield(), Log("m2")}},
			worker("A", "a"), worker("B", "b"), worker("C", "c"),
		}},
		// Queue after the spawns [A B C]; main yields: [A B C main].
		Want: []string{
			"main: m1", "A: a1", "B: b1", "C: c1", "main: m2", "main: exit",
			"A: a2", "A: exit", "B: b2", "B: exit", "C: c2", "C: exit",
		},
	}
}

// highPriorityFirst: a High spawn goes to the head of the queue.
func highPriorityFirst() Case {
	return Case{
		Program: &Program{Name: "priority/spawn", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Spawn(3, High), Yield(), Log("m")}},
			{"A", []Op{Log("a")}}, {"B", []Op{Log("b")}}, {"H", []Op{Log("h")}},
		}},
		// [A B] then H at the head: [H A B]; main yields: [H A B main].
		Want: []string{"H: h", "H: exit", "A: a", "A: exit", "B: b", "B: exit", "main: m", "main: exit"},
	}
}

// highPriorityWake: a High task woken by an event jumps the queue.
func highPriorityWake() Case {
	return Case{
		Program: &Program{Name: "priority/wake", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, High), Yield(), Spawn(2, Normal), Spawn(3, Normal), Resolve(0, 1), Yield(), Log("m")}},
			{"W", []Op{Await(0), Log("w")}},
			{"A", []Op{Log("a")}}, {"B", []Op{Log("b")}},
		}},
		// main yields to W, which waits on e0; main spawns [A B]; the resolve
		// puts W at the head: [W A B]; main yields: [W A B main].
		Want: []string{"W: await e0 = 1", "W: w", "W: exit", "A: a", "A: exit", "B: b", "B: exit", "main: m", "main: exit"},
	}
}

// fastPath: Await on a fired event returns before anyone else runs.
func fastPath() Case {
	return Case{
		Program: &Program{Name: "fast-path", Events: 1, Tasks: []Task{
			{"main", []Op{Resolve(0, 7), Spawn(1, Normal), Await(0), Log("m")}},
			{"A", []Op{Log("a")}},
		}},
		// No suspend: A, queued, runs only when main finishes.
		Want: []string{"main: await e0 = 7", "main: m", "main: exit", "A: a", "A: exit"},
	}
}

// resetReuse: a fired event, Reset, is pending again and fires anew.
func resetReuse() Case {
	return Case{
		Program: &Program{Name: "event/reset", Events: 1, Tasks: []Task{
			{"main", []Op{Resolve(0, 1), Await(0), Reset(0), Spawn(1, Normal), Await(0), Await(0)}},
			{"A", []Op{Resolve(0, 2)}},
		}},
		Want: []string{"main: await e0 = 1", "A: exit", "main: await e0 = 2", "main: await e0 = 2", "main: exit"},
	}
}

// rejectAndDoubleResolve: a reject reaches the waiter; firing twice is ignored.
func rejectAndDoubleResolve() Case {
	return Case{
		Program: &Program{Name: "event/reject", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Reject(0), Resolve(0, 3), Yield(), Await(0)}},
			{"A", []Op{Continuing(Await(0)), Log("a")}},
		}},
		Want: []string{"main: resolve e0 ignored: already fired", "A: await e0 ! rejected", "A: a", "A: exit",
			"main: await e0 ! rejected", "main: exit ! rejected"},
	}
}

// waitersInSubscriptionOrder: one resolve wakes every waiter, in the order
// they subscribed.
func waitersInSubscriptionOrder() Case {
	return Case{
		Program: &Program{Name: "event/waiters", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Spawn(3, Normal), Yield(), Resolve(0, 4), Log("m")}},
			{"A", []Op{Await(0)}}, {"B", []Op{Await(0)}}, {"C", []Op{Await(0)}},
		}},
		Want: []string{"main: m", "main: exit", "A: await e0 = 4", "A: exit", "B: await e0 = 4", "B: exit",
			"C: await e0 = 4", "C: exit"},
	}
}

// microtaskOrder: microtasks run FIFO at the next suspend point, including a
// task's finish.
func microtaskOrder() Case {
	return Case{
		Program: &Program{Name: "microtask/order", Tasks: []Task{
			{"main", []Op{Microtask("m1", false), Microtask("m2", false), Spawn(1, Normal), Log("x"), Yield(), Log("y")}},
			{"A", []Op{Microtask("m3", false), Log("a")}},
		}},
		Want: []string{"main: x", "micro m1", "micro m2", "A: a", "A: exit", "micro m3", "main: y", "main: exit"},
	}
}

// microtaskErrorHandled: a failing microtask stops the batch; the handler
// gets its error; the rest run at the next suspend point.
func microtaskErrorHandled() Case {
	return Case{
		Program: &Program{Name: "microtask/error-handled", MicrotaskErrors: HandleErrors, Tasks: []Task{
			{"main", []Op{Microtask("m1", false), Microtask("m2", true), Microtask("m3", false), Yield(), Log("after"), Yield(), Log("end")}},
		}},
		// The first Yield runs m1 and m2 (fails), then main continues (no one
		// else is queued): m3 waits for the second Yield.
		Want: []string{"micro m1", "micro m2 failed", "handler: microtask m2", "main: after", "micro m3", "main: end", "main: exit"},
	}
}

// microtaskErrorFailsRun: with no handler a microtask error starts a
// graceful shutdown and fails the run.
func microtaskErrorFailsRun() Case {
	return Case{
		Program: &Program{Name: "microtask/error-fails-run", MicrotaskErrors: FailRun, Events: 2, Tasks: []Task{
			{"main", []Op{Defer("dm"), Spawn(1, Normal), Microtask("m1", true), Microtask("m2", false), Yield(), Await(1), Log("unreached")}},
			{"A", []Op{Defer("da"), Await(0)}},
		}},
		// At main's Yield m1 fails: shutdown; A, not started, is dropped
		// (IGNORED); main keeps its Yield outcome and gets the cancellation
		// from Await(e1). m2 runs at main's finish (the batch resumes).
		Want:    []string{"micro m1 failed", "main: await e1 ! cancelled", "main: defer dm", "main: exit ! cancelled", "micro m2"},
		WantErr: MicrotaskFailed,
	}
}

// microtaskAfterLastTask: the microtasks behind a failed one stay queued even
// when no task is left to reach another suspend point: the run ends only
// once they have run.
func microtaskAfterLastTask() Case {
	return Case{
		Program: &Program{Name: "microtask/after-last-task", MicrotaskErrors: HandleErrors, Tasks: []Task{
			{"main", []Op{Microtask("x", true), Microtask("y", false), Log("m")}},
		}},
		// main's finish is the suspend point: x fails and stops the batch;
		// no task is left, and y still runs before the run ends.
		Want: []string{"main: m", "main: exit", "micro x failed", "handler: microtask x", "micro y"},
	}
}

// wakerStates walks a waker through every state.
func wakerStates() Case {
	return Case{
		Program: &Program{Name: "waker/states", Events: 1, Tasks: []Task{
			{"main", []Op{
				Spawn(1, Normal), WakerState(1), Yield(),
				WakerState(1), Resolve(0, 5), WakerState(1), Yield(),
				WakerState(1), Spawn(2, Normal), Cancel(2), WakerState(2), Yield(), WakerState(2),
			}},
			{"A", []Op{WakerState(1), Await(0), WakerState(1)}},
			{"B", []Op{Log("never")}},
		}},
		Want: []string{
			"main: waker A = QUEUED", // spawned, not started
			"A: waker A = NO_STATUS", // running
			"main: waker A = WAITING",
			"main: waker A = QUEUED", // woken, not running yet
			"A: await e0 = 5",
			"A: waker A = RESULT",
			"A: exit",
			"main: waker A = NO_STATUS", // finished
			"main: waker B = IGNORED",   // cancelled before it started
			"main: waker B = NO_STATUS", // dropped, never ran
			"main: exit",
		},
	}
}

// timeoutExpires: an AwaitTimeout on an event nobody fires times out.
func timeoutExpires() Case {
	return Case{
		Program: &Program{Name: "timeout/expires", Events: 1, Tasks: []Task{
			{"main", []Op{Continuing(AwaitTimeout(0, short)), Log("m")}},
		}},
		Want: []string{"main: await e0 ! timeout", "main: m", "main: exit"},
	}
}

// sleepOrder: sleepers wake in deadline order, not sleep order.
func sleepOrder() Case {
	return Case{
		Program: &Program{Name: "timer/sleep-order", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal)}},
			{"A", []Op{Sleep(long), Log("a")}},
			{"B", []Op{Sleep(short), Log("b")}},
		}},
		Want: []string{"main: exit", "B: b", "B: exit", "A: a", "A: exit"},
	}
}

// sleepZeroThroughTimer: Sleep(0) is not a Yield and does not return at once:
// it suspends (the microtask batch runs) on a reactor timer that fires at the
// next tick, and the timer wakes the task like any event, by its priority.
// H spins past the tick bound first, so that tick happens at H's own suspend
// point and wakes it there: High puts it back at the head, before A. (A Yield
// would have put H behind A; a Sleep that returned at once would have logged
// "h" before the microtask ran.)
func sleepZeroThroughTimer() Case {
	return Case{
		Program: &Program{Name: "timer/sleep-zero", Tasks: []Task{
			{"main", []Op{Spawn(1, High), Spawn(2, Normal), Log("m")}},
			{"H", []Op{Spin(spin), Microtask("mt", false), Sleep(0), Log("h")}},
			{"A", []Op{Log("a")}},
		}},
		Want: []string{"main: m", "main: exit", "micro mt", "H: h", "H: exit", "A: a", "A: exit"},
	}
}

// raceResolveBeforeTick: the timer has expired but no tick has noticed it;
// the resolve wins and the expired timer is ignored.
func raceResolveBeforeTick() Case {
	return Case{
		Program: &Program{Name: "race/resolve-wins", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Spin(raceSpin), Resolve(0, 1), WakerState(1), Yield(), Sleep(spin), Log("m")}},
			{"A", []Op{AwaitTimeout(0, raceTimeout), Log("a")}},
		}},
		Want: []string{"main: waker A = QUEUED", "A: await e0 = 1", "A: a", "A: exit", "main: m", "main: exit"},
	}
}

// raceTimeoutFirst: a tick delivers the timeout; a resolve after it (before
// A runs) is ignored for A's wait, but the event keeps its value.
func raceTimeoutFirst() Case {
	return Case{
		Program: &Program{Name: "race/timeout-wins", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Spin(raceSpin), WakerState(1), Yield(), WakerState(1), Resolve(0, 2), Yield()}},
			{"A", []Op{Continuing(AwaitTimeout(0, raceTimeout)), Await(0)}},
		}},
		// main's second Yield queues main, then ticks the reactor (the
		// throttle has passed): A's timer fires, A is queued behind main.
		Want: []string{"main: waker A = WAITING", "main: waker A = QUEUED", "A: await e0 ! timeout", "A: await e0 = 2", "A: exit", "main: exit"},
	}
}

// cancelWaiting: cancelling a waiting task wakes it with Cancelled; its
// defers run.
func cancelWaiting() Case {
	return Case{
		Program: &Program{Name: "cancel/waiting", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Cancel(1), WakerState(1), Yield(), Resolve(0, 1), Log("m")}},
			{"A", []Op{Defer("da"), Await(0), Log("unreached")}},
		}},
		Want: []string{"main: waker A = QUEUED", "A: await e0 ! cancelled", "A: defer da", "A: exit ! cancelled", "main: m", "main: exit"},
	}
}

// cancelDeliveredOnce: after a cancellation, later blocking ops work.
func cancelDeliveredOnce() Case {
	return Case{
		Program: &Program{Name: "cancel/once", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Cancel(1), Yield(), Resolve(1, 3)}},
			{"A", []Op{Continuing(Await(0)), Log("a"), Await(1)}},
		}},
		Want: []string{"A: await e0 ! cancelled", "A: a", "main: exit", "A: await e1 = 3", "A: exit"},
	}
}

// cancelQueuedFirstWins: a task woken by a resolve keeps that outcome; the
// cancellation comes from its next blocking op.
func cancelQueuedFirstWins() Case {
	return Case{
		Program: &Program{Name: "cancel/queued", Events: 1, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Resolve(0, 1), Cancel(1), Yield(), Log("m")}},
			{"A", []Op{Await(0), Yield(), Log("unreached")}},
		}},
		Want: []string{"A: await e0 = 1", "A: yield ! cancelled", "A: exit ! cancelled", "main: m", "main: exit"},
	}
}

// cancelAtOnceKeepsWakerStatus: a blocking op that returns at once with a
// pending cancellation does not touch the waker: it stays NO_STATUS after a
// Yield resumed, RESULT after an Await resumed.
func cancelAtOnceKeepsWakerStatus() Case {
	return Case{
		Program: &Program{Name: "cancel/at-once-keeps-waker", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Cancel(1), Yield(), Resolve(1, 5), Cancel(1), Log("m")}},
			{"A", []Op{Yield(), Continuing(Await(0)), WakerState(1), Await(1), Continuing(Yield()), WakerState(1)}},
		}},
		// A yields [main A]; main cancels the queued A and yields [A main];
		// A resumes from its Yield (NO_STATUS) and its Await returns at once.
		// A waits on e1; main resolves it (A queued with its result), cancels
		// A again and ends; A resumes from the Await (RESULT) and its Yield
		// returns at once.
		Want: []string{
			"A: await e0 ! cancelled", "A: waker A = NO_STATUS", "main: m", "main: exit",
			"A: await e1 = 5", "A: yield ! cancelled", "A: waker A = RESULT", "A: exit",
		},
	}
}

// shutdownRunsEveryDefer: Shutdown cancels every task, in spawn order.
func shutdownRunsEveryDefer() Case {
	return Case{
		Program: &Program{Name: "shutdown/defers", Events: 3, Tasks: []Task{
			{"main", []Op{Defer("dm"), Spawn(1, Normal), Spawn(2, Normal), Spawn(3, Normal), Yield(), Shutdown(), Await(2)}},
			{"A", []Op{Defer("da1"), Defer("da2"), Await(0)}},
			{"B", []Op{Defer("db"), Sleep(time.Hour)}},
			{"C", []Op{Defer("dc"), Yield(), Log("c"), Await(1)}},
		}},
		// A waits, B sleeps, C yields: [main C]. Shutdown: main (running)
		// and C (queued) get it at their next op; A then B are woken: [C A B].
		Want: []string{
			"main: await e2 ! cancelled", "main: defer dm", "main: exit ! cancelled",
			"C: c", "C: await e1 ! cancelled", "C: defer dc", "C: exit ! cancelled",
			"A: await e0 ! cancelled", "A: defer da2", "A: defer da1", "A: exit ! cancelled",
			"B: sleep ! cancelled", "B: defer db", "B: exit ! cancelled",
		},
	}
}

// shutdownFinalCleanup: a task that ignores the cancellation and waits again
// is unwound in final cleanup: its op does not return, its defers run.
func shutdownFinalCleanup() Case {
	return Case{
		Program: &Program{Name: "shutdown/final-cleanup", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Shutdown(), Log("m")}},
			{"A", []Op{Defer("da"), Continuing(Await(0)), Continuing(Await(1)), Log("unreached")}},
		}},
		Want: []string{"main: m", "main: exit", "A: await e0 ! cancelled", "A: defer da", "A: exit ! cancelled"},
	}
}

// shutdownFinalRunQueueOrder: final cleanup wakes the leftovers in spawn
// order, each enqueued by its priority, and unwinds them in run-queue order:
// the High task B, spawned after A, unwinds first.
func shutdownFinalRunQueueOrder() Case {
	leftover := func(d string) []Op {
		return []Op{Defer(d), Continuing(Await(0)), Continuing(Await(1)), Log("unreached")}
	}
	return Case{
		Program: &Program{Name: "shutdown/final-run-queue-order", Events: 2, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, High), Yield(), Shutdown(), Log("m")}},
			{"A", leftover("da")},
			{"B", leftover("db")},
		}},
		// [B A main]: B and A wait on e0. Shutdown wakes A (tail), then B
		// (head): [B A]. Both ignore it and wait on e1; final cleanup wakes A
		// then B the same way: [B A].
		Want: []string{
			"main: m", "main: exit", "B: await e0 ! cancelled", "A: await e0 ! cancelled",
			"B: defer db", "B: exit ! cancelled", "A: defer da", "A: exit ! cancelled",
		},
	}
}

// deadlockNamesWaiters: everyone waits, nothing can fire: the run fails
// naming the waiters, then shuts down gracefully. The main task has a name
// of its own, which the error must use too.
func deadlockNamesWaiters() Case {
	return Case{
		Program: &Program{Name: "deadlock", Events: 2, Tasks: []Task{
			{"root", []Op{Spawn(1, Normal), Yield(), Await(0)}},
			{"waiter-a", []Op{Defer("da"), Await(1)}},
		}},
		Want: []string{
			"root: await e0 ! cancelled", "root: exit ! cancelled",
			"waiter-a: await e1 ! cancelled", "waiter-a: defer da", "waiter-a: exit ! cancelled",
		},
		WantErr: Deadlock,
		Check: func(t *testing.T, d Driver, _ Stats, err error) {
			want := []string{"root", "waiter-a"}
			if got := d.DeadlockNames(err); !slices.Equal(got, want) {
				t.Errorf("%s: deadlock error lists %q, want %q (Task.Name, spawn order)", d.Name(), got, want)
			}
			for _, name := range want {
				if err == nil || !strings.Contains(err.Error(), name) {
					t.Errorf("%s: deadlock error %q does not name waiting task %q", d.Name(), err, name)
				}
			}
		},
	}
}

// switchHandlerKeep: a handler is called at real switches only and removed
// when it returns false (after Keep calls).
func switchHandlerKeep() Case {
	return Case{
		Program: &Program{Name: "switch-handler/keep", Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Spawn(2, Normal), Yield(), Yield(), Yield(), Log("m")}},
			{"A", []Op{SwitchHandler(2), Yield(), Yield(), Yield(), Log("a")}},
			{"B", []Op{SwitchHandler(10), Log("b")}},
		}},
		// A's handler: leave (kept), enter (kept), leave (removed). B's sees
		// only its finish. Queue: [A B main] -> A yields [B main A] -> B ends
		// -> main yields [A main] -> A yields [main A] -> main yields
		// [A main] -> A yields [main A] -> main ends -> A ends.
		Want: []string{
			"A: handler leave", "B: b", "B: exit", "B: handler finish",
			"A: handler enter", "A: handler leave",
			"main: m", "main: exit", "A: a", "A: exit",
		},
	}
}

// yieldAloneNoSwitch: a Yield with nobody else ready continues without a
// switch, so no Leave/Enter.
func yieldAloneNoSwitch() Case {
	return Case{
		Program: &Program{Name: "switch-handler/yield-alone", Tasks: []Task{
			{"main", []Op{SwitchHandler(10), Yield(), Yield(), Log("m")}},
		}},
		Want: []string{"main: m", "main: exit", "main: handler finish"},
	}
}

// mainStartHandlers: global handlers are copied into main and fired as Enter.
func mainStartHandlers() Case {
	return Case{
		Program: &Program{Name: "switch-handler/main-start", MainStartHandlers: []int{0, 5}, Tasks: []Task{
			{"main", []Op{Log("m"), Spawn(1, Normal), Yield(), Log("m2")}},
			{"A", []Op{Log("a")}},
		}},
		Want: []string{
			"main: start handler 0 enter", "main: start handler 1 enter", "main: m",
			"main: start handler 1 leave", "A: a", "A: exit", "main: start handler 1 enter",
			"main: m2", "main: exit", "main: start handler 1 finish",
		},
	}
}

// pingPong returns a program in which main and P hand control back and
// forth n times through two reusable events.
func pingPong(n int) *Program {
	return &Program{Name: fmt.Sprintf("pingpong-%d", n), Events: 2, Tasks: []Task{
		{"main", append([]Op{Spawn(1, Normal)}, Repeat(n, Resolve(0, 1), Await(1), Reset(1))...)},
		{"P", Repeat(n, Await(0), Reset(0), Resolve(1, 2))},
	}}
}

// pingPongLog: P's last Resolve wakes main, then P ends before main runs.
func pingPongLog(n int) []string {
	var log []string
	for i := 0; i < n-1; i++ {
		log = append(log, "P: await e0 = 1", "main: await e1 = 2")
	}
	return append(log, "P: await e0 = 1", "P: exit", "main: await e1 = 2", "main: exit")
}

// directSwitchCount proves what the switch counters say about handoffs: the
// difference between a ping-pong of 2n and of n round trips is n round trips
// of 2 handoffs each, which cost 1 switch each with direct switching (none
// through the scheduler) and 2 through the scheduler otherwise.
func directSwitchCount() Case {
	const n = 50
	return Case{
		Program: pingPong(n),
		Want:    pingPongLog(n),
		Check: func(t *testing.T, d Driver, small Stats, _ error) {
			out, err := Exec(d, pingPong(2*n))
			if err != nil || out.Err != nil {
				t.Fatalf("%s: pingpong(%d): %v %v", d.Name(), 2*n, err, out.Err)
			}
			switches := out.Stats.Switches - small.Switches
			viaSched := out.Stats.SchedulerSwitches - small.SchedulerSwitches
			handoffs := uint64(2 * n)
			if d.DirectSwitch() {
				if switches != handoffs || viaSched != 0 {
					t.Errorf("%s: %d extra handoffs cost %d switches (%d through the scheduler), want %d (0): one direct switch per handoff",
						d.Name(), handoffs, switches, viaSched, handoffs)
				}
			} else if switches != 2*handoffs || viaSched != 2*handoffs {
				t.Errorf("%s: %d extra handoffs cost %d switches (%d through the scheduler), want %d (%d): two per handoff, via the scheduler",
					d.Name(), handoffs, switches, viaSched, 2*handoffs, 2*handoffs)
			}
			t.Logf("%s: %d handoffs: %d switches, %d through the scheduler", d.Name(), handoffs, switches, viaSched)
		},
	}
}
