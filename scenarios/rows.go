package scenarios

import (
	"fmt"
	"runtime"
	"strings"
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
	// PoolBound marks a single-P row whose runtime runs the work of a
	// pool scenario (Scenario.UsesPool) on a thread pool of Go code (the
	// reactor's): those cells get GOMAXPROCS = 1 + PoolThreads(), the
	// scheduler's P and one per pool thread, and the row gives its runtime
	// PoolThreads() threads (Row.CellGOMAXPROCS). Its blocking adapter
	// implements the PoolBound capability.
	PoolBound bool
	// GODEBUG is the setting the row's child processes start with.
	GODEBUG string
	// TimerFloor names the clock and the wait the row's timers use: the
	// resolution below which its timer figures mean nothing. Nil: "not
	// stated".
	TimerFloor func() string
	// NoGCOn, when not empty, is why the row cannot measure with the
	// collector on (--gc-on); its cells then report not supported.
	NoGCOn string
	// SharedAcrossRuns, when not empty, is why a new RunBlocking call does
	// not start a cold runtime (state the row keeps for the whole process,
	// such as Go's free list of finished goroutines); cells that need a
	// fresh runtime per iteration (Scenario.FreshRuntime) then report not
	// supported with it. Empty: every RunBlocking call starts from nothing.
	SharedAcrossRuns string
	// RunBlocking runs main as the first coroutine of a fresh runtime and
	// returns when every coroutine has finished; the row runs the
	// scenarios' blocking bodies on it. cell names the cell, for a row
	// that tunes its runtime per scenario.
	RunBlocking func(cell CellInfo, main func(rt Blocking)) error
	// StateMachine marks the built-in stackless row, which runs the
	// scenarios' state-machine bodies (written against impl/stackless)
	// instead, and has no RunBlocking.
	StateMachine bool
}

// CellInfo names the cell a row runs: the scenario's CLI name and the
// parameter values.
type CellInfo struct {
	Scenario string
	Params   map[string]string
}

// Rows lists every row in display order: the built-in rows (registered by
// package scenarios/rows), then the others, in the order they were added.
var Rows []Row

var rowDefs = map[Row]*RowDef{}

// RegisterRow adds a row to the registry: every scenario then runs on it
// (its blocking body; a body needing a capability the row lacks reports
// "not supported" with the reason). Call it before benchrun's CLI starts
// (cli.Main), in the main of your own binary, so the child processes
// benchrun starts register it too. It is not safe for concurrent use: call
// it from main or an init function. A row without a name or a
// RunBlocking, or with a name already taken, panics naming the problem.
func RegisterRow(d RowDef) {
	switch {
	case d.Name == "" || strings.ContainsAny(string(d.Name), " /=,"):
		panic(fmt.Sprintf("scenarios.RegisterRow: row name %q is empty or contains a space, '/', '=' or ','", d.Name))
	case rowDefs[d.Name] != nil:
		panic(fmt.Sprintf("scenarios.RegisterRow: row %q is already registered", d.Name))
	case d.StateMachine && d.Name != Stackless:
		panic(fmt.Sprintf("scenarios.RegisterRow: row %q sets StateMachine: the state-machine bodies are written against impl/stackless, so only the built-in stackless row runs them; give the row a RunBlocking", d.Name))
	case (d.RunBlocking == nil) == !d.StateMachine:
		panic(fmt.Sprintf("scenarios.RegisterRow: row %q must have either a RunBlocking (the blocking bodies) or StateMachine set (the stackless row only)", d.Name))
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

// GOMAXPROCS returns the GOMAXPROCS a row's cells run with, except the
// pool cells of a PoolBound row (Row.CellGOMAXPROCS).
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

// RunBlocking runs main as the first coroutine of a fresh runtime of the
// row and returns when every coroutine has finished (RowDef.RunBlocking).
func (r Row) RunBlocking(cell CellInfo, main func(rt Blocking)) error {
	d, ok := rowDefs[r]
	if !ok || d.RunBlocking == nil {
		return NotSupported("row %s has no blocking runtime", r)
	}
	return d.RunBlocking(cell, main)
}

// RunsStateMachines reports whether the row runs the scenarios'
// state-machine bodies instead of their blocking ones.
func (r Row) RunsStateMachines() bool {
	d, ok := rowDefs[r]
	return ok && d.StateMachine
}
