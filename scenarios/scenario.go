// Package scenarios is the contract and the registry of corobench's
// scenario set. It imports no runtime.
//
//   - A scenario (Scenario) is defined once: its name, summary, the
//     reference-design claim it checks, its parameter sweep, its metrics
//     with units, a checksum that proves the work was done, and its two
//     bodies. Package scenarios/bodies defines them and registers them
//     (Register) in the one display order every list derives from.
//   - A row (RowDef) is a column of every comparison: a name, its facts,
//     and how it runs a blocking body (RunBlocking). Package scenarios/rows
//     registers corobench's own rows; a runtime engineer registers theirs
//     from their own module with RegisterRow (see examples/lifo).
//   - The row contract (capabilities.go) is what a blocking body may use
//     of a row: Blocking, and the optional capabilities a body type-asserts.
//     A row that cannot run a scenario reports a *NotSupportedError with
//     the reason; the harness records "not supported: <reason>" and never a
//     figure.
//   - Env is a body's view of one run: iteration count, parameters, timer.
//
// Package scenarios/driver measures one cell in the current process, the
// way benchrun's child processes do. See docs/design.md §5 (Scenarios).
package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Metric is one figure a scenario reports, with its unit as it appears in
// the results file, e.g. "ns/switch".
type Metric struct {
	Unit string
	// Kind says who measures it: the harness (time or allocations per
	// operation over the timed region) or the body itself.
	Kind MetricKind
	// HigherIsBetter is true for throughput units such as req/s.
	HigherIsBetter bool
	// Headline, when not "", puts this metric in the report's headline
	// table (its first screen) as a line with this label, e.g. "bare
	// switch". The table's lines follow the display order of scenarios and
	// then of their metrics; this field is the only place they are chosen.
	Headline string
	// HeadlineAt lists the parameter settings (in the report's column form,
	// "n=100000", "c=64") the headline line may show, in order of
	// preference: the first one the run has. Empty: the scenario's first
	// setting (or its only one, when it has no parameters).
	HeadlineAt []string
	// HeadlineKnee makes the headline line show each row's knee (the
	// scenario's LoadSweep): the highest offered rate it sustains, in this
	// metric's unit, among the settings of the first HeadlineAt the run
	// has (a setting names the parameters other than the rate, "c=64").
	HeadlineKnee bool
}

// MetricKind says how a metric's value is obtained.
type MetricKind int

const (
	// TimePerOp is the timed region's wall time divided by Outcome.Ops, in ns.
	TimePerOp MetricKind = iota
	// AllocsPerOp is the heap allocations in the timed region divided by
	// Outcome.Ops.
	AllocsPerOp
	// BodyMeasured is a value the body puts in Outcome.Values itself
	// (percentiles, bytes per coroutine).
	BodyMeasured
	// FaultsPerOp is the minor page faults in the timed region divided by
	// Outcome.Ops (Env.Faults). Register appends it to every scenario as
	// FaultsMetric; a scenario does not declare it itself.
	FaultsPerOp
)

// FaultsUnit is the unit of FaultsMetric: minor page faults per operation,
// the operation being the scenario's own (the divisor of its ns/ figure).
const FaultsUnit = "minflt/op"

// FaultsMetric is the metric every scenario reports last, so that a reader
// sees when a figure is really the kernel handing out fresh memory: a
// minor fault (first touch of a zeroed page) costs ~0.1–1 µs, more than
// most operations here.
var FaultsMetric = Metric{Unit: FaultsUnit, Kind: FaultsPerOp}

// Param is one swept parameter: its key as it appears in benchmark names
// (`/n=4096`), its values for a full run and for --quick, and what values
// are valid (Check), so that benchrun refuses a bad --param before any
// cell runs (see params.go).
type Param struct {
	Key   string
	Full  []string
	Quick []string
	Doc   string
	// Min and Max, when Max > 0, make the parameter an integer in
	// [Min, Max]. With Max == 0 it is an enumeration: its valid values are
	// exactly Full.
	Min, Max int
	// BytesPer, when > 0, marks a size parameter: an estimate of the
	// resident memory one unit (one coroutine, one connection) costs the
	// cell's process, compared before the run with the machine's available
	// memory (CheckMemory). CoroutineBytes is the usual figure.
	BytesPer int64
}

