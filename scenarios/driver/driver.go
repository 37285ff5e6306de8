// Package driver measures one cell (scenario × row × parameter values) in
// the current process, the way benchrun's child processes do: it grows the
// iteration count until one timed run lasts at least the bench time (the
// earlier runs are the warm-up), under one GC policy for every row (a
// forced GC, then the collector held off for the run), and checks the
// checksum. It is the measurement apart from the workloads (the scenario
// bodies, package scenarios/bodies) and the runtimes (package
// scenarios/rows), which it reaches only through the scenarios registry.
package driver

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/corobench/corobench/scenarios"
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
	Loadgen scenarios.LoadgenCommand
	// FinalStart and FinalStop, when set, bracket one more run made once
	// the iteration count is found (a FixedIters scenario: its one run),
	// whose figures MeasureWith then returns: the profiler's hook (benchrun
	// profile). The bracket is as tight as the driver can make it: after
	// the forced GC and the GC policy, before the row's runtime starts,
	// and closed as soon as the body returns, so no warm-up run and no
	// collection is inside; the body's own untimed set-up and teardown of
	// that run are. An error from FinalStart ends the measurement with it.
	FinalStart func() error
	FinalStop  func()
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
func Measure(s *scenarios.Scenario, row scenarios.Row, params map[string]string, benchtime time.Duration) (*Sample, error) {
	return MeasureWith(s, row, params, Options{Benchtime: benchtime})
}

