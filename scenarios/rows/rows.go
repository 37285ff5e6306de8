// Package rows is corobench's own rows behind the scenarios' row contract:
// the stackful runtime (asm and coro backends), the stackless runtime (which
// runs the state-machine bodies) and the goroutine baseline (one core and
// all cores). It registers them with the scenarios registry as it
// initialises, in display order; each adapter implements scenarios.Blocking
// and exactly the capabilities its runtime has (sched.go, io.go, switch.go).
// A row from another module is registered the same way
// (scenarios.RegisterRow); see examples/lifo.
package rows

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	baseline "github.com/corobench/corobench/impl/goroutine-baseline"
	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

func init() {
	for _, d := range builtinRows() {
		scenarios.RegisterRow(d)
	}
}

// builtinRows defines corobench's own rows, in display order.
func builtinRows() []scenarios.RowDef {
	return []scenarios.RowDef{{
		Name:   scenarios.StackfulAsm,
		Doc:    "our runtime: our own Go-assembly switch between fiber stacks from our pool, GOMAXPROCS=1",
		Colour: [3]uint8{31, 119, 180},
		// Work offloaded to the reactor's pool runs as Go code on the
		// pool's threads (RowDef.PoolBound, offload.go).
		PoolBound: true,
		// Stack shrinking off: the runtime must never try to copy or free
		// a fiber stack (docs/design.md §3). It is defence in depth; the
		// fiber stacks' non-power-of-two bounds already turn any attempt
		// into a clean fatal error.
		GODEBUG:     "gcshrinkstackoff=1",
		TimerFloor:  stackfulTimerFloor(stackful.Asm),
		NoGCOn:      "the asm row cannot run with the collector on: a collection while a fiber is suspended frees what only that fiber's stack holds (docs/design.md §3)",
		RunBlocking: stackfulRunner(stackful.Asm),
	}, {
		Name:             scenarios.StackfulCoro,
		Doc:              "the same scheduler, waker and reactor, each coroutine a Go runtime coroutine (iter.Pull)",
		Colour:           [3]uint8{255, 127, 14},
		PoolBound:        true,
		TimerFloor:       stackfulTimerFloor(stackful.Coro),
		SharedAcrossRuns: "each coroutine of this row is a goroutine (iter.Pull), which Go keeps on its free list of finished goroutines, stack included, for the life of the process (runtime gfput/gfget): a fresh scheduler still reuses them, so no spawn but the process's first is cold",
		RunBlocking:      stackfulRunner(stackful.Coro),
	}, {
		Name:         scenarios.Stackless,
		Doc:          "the same semantics as explicit state machines (Resume + state field)",
		Colour:       [3]uint8{44, 160, 44},
		PoolBound:    true,
		TimerFloor:   stacklessTimerFloor,
		StateMachine: true,
	}, {
		Name:             scenarios.GoroutineSingle,
		Doc:              "goroutines, channels, time timers and Go's netpoller, GOMAXPROCS=1",
		Colour:           [3]uint8{214, 39, 40},
		TimerFloor:       goTimerFloor,
		SharedAcrossRuns: goroutinesShared,
		RunBlocking:      goroutineRunner(scenarios.GoroutineSingle),
	}, {
		Name:             scenarios.GoroutineMulti,
		Doc:              "the same with all cores",
		Colour:           [3]uint8{148, 103, 189},
		AllCores:         true,
		TimerFloor:       goTimerFloor,
		SharedAcrossRuns: goroutinesShared,
		RunBlocking:      goroutineRunner(scenarios.GoroutineMulti),
	}}
}

// goroutinesShared is why a goroutine row has no fresh runtime per run
// (RowDef.SharedAcrossRuns).
const goroutinesShared = "Go keeps finished goroutines on a free list, stack included, for the life of the process (runtime gfput/gfget), and the runtime cannot be started afresh: no spawn but the process's first is cold"

// goTimerFloor: Go's timers run on runtime.nanotime, and an idle P waits
// for the next one in the netpoller's epoll_pwait, whose timeout is in
// whole milliseconds: netpoll rounds a sub-millisecond delay up to 1 ms
// (runtime/netpoll_epoll.go, golang/go#79872).
func goTimerFloor() string {
	return "clock=CLOCK_MONOTONIC (runtime.nanotime, vDSO) wait=netpoller epoll_pwait with a ms timeout (a sub-ms timer may wait up to 1 ms)"
}

// goroutineRunner runs a blocking body on goroutines, checking that the
// process has the GOMAXPROCS the row stands for.
func goroutineRunner(row scenarios.Row) func(scenarios.CellInfo, func(scenarios.Blocking)) error {
	return func(cell scenarios.CellInfo, main func(rt scenarios.Blocking)) error {
		s, _ := scenarios.Lookup(cell.Scenario)
		if got, want := runtime.GOMAXPROCS(0), row.CellGOMAXPROCS(s); got != want {
			return fmt.Errorf("row %s needs GOMAXPROCS=%d but the process has %d: run it through benchrun, which sets it per cell", row, want, got)
		}
		rt := &goroutines{}
		rt.Run(func() { main(rt) })
		return nil
	}
}