// LoadSweep describes the load a scenario's parameter settings offer, for
// the report's throughput-against-latency chart and each row's knee: the
// highest offered rate at which the row's Latency metric (its median over
// the repetitions) stays within Bound, at that rate and every lower one.
// Latency figures taken above a row's knee are backlog, not service time,
// and the report marks them.
type LoadSweep struct {
	// Rate is the offered rate of a cell's parameters, in What per second.
	Rate func(params map[string]string) float64
	What string // "wakes"
	// Latency is the metric the bound applies to ("p99-ns/wake"); Bound
	// is in that metric's unit.
	Latency string
	Bound   float64
	// CPU, when set, is the metric of CPU time per operation ("cpu-ns/wake",
	// in ns): a rate whose operations need more CPU time per second than
	// the row's GOMAXPROCS has is not sustained, however its latency reads
	// (a coroutine that wakes late sleeps again from then, so lateness alone
	// need not grow with an overload).
	CPU string
	// Why states why the bound is what it is, for the report.
	Why string
	// Key, when set, is the parameter that carries the offered rate: the
	// knee is then found among the settings that differ in Key only, each
	// group of them on its own (Grids may sweep the rate at one setting of
	// the other parameters and run the others at one rate), and a row's
	// knee (the report's ranking, a HeadlineKnee figure) is that of the
	// group with the most rates. Empty: every setting is one sweep.
	Key string
	// Achieved, when set, is the metric of the rate the row completed, in
	// the offered rate's unit ("req/s"): a rate is sustained only when the
	// row completed at least Share of it, whatever its latency.
	Achieved string
	Share    float64
	// Capacity, when set, is the metric of the busy time per operation of
	// the one core the row's server runs on ("cpu-ns/req", in ns): where
	// the load generator's ceiling caps the measured knee, the report ranks
	// such rows by it at one common rate (1e9 over it: a lower bound on the
	// rate that core sustains).
	Capacity string
}

