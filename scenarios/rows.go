package scenarios

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	baseline "github.com/corobench/corobench/impl/goroutine-baseline"
	"github.com/corobench/corobench/impl/stackful"
)

// Row names one implementation: a column of every comparison.
type Row string

// The rows, in display order (docs/design.md §2, "Rows").
const (
	StackfulAsm     Row = "stackful-asm"
	StackfulCoro    Row = "stackful-coro"
	Stackless       Row = "stackless"
	GoroutineSingle Row = "goroutine-single"
	GoroutineMulti  Row = "goroutine-multi"
)

// Rows lists every row in display order. Every other list of rows (the
// --impl flag, the harness plan, cells.Rows, the report's tables and chart
// colours) derives from it and from RowFacts.
var Rows = []Row{StackfulAsm, StackfulCoro, Stackless, GoroutineSingle, GoroutineMulti}

// RowFact is what the report and the README say about a row besides its
// figures.
type RowFact struct {
	// Doc says what the row is, in one sentence.
	Doc string
	// Colour is the row's colour in every chart (RGB).
	Colour [3]uint8
}

// RowFacts holds the facts of every row in Rows.
var RowFacts = map[Row]RowFact{
	StackfulAsm:     {Doc: "our runtime: our own Go-assembly switch between fiber stacks from our pool, GOMAXPROCS=1", Colour: [3]uint8{31, 119, 180}},
	StackfulCoro:    {Doc: "the same scheduler, waker and reactor, each coroutine a Go runtime coroutine (iter.Pull)", Colour: [3]uint8{255, 127, 14}},
	Stackless:       {Doc: "the same semantics as explicit state machines (Resume + state field)", Colour: [3]uint8{44, 160, 44}},
	GoroutineSingle: {Doc: "goroutines, channels, time timers and Go's netpoller, GOMAXPROCS=1", Colour: [3]uint8{214, 39, 40}},
	GoroutineMulti:  {Doc: "the same with all cores", Colour: [3]uint8{148, 103, 189}},
}

// RowNames returns the rows as strings, for flag help and errors.
func RowNames() []string {
	names := make([]string, len(Rows))
	for i, r := range Rows {
		names[i] = string(r)
	}
	return names
}

// ParseRow returns the row with the given name.
func ParseRow(name string) (Row, bool) {
	for _, r := range Rows {
		if string(r) == name {
			return r, true
		}
	}
	return "", false
}

// GOMAXPROCS returns the GOMAXPROCS a row's cells run with. Our runtimes
// are single-threaded by design (TrueAsync's model), so they get one P,
// like goroutine-single; only goroutine-multi gets every core.
func (r Row) GOMAXPROCS() int {
	if r == GoroutineMulti {
		return runtime.NumCPU()
	}
	return 1
}

// GODEBUG returns the GODEBUG setting a row's child process starts with.
// The asm row turns stack shrinking off: the runtime must never try to copy
// or free a fiber stack (docs/design.md §3). It is defence in depth; the fiber
// stacks' non-power-of-two bounds already turn any attempt into a clean
// fatal error.
func (r Row) GODEBUG() string {
	if r == StackfulAsm {
		return "gcshrinkstackoff=1"
	}
	return ""
}

// TimerFloor says which clock and which wait the row's timers use: the
// resolution below which its timer figures mean nothing.
func (r Row) TimerFloor() string {
	switch r {
	case GoroutineSingle, GoroutineMulti:
		// Go's timers run on runtime.nanotime, and an idle P waits for
		// the next one in the netpoller's epoll_pwait, whose timeout is in
		// whole milliseconds: netpoll rounds a sub-millisecond delay up to
		// 1 ms (runtime/netpoll_epoll.go, golang/go#79872).
		return "clock=CLOCK_MONOTONIC (runtime.nanotime, vDSO) wait=netpoller epoll_pwait with a ms timeout (a sub-ms timer may wait up to 1 ms)"
	default:
		// The stackful and stackless rows sleep on the corobench reactor.
		return reactorTimerFloor()
	}
}

// Blocking is what a blocking body may use. The stackful rows and the
// goroutine rows implement it; a body written against it is straight-line Go
// that runs unchanged on both.
type Blocking interface {
	// Go starts fn as a new coroutine; the run ends when all have returned.
	Go(fn func())
	// Yield lets every other ready coroutine run before the caller resumes.
	Yield()
	// NewSignal returns a hand-off point between two coroutines.
	NewSignal() Signal
	// Sleep suspends the caller for at least d.
	Sleep(d time.Duration)
}

// Signal is a reusable hand-off: Fire wakes the coroutine blocked in Wait,
// or lets the next Wait pass. On the goroutine rows it is an unbuffered
// channel, so Fire also waits for the receiver: that rendezvous is the price
// Go charges for a hand-off.
type Signal interface {
	Fire()
	Wait()
}

// runBlocking runs main as the first coroutine of a fresh runtime of the
// given row and returns when every coroutine has finished. tune, if not nil,
// adjusts the stackful runtime's options.
func runBlocking(row Row, tune func(*stackful.Options), main func(rt Blocking)) error {
	switch row {
	case GoroutineSingle, GoroutineMulti:
		if got, want := runtime.GOMAXPROCS(0), row.GOMAXPROCS(); got != want {
			return fmt.Errorf("row %s needs GOMAXPROCS=%d but the process has %d: run it through benchrun, which sets it per cell", row, want, got)
		}
		rt := &goroutines{}
		rt.Run(func() { main(rt) })
		return nil
	case StackfulAsm, StackfulCoro:
		backend := stackful.Asm
		if row == StackfulCoro {
			backend = stackful.Coro
		}
		opts := stackful.Options{Backend: backend}
		if tune != nil {
			tune(&opts)
		}
		s, err := stackful.New(opts)
		if errors.Is(err, stackful.ErrNotSupported) {
			return NotSupported("%v", strings.TrimPrefix(err.Error(), "not supported: "))
		}
		if err != nil {
			return err
		}
		runErr := s.Run(func() { main(fibers{backend: backend, viaScheduler: opts.ViaScheduler}) })
		return errors.Join(runErr, s.Close())
	default:
		return NotSupported("row %s has no blocking runtime", row)
	}
}

// goroutines adapts impl/goroutine-baseline to Blocking.
type goroutines struct{ baseline.Runtime }

func (g *goroutines) NewSignal() Signal { return baseline.NewSignal() }

// fibers adapts impl/stackful's blocking API to Blocking. The scheduler is
// implicit (the one whose Run is in progress); the adapter only knows which
// backend it runs on. A cancellation error can only come from a shutdown,
// which no scenario body starts unless it says so, so getting one is a
// broken run and panics.
type fibers struct {
	backend      stackful.Backend
	viaScheduler bool // stackful.Options.ViaScheduler: no direct switches
}

func (fibers) Go(fn func())          { stackful.Go(fn) }
func (fibers) Yield()                { must(stackful.Yield()) }
func (fibers) NewSignal() Signal     { return fiberSignal{stackful.NewEvent()} }
func (fibers) Sleep(d time.Duration) { must(stackful.Sleep(d)) }

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