// stackfulRunner runs a blocking body on a fresh stackful scheduler with
// the given backend. The row's per-scenario tuning lives here: the
// handoff scenario's via=scheduler cells turn the direct switch off
// (Options.ViaScheduler), so the two cells differ in nothing else.
func stackfulRunner(backend stackful.Backend) func(scenarios.CellInfo, func(scenarios.Blocking)) error {
	return func(cell scenarios.CellInfo, main func(rt scenarios.Blocking)) error {
		opts, err := StackfulOptions(backend, cell)
		if err != nil {
			return err
		}
		return runStackful(opts, main)
	}
}

// StackfulOptions returns the options a stackful row's runtime runs a cell
// with: the asm backend's handoffs go through the scheduler context in the
// handoff scenario's via=scheduler cells (Options.ViaScheduler), so the
// two cells differ in nothing else; and in a pool cell (a scenario that
// UsesPool) the reactor's pool has one thread per P beside the
// scheduler's (scenarios.ProcessPoolThreads: benchrun starts such a cell
// with GOMAXPROCS = 1 + scenarios.PoolThreads()), placed where benchrun
// asked (scenarios.ProcessPoolCPUs); the error is a placement that cannot
// be read.
func StackfulOptions(backend stackful.Backend, cell scenarios.CellInfo) (stackful.Options, error) {
	opts := stackful.Options{Backend: backend}
	opts.Reactor.DNSServer = dnsServer(cell) // the dns scenario's responder (dns.go)
	if backend == stackful.Asm {
		opts.ViaScheduler = cell.Scenario == "handoff" && cell.Params["via"] == "scheduler"
	}
	if s, ok := scenarios.Lookup(cell.Scenario); ok && s.UsesPool {
		// With one P this is 0, the reactor's default; the body then
		// reports not supported (PoolBound) before it offloads anything.
		opts.Reactor.PoolThreads = scenarios.ProcessPoolThreads()
		cpus, err := scenarios.ProcessPoolCPUs()
		if err != nil {
			return opts, err
		}
		opts.Reactor.PoolCPUs = cpus
	}
	return opts, nil
}

// Fibers returns the stackful rows' adapter for a scheduler with the given
// backend and ViaScheduler option, for tests that run a body on a
// scheduler of their own (inside its Run).
func Fibers(backend stackful.Backend, viaScheduler bool) scenarios.Blocking {
	return fibers{backend: backend, viaScheduler: viaScheduler}
}

func runStackful(opts stackful.Options, main func(rt scenarios.Blocking)) error {
	s, err := stackful.New(opts)
	if errors.Is(err, stackful.ErrNotSupported) {
		return scenarios.NotSupported("%v", strings.TrimPrefix(err.Error(), "not supported: "))
	}
	if err != nil {
		return err
	}
	runErr := s.Run(func() { main(fibers{backend: opts.Backend, viaScheduler: opts.ViaScheduler}) })
	return errors.Join(runErr, s.Close())
}

// goroutines adapts impl/goroutine-baseline to Blocking.
type goroutines struct{ baseline.Runtime }

func (g *goroutines) NewSignal() scenarios.Signal { return baseline.NewSignal() }

// fibers adapts impl/stackful's blocking API to Blocking. The scheduler is
// implicit (the one whose Run is in progress); the adapter only knows which
// backend it runs on. A cancellation error can only come from a shutdown,
// which no scenario body starts unless it says so, so getting one is a
// broken run and panics.
type fibers struct {
	backend      stackful.Backend
	viaScheduler bool // stackful.Options.ViaScheduler: no direct switches
}

func (fibers) Go(fn func())                { stackful.Go(fn) }
func (fibers) Yield()                      { must(stackful.Yield()) }
func (fibers) NewSignal() scenarios.Signal { return fiberSignal{stackful.NewEvent()} }
func (fibers) Sleep(d time.Duration)       { must(stackful.Sleep(d)) }

// fiberSignal is a reusable one-shot event: Fire resolves it (a second Fire
// before the Wait is absorbed), Wait awaits it and re-arms it.
type fiberSignal struct{ ev *stackful.Event }

func (s fiberSignal) Fire() { s.ev.Resolve(nil) }

func (s fiberSignal) Wait() {
	_, err := stackful.Await(s.ev)
	must(err)
	s.ev.Reset()
}

func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("scenarios: a blocking operation failed in a scenario body: %v", err))
	}
}

// reactorTimerFloor names the clock and the blocking wait of the reactor
// that the stackful and stackless rows sleep on (reactor.Loop.WaitMethod:
// epoll_pwait2 with a nanosecond timeout and the thread's timer slack, or
// the timerfd fallback), found once by creating a loop as those rows do.
var reactorTimerFloor = sync.OnceValue(func() string {
	l, err := reactor.New()
	if err != nil {
		return "clock=CLOCK_MONOTONIC wait=corobench reactor (unavailable: " + err.Error() + ")"
	}
	defer l.Close()
	return l.WaitMethod()
})