// Scenario is one entry of the scenario set. See the package doc.
type Scenario struct {
	Name  string // CLI name, e.g. "pingpong"
	Bench string // benchmark name, e.g. "PingPong"
	// Doc says what the scenario measures, in one or two sentences: the
	// --list text.
	Doc string
	// Summary is the one-line description the report shows under the
	// scenario's heading, so a reader knows what a number is a cost of.
	Summary string
	// Latency marks scenarios whose figures are latency distributions: the
	// report draws a percentile chart besides their bar charts.
	Latency bool
	// Load, when set, says the scenario's parameter settings offer
	// different loads: the report plots latency against the offered rate
	// and finds each row's knee.
	Load *LoadSweep
	// Claim names the reference design's claim (docs/design.md §1) or the
	// measurement pitfall (docs/design.md §6) it checks.
	Claim  string
	Params []Param
	// Grids, when set, narrows the cross product of Params to a union of
	// grids: a combination is run when some grid admits it, and a grid
	// admits it when each parameter the grid names has one of the grid's
	// values there (a parameter the grid does not name may take any of
	// its values). So a scenario can sweep one parameter at one setting of
	// the others, and the others at one point of the sweep, without the
	// whole product: {{"c": {"64"}}, {"rate": {"20000"}}} sweeps rate at
	// c=64 and c at rate=20000. A grid's values are taken among the run's
	// values (Full or Quick); a --param override of a key lifts every
	// grid's restriction of that key, so the values the user names are
	// run across the other parameters' grids. Nil: the full product.
	Grids []Grid
	// Metrics in the order they are written; the first is the headline.
	Metrics []Metric
	// FixedIters, when > 0, runs the body exactly once with that many
	// iterations instead of growing N to fill the bench time: for scenarios
	// whose size is a parameter (memory, burst) rather than a repetition.
	FixedIters int
	// ItersFor, when set, gives a cell's fixed iteration count instead of
	// FixedIters (0: grow N to fill the bench time), for a scenario whose
	// variants differ in that.
	ItersFor func(params map[string]string) int
	// RerunFixed, when set, says whether a cell with a fixed iteration
	// count (Iters > 0) may make more than one timed run in a process,
	// as every other cell does, so that the process reports a median over
	// runs rather than one shot. Each run calls the body anew (a blocking
	// body in a new RunBlocking, a state-machine body creating its own
	// scheduler), so a run is a whole measurement in a runtime of its
	// own: its warm-up, when it has one, is inside the body. RerunNever
	// (nil): one run. RerunAlways: runs repeat on every row. RerunIfFresh:
	// for a cold cell, cold only in a fresh runtime: runs repeat on a row
	// whose every RunBlocking starts from nothing (RowDef.SharedAcrossRuns
	// empty; the state-machine row), and the other rows run once. The
	// driver makes as many runs as fit the cell's timed budget (runsFor),
	// at most DefaultRuns.
	RerunFixed func(params map[string]string) Rerun
	// FreshRuntime, when set and true for a cell, runs each of the run's N
	// iterations in a runtime of its own: the driver calls the body N
	// times (a blocking body each time in a new RunBlocking, a state-machine
	// body each time anew, creating its own scheduler), with Env.Iter the
	// iteration's index, and adds up the calls' Ops and Checksums. The body
	// times its one iteration with StartTimer/StopTimer (not ResetTimer),
	// so the timed region holds exactly the operation and none of the
	// runtime's creation or teardown. For what is cold only in a fresh
	// runtime (an empty context pool). A row whose runs share state
	// (RowDef.SharedAcrossRuns) reports not supported for such cells.
	FreshRuntime func(params map[string]string) bool
	// Cycles marks a FixedIters scenario whose one run is a single short
	// cycle (set up a fresh runtime, then time one operation on all of it,
	// such as a graceful shutdown that ends the runtime): benchrun's child
	// repeats the run in its process, each time with a fresh runtime,
	// drops the first (cold) one and reports the mean of the others, so no
	// figure is one cold shot of a millisecond.
	Cycles bool
	// MaxCount caps the repetitions a run gives particular cells, keyed by
	// their parameters in FormatParams form ("n=1000000"): for cells whose
	// single run takes seconds and whose figure barely varies, so that a
	// full run fits its time budget. The report flags such cells' sample
	// counts like any other; a lower --count still wins.
	MaxCount map[string]int
	// UsesPool marks a scenario whose bodies run their work on the
	// runtime's thread pool (offload, fileio): on a row whose RowDef sets
	// PoolBound its cells run with GOMAXPROCS = 1 + PoolThreads() and the
	// runtime with PoolThreads() pool threads, so the pool's threads have
	// Ps of their own (capabilities_offload.go, Row.CellGOMAXPROCS).
	UsesPool bool
	// NotJudged, when not "", says why the disturbance mark does not judge
	// this scenario's cells even on one P (docs/design.md §6.7): a
	// runqueue wait that is partly the cell's own beyond the process's
	// threads (a helper process beside the body, wake-ups on an idle
	// CPU), or a headline a wait does not move (a byte count). Empty: its
	// single-P cells are judged, and a timed run whose body's thread
	// waited for other tasks is re-taken. package scenarios/driver reads
	// it; --list and the README's scenario table show it.
	NotJudged string
	// CoreMarkOff, when not "", says why the core mark (a timed run whose
	// core probe read a shared core is disturbed, benchrun --core-mark)
	// does not judge this scenario's cells either. Empty: the mark judges
	// every cell of it that runs on one P with its whole process on one
	// CPU, the one the probe reads, NotJudged or not: a shared core is a
	// signal of its own, whatever makes a runqueue wait unreliable there.
	// package scenarios/driver reads it; --list and the README's scenario
	// table show it.
	CoreMarkOff string

	// Blocking is the body shared by the stackful and goroutine rows. Nil
	// means no blocking body exists yet: those rows report not supported.
	// A body that needs a capability the row lacks (an optional interface
	// beyond Blocking) returns a *NotSupportedError saying which.
	Blocking func(rt Blocking, env *Env) (Outcome, error)
	// StateMachine is the body for the stackless row. Nil: not supported.
	StateMachine func(env *Env) (Outcome, error)
	// Want returns the checksum a correct run of env.N iterations with
	// env's parameters must produce, computed without any runtime.
	Want func(env *Env) uint64
}

