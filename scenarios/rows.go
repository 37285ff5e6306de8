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

// RowDef defines a row: a column of every comparison. The built-in rows
// below and the rows a runtime engineer adds with RegisterRow are defined
// the same way, and every list of rows (the --impl flag, the harness plan,
// the results reader's order, the report's tables and chart colours) comes
// from the registry they are in.
type RowDef struct {
	Name Row
	// Doc says what the row is, in one sentence.
	Doc string
	// Colour is the row's colour in every chart (RGB).
	Colour [3]uint8
	// AllCores gives the row's cells every core (GOMAXPROCS=NumCPU);
	// otherwise they run with GOMAXPROCS=1.
	AllCores bool
	// GODEBUG is the setting the row's child processes start with.
	GODEBUG string
	// TimerFloor names the clock and the wait the row's timers use: the
	// resolution below which its timer figures mean nothing. Nil: "not
	// stated".
	TimerFloor func() string
	// NoGCOn, when not empty, is why the row cannot measure with the
	// collector on (--gc-on); its cells then report not supported.
	NoGCOn string
	// RunBlocking runs main as the first coroutine of a fresh runtime and
	// returns when every coroutine has finished; the row runs the
	// scenarios' blocking bodies on it. cell names the cell, for a row
	// that tunes its runtime per scenario. Nil only for the built-in
	// stackless row, which runs the state-machine bodies.
	RunBlocking func(cell CellInfo, main func(rt Blocking)) error
}

// CellInfo names the cell a row runs: the scenario's CLI name and the
// parameter values.
type CellInfo struct {
	Scenario string
	Params   map[string]string
}

// Rows lists every row in display order: the built-in rows, then those
// added with RegisterRow, in the order they were added.
var Rows []Row

var rowDefs = map[Row]*RowDef{}

func init() {
	for _, d := range builtinRows() {
		RegisterRow(d)
	}
}

// RegisterRow adds a row to the registry: every scenario then runs on it
// (its blocking body; a body needing a capability the row lacks reports
// "not supported" with the reason). Call it before benchrun's CLI starts
// (cli.Main), in the main of your own binary, so the child processes
// benchrun starts register it too. A row without a name or a RunBlocking,
// or with a name already taken, panics naming the problem.
func RegisterRow(d RowDef) {
	switch {
	case d.Name == "" || strings.ContainsAny(string(d.Name), " /=,"):
		panic(fmt.Sprintf("scenarios.RegisterRow: row name %q is empty or contains a space, '/', '=' or ','", d.Name))
	case rowDefs[d.Name] != nil:
		panic(fmt.Sprintf("scenarios.RegisterRow: row %q is already registered", d.Name))
	case d.RunBlocking == nil && d.Name != Stackless:
		panic(fmt.Sprintf("scenarios.RegisterRow: row %q has no RunBlocking: a row runs the blocking bodies", d.Name))
	}
	rowDefs[d.Name] = &d
	Rows = append(Rows, d.Name)
}

// Def returns the row's definition.
func (r Row) Def() (RowDef, bool) {
	d, ok := rowDefs[r]
	if !ok {
		return RowDef{}, false
	}
	return *d, true
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
	_, ok := rowDefs[Row(name)]
	return Row(name), ok
}

// GOMAXPROCS returns the GOMAXPROCS a row's cells run with.
func (r Row) GOMAXPROCS() int {
	if d, ok := rowDefs[r]; ok && d.AllCores {
		return runtime.NumCPU()
	}
	return 1
}

// GODEBUG returns the GODEBUG setting a row's child process starts with.
func (r Row) GODEBUG() string {
	if d, ok := rowDefs[r]; ok {
		return d.GODEBUG
	}
	return ""
}

// TimerFloor says which clock and which wait the row's timers use.
func (r Row) TimerFloor() string {
	if d, ok := rowDefs[r]; ok && d.TimerFloor != nil {
		return d.TimerFloor()
	}
	return "not stated"
}

