package scenarios

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// GC policies, as written to the results file's gc-policy config line.
const (
	// GCPolicy is the default, under which every row measures: a forced
	// collection before each timed run, then the collector held off for it
	// (as golang/benchmarks' sweet does). The asm row cannot run any other
	// way (docs/design.md §3), so this is what makes the rows comparable.
	GCPolicy = "forced-gc-then-off"
	// GCPolicyOn leaves the collector on during the timed run, for the
	// GC-safe rows: it shows what collection costs them. The asm row
	// reports not supported under it.
	GCPolicyOn = "forced-gc-then-on"
)

// Options tune Measure.
type Options struct {
	// Benchtime is the least duration of the timed run.
	Benchtime time.Duration
	// GCOn selects GCPolicyOn instead of GCPolicy.
	GCOn bool
	// Loadgen starts the echo scenario's load generator in a process of
	// its own (see ReexecLoadgen). Nil: the echo scenario fails, saying so.
	Loadgen LoadgenCommand
}

// Env is a body's view of one run: the iteration count, the parameters, and
// the timer that delimits the timed region. Bodies call ResetTimer after
// their set-up, as testing.B bodies do.
type Env struct {
	N      int
	Params map[string]string
	// Loadgen is Options.Loadgen, for the echo scenario.
	Loadgen LoadgenCommand

	running    bool
	start      time.Time
	startAlloc uint64
	elapsed    time.Duration
	allocs     uint64
}

// ResetTimer zeroes the elapsed time and allocation count and starts timing.
func (e *Env) ResetTimer() {
	e.elapsed, e.allocs = 0, 0
	e.running = false
	e.StartTimer()
}

// StartTimer starts or resumes timing.
func (e *Env) StartTimer() {
	if e.running {
		return
	}
	e.startAlloc = mallocs()
	e.running = true
	e.start = time.Now()
}

// StopTimer pauses timing.
func (e *Env) StopTimer() {
	if !e.running {
		return
	}
	e.elapsed += time.Since(e.start)
	e.allocs += mallocs() - e.startAlloc
	e.running = false
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// Sample is the measurement of one cell: the values of the scenario's
// metrics over one timed run of Iters iterations.
type Sample struct {
	Iters  int
	Values []float64 // in the order of Scenario.Metrics
}

// Measure runs one cell in this process. It grows the iteration count as
// testing.B does until a timed run lasts at least benchtime (the earlier
// runs are the warm-up; a FixedIters scenario runs once), and returns that
// run's figures. A checksum mismatch is an error; so is a row that does not
// support the scenario (a *NotSupportedError).
func Measure(s *Scenario, row Row, params map[string]string, benchtime time.Duration) (*Sample, error) {
	return MeasureWith(s, row, params, Options{Benchtime: benchtime})
}

// MeasureWith is Measure with all options.
func MeasureWith(s *Scenario, row Row, params map[string]string, opts Options) (*Sample, error) {
	if err := checkParams(s, params); err != nil {
		return nil, err
	}
	if d, ok := row.Def(); ok && opts.GCOn && d.NoGCOn != "" {
		return nil, NotSupported("%s", d.NoGCOn)
	}
	benchtime := opts.Benchtime
	if s.FixedIters > 0 {
		env, out, err := runOnce(s, row, params, s.FixedIters, opts)
		if err != nil {
			return nil, err
		}
		return sample(s, env, out)
	}
	const maxIters = 1 << 30
	n := 1
	for {
		env, out, err := runOnce(s, row, params, n, opts)
		if err != nil {
			return nil, err
		}
		if env.elapsed >= benchtime || n >= maxIters {
			return sample(s, env, out)
		}
		n = nextIters(n, env.elapsed, benchtime)
	}
}

// nextIters predicts the iteration count that fills benchtime, as
// testing.B's predictN does: aim 20% over, grow at most 100× and at least
// by one.
func nextIters(n int, elapsed, benchtime time.Duration) int {
	per := elapsed.Nanoseconds() / int64(n)
	if per <= 0 {
		per = 1
	}
	next := int(benchtime.Nanoseconds() / per)
	next += next / 5
	next = min(next, 100*n)
	next = max(next, n+1)
	return min(next, 1<<30)
}

func checkParams(s *Scenario, params map[string]string) error {
	for k := range params {
		if _, ok := s.Param(k); !ok {
			return fmt.Errorf("scenario %s has no parameter %q (it has: %v)", s.Name, k, s.ParamKeys())
		}
	}
	for _, p := range s.Params {
		if _, ok := params[p.Key]; !ok {
			return fmt.Errorf("scenario %s needs parameter %q", s.Name, p.Key)
		}
	}
	return nil
}

// runOnce runs the row's body once with n iterations under the GC policy.
func runOnce(s *Scenario, row Row, params map[string]string, n int, opts Options) (*Env, Outcome, error) {
	env := &Env{N: n, Params: params, Loadgen: opts.Loadgen}
	runtime.GC()
	if !opts.GCOn {
		old := debug.SetGCPercent(-1)
		defer debug.SetGCPercent(old)
	}

	var out Outcome
	var err error
	if row == Stackless {
		if s.StateMachine == nil {
			return nil, out, NotSupported("scenario %s has no state-machine body yet", s.Name)
		}
		env.ResetTimer()
		out, err = s.StateMachine(env)
		env.StopTimer()
	} else {
		if s.Blocking == nil {
			return nil, out, NotSupported("scenario %s has no blocking body yet", s.Name)
		}
		var bodyErr error
		err = runBlocking(row, CellInfo{Scenario: s.Name, Params: params}, func(rt Blocking) {
			env.ResetTimer()
			out, bodyErr = s.Blocking(rt, env)
			env.StopTimer()
		})
		err = errors.Join(bodyErr, err)
	}
	if err != nil {
		return nil, out, err
	}
	if want := s.Want(env); out.Checksum != want {
		return nil, out, fmt.Errorf("checksum mismatch: %s on %s with N=%d produced %#x, want %#x: the body did not do the work the scenario defines", s.Name, row, n, out.Checksum, want)
	}
	if out.Ops <= 0 {
		return nil, out, fmt.Errorf("scenario %s on %s reported %d operations; the per-operation metrics need at least one", s.Name, row, out.Ops)
	}
	return env, out, nil
}

func sample(s *Scenario, env *Env, out Outcome) (*Sample, error) {
	sm := &Sample{Iters: env.N, Values: make([]float64, len(s.Metrics))}
	for i, m := range s.Metrics {
		switch m.Kind {
		case TimePerOp:
			sm.Values[i] = float64(env.elapsed.Nanoseconds()) / float64(out.Ops)
		case AllocsPerOp:
			sm.Values[i] = float64(env.allocs) / float64(out.Ops)
		case BodyMeasured:
			v, ok := out.Values[m.Unit]
			if !ok {
				return nil, fmt.Errorf("scenario %s did not report its metric %s", s.Name, m.Unit)
			}
			sm.Values[i] = v
		}
	}
	return sm, nil
}