// Iters is the cell's fixed iteration count (ItersFor, else FixedIters);
// 0 means the driver grows it to fill the bench time.
func (s *Scenario) Iters(params map[string]string) int {
	if s.ItersFor != nil {
		return s.ItersFor(params)
	}
	return s.FixedIters
}

// Rerun says whether a fixed-iteration cell may make more than one timed
// run in a process (Scenario.RerunFixed).
type Rerun uint8

const (
	// RerunNever: one timed run per process (the default).
	RerunNever Rerun = iota
	// RerunAlways: several timed runs on every row; each run's body makes
	// its own warm-up in its own runtime.
	RerunAlways
	// RerunIfFresh: several timed runs only on a row whose every run
	// starts from nothing (no RowDef.SharedAcrossRuns): a cold cell,
	// which a second run in the same process would find warm elsewhere.
	RerunIfFresh
)

// Rerun is the cell's RerunFixed, RerunNever when the scenario sets none.
func (s *Scenario) Rerun(params map[string]string) Rerun {
	if s.RerunFixed == nil {
		return RerunNever
	}
	return s.RerunFixed(params)
}

// Outcome is what a body reports for one run.
type Outcome struct {
	// Ops is the number of operations in the timed region, the divisor of
	// the per-operation metrics: switches, spawns, wakes...
	Ops int64
	// Checksum proves the work was done; it must equal Scenario.Want.
	Checksum uint64
	// Values holds BodyMeasured metrics by unit.
	Values map[string]float64
}

// NotSupportedError says a row cannot run a scenario, and why.
type NotSupportedError struct{ Reason string }

func (e *NotSupportedError) Error() string { return "not supported: " + e.Reason }

// NotSupported returns a *NotSupportedError with the formatted reason.
func NotSupported(format string, args ...any) error {
	return &NotSupportedError{Reason: fmt.Sprintf(format, args...)}
}

// IsNotSupported reports whether err says "not supported", and the reason.
func IsNotSupported(err error) (string, bool) {
	var ns *NotSupportedError
	if errors.As(err, &ns) {
		return ns.Reason, true
	}
	return "", false
}

// All is the scenario set, in the order runs and reports list them (order).
// Package scenarios/bodies fills it (Register) as it initialises.
var All []*Scenario

// order is the display order: the harness's floor first, then the bare
// switch, switch cost through the scheduler, spawn and memory, the waker's
// paths, timers and IO, shutdown, priority. Every other list of scenarios
// (the CLI listing, the harness plan, the report's sections, the results
// reader's order) derives from All, so this is the only place the order is
// written; Register refuses a scenario missing from it, and CheckRegistry
// a name in it that nobody registered.
var order = []string{"calibrate", "switch", "pingpong", "yield", "handoff", "spawn", "burst", "memory",
	"await-ready", "microtask", "timer", "fdwake", "echo", "offload", "fileio", "exec", "fswatch", "dns", "shutdown", "priority"}

