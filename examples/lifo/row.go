package main

import (
	"time"

	"github.com/corobench/corobench/examples/lifo/sched"
	"github.com/corobench/corobench/scenarios"
)

// Row is the example row: package sched behind the scenarios' row
// contract. Every scenario runs on it; those needing a capability it does
// not implement report "not supported" with the reason Lacks gives.
var Row = scenarios.RowDef{
	Name:   "lifo",
	Doc:    "example row (examples/lifo): a cooperative runtime on goroutines, one running at a time, woken coroutines run next (LIFO), GOMAXPROCS=1",
	Colour: [3]uint8{140, 86, 75},
	// Sleep is time.Sleep on the idle path, so Go's timers and the
	// netpoller's millisecond wait bound its resolution.
	TimerFloor: func() string {
		return "clock=CLOCK_MONOTONIC (time.Now) wait=time.Sleep (Go timers: netpoller epoll_pwait with a ms timeout)"
	},
	// Its coroutines are goroutines, which Go keeps on a free list for
	// the life of the process: a new run is no cold runtime.
	SharedAcrossRuns: "its coroutines are goroutines, which Go keeps on a free list for the life of the process: a new sched.Runtime still reuses them, so no spawn but the process's first is cold",
	RunBlocking: func(_ scenarios.CellInfo, main func(rt scenarios.Blocking)) error {
		r := sched.New()
		r.Run(func() { main(lifo{r}) })
		return nil
	},
}

// lifo adapts *sched.Runtime to scenarios.Blocking and the capabilities
// it really has: Gates, Futures, SwitchPaths.
type lifo struct{ r *sched.Runtime }

var (
	_ scenarios.Blocking    = lifo{}
	_ scenarios.Gates       = lifo{}
	_ scenarios.Futures     = lifo{}
	_ scenarios.SwitchPaths = lifo{}
	_ scenarios.Explainer   = lifo{}
)

func (l lifo) Go(fn func())                { l.r.Go(fn) }
func (l lifo) Yield()                      { l.r.Yield() }
func (l lifo) Sleep(d time.Duration)       { l.r.Sleep(d) }
func (l lifo) NewSignal() scenarios.Signal { return l.r.NewSignal() }
func (l lifo) NewGate() scenarios.Gate     { return l.r.NewGate() }
func (l lifo) NewFuture() scenarios.Future { return l.r.NewFuture() }

// HandoffPath: the blocking coroutine sends the baton straight to the
// woken one's channel, but both are goroutines, so Go's scheduler does the
// switch (the receiver parks, the sender's send readies it).
func (lifo) HandoffPath() (string, map[string]string) {
	return "scheduler", map[string]string{
		"direct": "each coroutine is a goroutine: a hand-off is a channel send and receive, which always go through Go's scheduler",
	}
}

// Lacks says why the row has no other capability.
func (lifo) Lacks(capability string) (string, bool) {
	switch capability {
	case "BareSwitches":
		return "the lifo row's coroutines are goroutines: it has no switch of its own that bypasses Go's scheduler", true
	case "Priorities":
		return "the lifo row has one run queue and no priority levels (its policy is LIFO wake-ups, not priorities)", true
	case "Microtasks":
		return "the lifo row has no microtask queue", true
	case "Shutdowns":
		return "the lifo row has no cancellation, so no graceful shutdown", true
	case "Pipes", "TCP":
		return "the lifo row has no reactor: a read on a pipe or socket would block the whole runtime", true
	}
	return "", false
}