// MeasureWith is Measure with all options.
func MeasureWith(s *scenarios.Scenario, row scenarios.Row, params map[string]string, opts Options) (*Sample, error) {
	if err := checkParams(s, params); err != nil {
		return nil, err
	}
	if d, ok := row.Def(); ok && opts.GCOn && d.NoGCOn != "" {
		return nil, scenarios.NotSupported("%s", d.NoGCOn)
	}
	benchtime := opts.Benchtime
	hooked := opts.FinalStart != nil
	if fixed := s.Iters(params); fixed > 0 {
		env, out, err := runOnce(s, row, params, fixed, opts, hooked)
		if err != nil {
			return nil, err
		}
		return sample(s, env, out)
	}
	const maxIters = 1 << 30
	n := 1
	for {
		env, out, err := runOnce(s, row, params, n, opts, false)
		if err != nil {
			return nil, err
		}
		if env.Elapsed() >= benchtime || n >= maxIters {
			if hooked {
				// The run that counts is only known once it has run:
				// repeat it with the hooks around it.
				if env, out, err = runOnce(s, row, params, n, opts, true); err != nil {
					return nil, err
				}
			}
			return sample(s, env, out)
		}
		n = nextIters(n, env.Elapsed(), benchtime)
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

func checkParams(s *scenarios.Scenario, params map[string]string) error {
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

// runOnce runs the row's body once with n iterations under the GC policy;
// final brackets it with opts.FinalStart and FinalStop.
func runOnce(s *scenarios.Scenario, row scenarios.Row, params map[string]string, n int, opts Options, final bool) (*scenarios.Env, scenarios.Outcome, error) {
	env := &scenarios.Env{N: n, Params: params, Loadgen: opts.Loadgen}
	runtime.GC()
	if !opts.GCOn {
		old := debug.SetGCPercent(-1)
		defer debug.SetGCPercent(old)
	}
	var stop func()
	if final {
		if err := opts.FinalStart(); err != nil {
			return nil, scenarios.Outcome{}, err
		}
		stop = opts.FinalStop
	}
	env, out, err := runBody(s, row, params, env)
	if stop != nil {
		stop() // before the checksum: Want may take a while
	}
	if err != nil {
		return nil, out, err
	}
	return check(s, row, env, out)
}

// runBody runs the state-machine body or, on the row's runtime, the
// blocking one: once, timed from before the body starts (the body resets
// the timer after its set-up), or, for a FreshRuntime cell, once per
// iteration.
func runBody(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env) (*scenarios.Env, scenarios.Outcome, error) {
	if s.FreshRuntime != nil && s.FreshRuntime(params) {
		return runFresh(s, row, params, env)
	}
	out, err := callBody(s, row, params, env, true)
	return env, out, err
}

// runFresh calls the body once per iteration, each in a fresh runtime
// (Scenario.FreshRuntime), and adds up the calls' outcomes. The timer is
// the body's alone: it times its iteration with StartTimer/StopTimer.
func runFresh(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env) (*scenarios.Env, scenarios.Outcome, error) {
	if d, ok := row.Def(); ok && d.SharedAcrossRuns != "" {
		return nil, scenarios.Outcome{}, scenarios.NotSupported("this cell needs a fresh runtime per iteration, and %s", d.SharedAcrossRuns)
	}
	var total scenarios.Outcome
	for i := 0; i < env.N; i++ {
		env.Iter = i
		out, err := callBody(s, row, params, env, false)
		if err != nil {
			return nil, total, err
		}
		total.Ops += out.Ops
		total.Checksum += out.Checksum // wrapping: Want adds the same way
	}
	return env, total, nil
}

// callBody calls the body once; timed starts the timer before it and
// stops it after.
func callBody(s *scenarios.Scenario, row scenarios.Row, params map[string]string, env *scenarios.Env, timed bool) (scenarios.Outcome, error) {
	start, stop := env.ResetTimer, env.StopTimer
	if !timed {
		start, stop = func() {}, func() {}
	}
	var out scenarios.Outcome
	if row.RunsStateMachines() {
		if s.StateMachine == nil {
			return out, scenarios.NotSupported("scenario %s has no state-machine body yet", s.Name)
		}
		start()
		out, err := s.StateMachine(env)
		stop()
		return out, err
	}
	if s.Blocking == nil {
		return out, scenarios.NotSupported("scenario %s has no blocking body yet", s.Name)
	}
	var bodyErr error
	err := row.RunBlocking(scenarios.CellInfo{Scenario: s.Name, Params: params}, func(rt scenarios.Blocking) {
		start()
		out, bodyErr = s.Blocking(rt, env)
		stop()
	})
	return out, errors.Join(bodyErr, err)
}

// check holds a run to its checksum and operation count.
func check(s *scenarios.Scenario, row scenarios.Row, env *scenarios.Env, out scenarios.Outcome) (*scenarios.Env, scenarios.Outcome, error) {
	if want := s.Want(env); out.Checksum != want {
		return nil, out, fmt.Errorf("checksum mismatch: %s on %s with N=%d produced %#x, want %#x: the body did not do the work the scenario defines", s.Name, row, env.N, out.Checksum, want)
	}
	if out.Ops <= 0 {
		return nil, out, fmt.Errorf("scenario %s on %s reported %d operations; the per-operation metrics need at least one", s.Name, row, out.Ops)
	}
	return env, out, nil
}

func sample(s *scenarios.Scenario, env *scenarios.Env, out scenarios.Outcome) (*Sample, error) {
	sm := &Sample{Iters: env.N, Values: make([]float64, len(s.Metrics))}
	for i, m := range s.Metrics {
		switch m.Kind {
		case scenarios.TimePerOp:
			sm.Values[i] = float64(env.Elapsed().Nanoseconds()) / float64(out.Ops)
		case scenarios.AllocsPerOp:
			sm.Values[i] = float64(env.Allocs()) / float64(out.Ops)
		case scenarios.FaultsPerOp:
			sm.Values[i] = float64(env.Faults()) / float64(out.Ops)
		case scenarios.BodyMeasured:
			v, ok := out.Values[m.Unit]
			if !ok {
				return nil, fmt.Errorf("scenario %s did not report its metric %s", s.Name, m.Unit)
			}
			sm.Values[i] = v
		}
	}
	return sm, nil
}