// Register adds s to All, in its place in the display order, appends
// FaultsMetric to its metrics, and returns it. It panics, naming the
// problem, if s has no name, summary or checksum, if its name is taken or
// not in the display order, if it declares FaultsMetric itself, or if a
// grid (Grids) names a parameter or value it does not have.
func Register(s *Scenario) *Scenario {
	rank := slices.Index(order, s.Name)
	gridErr := errors.Join(s.checkGrids(), s.checkLoad())
	switch {
	case rank < 0:
		panic(fmt.Sprintf("scenarios.Register: scenario %q is not in the display order (scenarios.order)", s.Name))
	case s.Summary == "" || s.Want == nil:
		panic(fmt.Sprintf("scenarios.Register: scenario %q has no Summary or no Want", s.Name))
	case gridErr != nil:
		panic("scenarios.Register: " + gridErr.Error())
	case slices.ContainsFunc(All, func(o *Scenario) bool { return o.Name == s.Name || o.Bench == s.Bench }):
		panic(fmt.Sprintf("scenarios.Register: scenario %q (%s) is registered twice", s.Name, s.Bench))
	case slices.ContainsFunc(s.Metrics, func(m Metric) bool { return m.Unit == FaultsUnit || m.Kind == FaultsPerOp }):
		panic(fmt.Sprintf("scenarios.Register: scenario %q declares %s itself; Register appends it to every scenario", s.Name, FaultsUnit))
	}
	i := 0
	for i < len(All) && slices.Index(order, All[i].Name) < rank {
		i++
	}
	s.Metrics = append(slices.Clip(s.Metrics), FaultsMetric)
	All = slices.Insert(All, i, s)
	return s
}

// checkGrids reports a grid that names a parameter the scenario does not
// have, or a value outside that parameter's full sweep (a grid that could
// never admit a combination of a full run).
func (s *Scenario) checkGrids() error {
	for i, g := range s.Grids {
		if len(g) == 0 {
			return fmt.Errorf("scenario %q: grid %d restricts nothing (leave Grids nil for the full product)", s.Name, i)
		}
		for k, vs := range g {
			p, ok := s.Param(k)
			if !ok {
				return fmt.Errorf("scenario %q: grid %d names parameter %q, which it does not have (it has: %v)", s.Name, i, k, s.ParamKeys())
			}
			for _, v := range vs {
				if !slices.Contains(p.Full, v) {
					return fmt.Errorf("scenario %q: grid %d gives %s=%s, which is not among its full values %v", s.Name, i, k, v, p.Full)
				}
			}
		}
	}
	return nil
}

// checkLoad reports a load sweep that names a parameter or metric the
// scenario does not have, a Share outside (0, 1] beside Achieved, or a
// HeadlineKnee metric without a load sweep.
func (s *Scenario) checkLoad() error {
	l := s.Load
	hasMetric := func(unit string) bool {
		return slices.ContainsFunc(s.Metrics, func(m Metric) bool { return m.Unit == unit })
	}
	if l == nil {
		if slices.ContainsFunc(s.Metrics, func(m Metric) bool { return m.HeadlineKnee }) {
			return fmt.Errorf("scenario %q: a metric has HeadlineKnee but the scenario has no Load sweep", s.Name)
		}
		return nil
	}
	if _, ok := s.Param(l.Key); l.Key != "" && !ok {
		return fmt.Errorf("scenario %q: Load.Key %q is not one of its parameters %v", s.Name, l.Key, s.ParamKeys())
	}
	if l.Achieved != "" && (!hasMetric(l.Achieved) || !(l.Share > 0 && l.Share <= 1)) {
		return fmt.Errorf("scenario %q: Load.Achieved %q must be one of its metrics, with a Share in (0, 1] (got %v)", s.Name, l.Achieved, l.Share)
	}
	if l.Capacity != "" && !hasMetric(l.Capacity) {
		return fmt.Errorf("scenario %q: Load.Capacity %q is not one of its metrics", s.Name, l.Capacity)
	}
	return nil
}