// builtinRows defines corobench's own rows, in display order.
func builtinRows() []RowDef {
	return []RowDef{{
		Name:   StackfulAsm,
		Doc:    "our runtime: our own Go-assembly switch between fiber stacks from our pool, GOMAXPROCS=1",
		Colour: [3]uint8{31, 119, 180},
		// Stack shrinking off: the runtime must never try to copy or free
		// a fiber stack (docs/design.md §3). It is defence in depth; the
		// fiber stacks' non-power-of-two bounds already turn any attempt
		// into a clean fatal error.
		GODEBUG:     "gcshrinkstackoff=1",
		TimerFloor:  reactorTimerFloor,
		NoGCOn:      "the asm row cannot run with the collector on: a collection while a fiber is suspended frees what only that fiber's stack holds (docs/design.md §3)",
		RunBlocking: stackfulRunner(stackful.Asm),
	}, {
		Name:        StackfulCoro,
		Doc:         "the same scheduler, waker and reactor, each coroutine a Go runtime coroutine (iter.Pull)",
		Colour:      [3]uint8{255, 127, 14},
		TimerFloor:  reactorTimerFloor,
		RunBlocking: stackfulRunner(stackful.Coro),
	}, {
		Name:       Stackless,
		Doc:        "the same semantics as explicit state machines (Resume + state field)",
		Colour:     [3]uint8{44, 160, 44},
		TimerFloor: reactorTimerFloor,
	}, {
		Name:        GoroutineSingle,
		Doc:         "goroutines, channels, time timers and Go's netpoller, GOMAXPROCS=1",
		Colour:      [3]uint8{214, 39, 40},
		TimerFloor:  goTimerFloor,
		RunBlocking: goroutineRunner(GoroutineSingle),
	}, {
		Name:        GoroutineMulti,
		Doc:         "the same with all cores",
		Colour:      [3]uint8{148, 103, 189},
		AllCores:    true,
		TimerFloor:  goTimerFloor,
		RunBlocking: goroutineRunner(GoroutineMulti),
	}}
}

// goTimerFloor: Go's timers run on runtime.nanotime, and an idle P waits
// for the next one in the netpoller's epoll_pwait, whose timeout is in
// whole milliseconds: netpoll rounds a sub-millisecond delay up to 1 ms
// (runtime/netpoll_epoll.go, golang/go#79872).
func goTimerFloor() string {
	return "clock=CLOCK_MONOTONIC (runtime.nanotime, vDSO) wait=netpoller epoll_pwait with a ms timeout (a sub-ms timer may wait up to 1 ms)"
}

// runBlocking runs main as the first coroutine of a fresh runtime of the
// given row and returns when every coroutine has finished.
func runBlocking(row Row, cell CellInfo, main func(rt Blocking)) error {
	d, ok := rowDefs[row]
	if !ok || d.RunBlocking == nil {
		return NotSupported("row %s has no blocking runtime", row)
	}
	return d.RunBlocking(cell, main)
}

// goroutineRunner runs a blocking body on goroutines, checking that the
// process has the GOMAXPROCS the row stands for.
func goroutineRunner(row Row) func(CellInfo, func(Blocking)) error {
	return func(_ CellInfo, main func(rt Blocking)) error {
		if got, want := runtime.GOMAXPROCS(0), row.GOMAXPROCS(); got != want {
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
func stackfulRunner(backend stackful.Backend) func(CellInfo, func(Blocking)) error {
	return func(cell CellInfo, main func(rt Blocking)) error {
		opts := stackful.Options{Backend: backend}
		if backend == stackful.Asm {
			opts.ViaScheduler = stackfulViaScheduler(cell)
		}
		return runStackful(opts, main)
	}
}

// stackfulViaScheduler reports whether a cell's handoffs must go through
// the scheduler context: the handoff scenario's via=scheduler cells.
func stackfulViaScheduler(cell CellInfo) bool {
	return cell.Scenario == Handoff.Name && cell.Params["via"] == "scheduler"
}

func runStackful(opts stackful.Options, main func(rt Blocking)) error {
	s, err := stackful.New(opts)
	if errors.Is(err, stackful.ErrNotSupported) {
		return NotSupported("%v", strings.TrimPrefix(err.Error(), "not supported: "))
	}
	if err != nil {
		return err
	}
	runErr := s.Run(func() { main(fibers{backend: opts.Backend, viaScheduler: opts.ViaScheduler}) })
	return errors.Join(runErr, s.Close())
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
