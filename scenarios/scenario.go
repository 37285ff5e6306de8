// Package scenarios is corobench's scenario set: the contract every scenario
// follows, the bodies that do the work, and the small adapters that fit each
// runtime (row) to the contract.
//
// A scenario is defined once (Scenario): its name, the seed claim it checks,
// its parameter sweep, its metrics with units, and a checksum that proves the
// work was done. It has two bodies:
//
//   - a blocking body, straight-line Go written against the Blocking
//     interface. The stackful rows and the goroutine rows run literally the
//     same function; only the adapter behind the interface differs.
//   - a state-machine body for the stackless row, written against
//     impl/stackless directly, because that is the point of the row: the
//     same work lowered by hand into explicit states.
//
// A row that cannot run a scenario returns a *NotSupportedError; the harness
// reports "not supported: <reason>" and never a figure.
//
// Measure runs one cell (scenario × row × parameter values) in the current
// process, the way benchrun's child processes do: it grows the iteration
// count until one timed run lasts at least the bench time (the earlier runs
// are the warm-up), under one GC policy for every row (a forced GC, then the
// collector held off for the run), and checks the checksum.
package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
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
)

// Param is one swept parameter: its key as it appears in benchmark names
// (`/n=4096`) and its values for a full run and for --quick.
type Param struct {
	Key   string
	Full  []string
	Quick []string
	Doc   string
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
	// Claim names the seed claim (or ANCHORS.md pitfall) it checks.
	Claim  string
	Params []Param
	// Metrics in the order they are written; the first is the headline.
	Metrics []Metric
	// FixedIters, when > 0, runs the body exactly once with that many
	// iterations instead of growing N to fill the bench time: for scenarios
	// whose size is a parameter (memory, burst) rather than a repetition.
	FixedIters int
	// MaxCount caps the repetitions a run gives particular cells, keyed by
	// their parameters in FormatParams form ("n=1000000"): for cells whose
	// single run takes seconds and whose figure barely varies, so that a
	// full run fits its time budget. The report flags such cells' sample
	// counts like any other; a lower --count still wins.
	MaxCount map[string]int

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
var All []*Scenario

// order is the display order: the harness's floor first, then the bare
// switch, switch cost through the scheduler, spawn and memory, the waker's
// paths, timers and IO, shutdown, priority.
// Scenarios register from their own files (in file-name order); init puts
// them in this order. Every other list of scenarios (the CLI listing, the
// harness plan, the report's sections, cells.Scenarios) derives from All,
// so this is the only place the order is written; init panics if it and
// the registered scenarios disagree.
var order = []string{"calibrate", "switch", "pingpong", "yield", "handoff", "spawn", "burst", "memory",
	"await-ready", "microtask", "timer", "fdwake", "echo", "shutdown", "priority"}

func init() {
	if err := sortRegistry(); err != nil {
		panic("scenarios: " + err.Error())
	}
}

// sortRegistry puts All in order's order, and fails when a registered
// scenario is missing from order or order names one nobody registered.
func sortRegistry() error {
	for _, s := range All {
		if !slices.Contains(order, s.Name) {
			return fmt.Errorf("scenario %q is registered but not in the display order", s.Name)
		}
		if s.Summary == "" {
			return fmt.Errorf("scenario %q has no Summary", s.Name)
		}
	}
	for _, name := range order {
		if !slices.ContainsFunc(All, func(s *Scenario) bool { return s.Name == name }) {
			return fmt.Errorf("the display order names scenario %q, which is not registered", name)
		}
	}
	slices.SortStableFunc(All, func(a, b *Scenario) int {
		return slices.Index(order, a.Name) - slices.Index(order, b.Name)
	})
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

func register(s *Scenario) *Scenario {
	All = append(All, s)
	return s
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

// Combos returns every combination of parameter values, in sweep order.
// overrides replaces a parameter's values (from --param); quick picks the
// --quick values.
func (s *Scenario) Combos(quick bool, overrides map[string][]string) []map[string]string {
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

// Int returns the integer parameter key, panicking with a clear message if
// it is missing or not an integer: the harness validates parameters before
// a body runs, so this is a programming error.
func (e *Env) Int(key string) int {
	v, ok := e.Params[key]
	if !ok {
		panic(fmt.Sprintf("scenarios: parameter %q not set", key))
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("scenarios: parameter %s=%q is not an integer", key, v))
	}
	return n
}