// CheckRegistry reports a scenario of the display order that nobody
// registered: the other half of the check Register makes.
func CheckRegistry() error {
	for _, name := range order {
		if _, ok := Lookup(name); !ok {
			return fmt.Errorf("the display order names scenario %q, which is not registered (is package scenarios/bodies linked in?)", name)
		}
	}
	return nil
}

// Benches returns the benchmark names of all scenarios, in display order.
func Benches() []string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = s.Bench
	}
	return names
}

// LookupBench returns the scenario with the given benchmark name.
func LookupBench(bench string) (*Scenario, bool) {
	for _, s := range All {
		if s.Bench == bench {
			return s, true
		}
	}
	return nil, false
}

// Names returns the CLI names of all scenarios.
func Names() []string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the scenario with the given CLI name.
func Lookup(name string) (*Scenario, bool) {
	for _, s := range All {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Param returns the parameter with the given key.
func (s *Scenario) Param(key string) (Param, bool) {
	for _, p := range s.Params {
		if p.Key == key {
			return p, true
		}
	}
	return Param{}, false
}

// ParamKeys returns the scenario's parameter keys, for error messages.
func (s *Scenario) ParamKeys() []string {
	keys := make([]string, len(s.Params))
	for i, p := range s.Params {
		keys[i] = p.Key
	}
	return keys
}

// Grid restricts some parameters of a scenario to some of their values
// (Scenario.Grids): parameter key → the values it may take.
type Grid map[string][]string

// admits reports whether the grid admits combination c, ignoring the
// restriction of every key in lifted.
func (g Grid) admits(c map[string]string, lifted map[string][]string) bool {
	for k, vs := range g {
		if _, ok := lifted[k]; ok {
			continue
		}
		if v, ok := c[k]; ok && !slices.Contains(vs, v) {
			return false
		}
	}
	return true
}

// Combos returns every combination of parameter values, in sweep order,
// that one of the scenario's Grids admits (all of them when it has none).
// overrides replaces a parameter's values (from --param) and lifts the
// grids' restriction of it; quick picks the --quick values.
func (s *Scenario) Combos(quick bool, overrides map[string][]string) []map[string]string {
	all := s.product(quick, overrides)
	if len(s.Grids) == 0 {
		return all
	}
	var kept []map[string]string
	for _, c := range all {
		if slices.ContainsFunc(s.Grids, func(g Grid) bool { return g.admits(c, overrides) }) {
			kept = append(kept, c)
		}
	}
	return kept
}

// product is the cross product of the parameters' values for a run.
func (s *Scenario) product(quick bool, overrides map[string][]string) []map[string]string {
	combos := []map[string]string{{}}
	for _, p := range s.Params {
		values := p.Full
		if quick && p.Quick != nil {
			values = p.Quick
		}
		if o, ok := overrides[p.Key]; ok {
			values = o
		}
		var next []map[string]string
		for _, c := range combos {
			for _, v := range values {
				m := make(map[string]string, len(c)+1)
				for k, old := range c {
					m[k] = old
				}
				m[p.Key] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos
}

// BenchName returns the benchmark name (without "Benchmark") for a cell:
// <Bench>/impl=<row>/<key>=<value>..., parameters in declaration order.
func (s *Scenario) BenchName(row Row, params map[string]string) string {
	var b strings.Builder
	b.WriteString(s.Bench)
	b.WriteString("/impl=")
	b.WriteString(string(row))
	for _, p := range s.Params {
		if v, ok := params[p.Key]; ok {
			b.WriteString("/" + p.Key + "=" + v)
		}
	}
	return b.String()
}

// FormatParams renders params as key=value pairs joined by commas, sorted by
// key: the child-process flag form.
func FormatParams(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + params[k]
	}
	return strings.Join(parts, ",")
}

// ParseParams is the inverse of FormatParams.
func ParseParams(s string) (map[string]string, error) {
	params := map[string]string{}
	if s == "" {
		return params, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("parameter %q is not key=value", kv)
		}
		params[k] = v
	}
	return params, nil
}
