package scenarios_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	_ "github.com/corobench/corobench/scenarios/rows"
)

// TestRegistryIsComplete: with the bodies and rows linked in, every
// scenario of the display order is registered, in that order, and the
// built-in rows are registered in theirs.
func TestRegistryIsComplete(t *testing.T) {
	if err := scenarios.CheckRegistry(); err != nil {
		t.Fatal(err)
	}
	if scenarios.All[0] != bodies.Calibrate || scenarios.All[1] != bodies.Switch || scenarios.All[2] != bodies.PingPong {
		t.Errorf("registry order starts %v, want calibrate, switch, pingpong", scenarios.Names()[:3])
	}
	want := []string{"stackful-asm", "stackful-coro", "stackless", "goroutine-single", "goroutine-multi"}
	if got := scenarios.RowNames(); !slices.Equal(got[:len(want)], want) {
		t.Errorf("rows %v, want %v first", got, want)
	}
}

// TestRegisterRefusesMisuse: a scenario outside the display order, a
// duplicate, and rows without a way to run bodies are refused, naming the
// problem.
func TestRegisterRefusesMisuse(t *testing.T) {
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			if p, _ := recover().(string); !strings.Contains(p, want) {
				t.Errorf("%s: panic %q, want one containing %q", name, p, want)
			}
		}()
		f()
	}
	mustPanic("unknown scenario", "not in the display order", func() {
		scenarios.Register(&scenarios.Scenario{Name: "nope", Summary: "x", Want: func(*scenarios.Env) uint64 { return 0 }})
	})
	mustPanic("duplicate", "registered twice", func() {
		s := *bodies.PingPong
		scenarios.Register(&s)
	})
	mustPanic("no runner", "must have either a RunBlocking", func() {
		scenarios.RegisterRow(scenarios.RowDef{Name: "no-runner"})
	})
	mustPanic("foreign state machine", "only the built-in stackless row", func() {
		scenarios.RegisterRow(scenarios.RowDef{Name: "mine", StateMachine: true})
	})
	mustPanic("taken name", "already registered", func() {
		scenarios.RegisterRow(scenarios.RowDef{Name: scenarios.StackfulAsm, StateMachine: true})
	})
	mustPanic("bad name", "contains a space", func() {
		scenarios.RegisterRow(scenarios.RowDef{Name: "a b", RunBlocking: func(scenarios.CellInfo, func(scenarios.Blocking)) error { return nil }})
	})
}

// TestParamsDeclareTheirRange: every parameter is an integer with a range
// or an enumeration, every value a run sweeps passes its own check, and an
// integer parameter of a size (any but an offered rate) declares its
// memory per unit.
func TestParamsDeclareTheirRange(t *testing.T) {
	for _, s := range scenarios.All {
		for _, p := range s.Params {
			if p.Doc == "" {
				t.Errorf("%s: parameter %s has no Doc", s.Name, p.Key)
			}
			// An offered rate (the load sweep's key) is no size.
			isRate := s.Load != nil && s.Load.Key == p.Key
			if p.Max > 0 && p.BytesPer == 0 && !isRate {
				t.Errorf("%s: integer parameter %s declares no BytesPer", s.Name, p.Key)
			}
			for _, v := range append(append([]string{}, p.Full...), p.Quick...) {
				if err := p.Check(v); err != nil {
					t.Errorf("%s: its own value: %v", s.Name, err)
				}
			}
			if p.Check("-5") == nil || p.Check("abc") == nil || p.Check("99999999999") == nil {
				t.Errorf("%s: parameter %s accepts -5, abc or 99999999999", s.Name, p.Key)
			}
		}
	}
}

// TestHeadlinesAreDeclaredOnce: the report's headline lines come from the
// metrics' Headline fields: labels are distinct, and every preferred
// setting names a parameter of its scenario with a valid value.
func TestHeadlinesAreDeclaredOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenarios.All {
		for _, m := range s.Metrics {
			if m.Headline == "" {
				if len(m.HeadlineAt) > 0 {
					t.Errorf("%s %s: HeadlineAt without Headline", s.Name, m.Unit)
				}
				continue
			}
			if seen[m.Headline] {
				t.Errorf("headline %q declared twice", m.Headline)
			}
			seen[m.Headline] = true
			// A knee figure is set by every parameter but the rate.
			params := s.Params
			if m.HeadlineKnee {
				params = slices.DeleteFunc(slices.Clone(params), func(p scenarios.Param) bool { return p.Key == s.Load.Key })
			}
			for _, at := range m.HeadlineAt {
				// The report's column form: every parameter once, in
				// declaration order, "k=v/k=v".
				parts := strings.Split(at, "/")
				if len(parts) != len(params) {
					t.Errorf("%s %s: HeadlineAt %q does not set each of the parameters %v", s.Name, m.Unit, at, s.ParamKeys())
					continue
				}
				for i, kv := range parts {
					k, v, _ := strings.Cut(kv, "=")
					if k != params[i].Key || params[i].Check(v) != nil {
						t.Errorf("%s %s: HeadlineAt %q is not a valid setting", s.Name, m.Unit, at)
					}
				}
			}
		}
	}
	if len(seen) < 7 {
		t.Errorf("only %d headline figures declared", len(seen))
	}
}

// TestEveryScenarioCountsFaults: Register gives every scenario the
// minor-fault metric, last and once, so every cell reports it.
func TestEveryScenarioCountsFaults(t *testing.T) {
	for _, s := range scenarios.All {
		n := 0
		for _, m := range s.Metrics {
			if m.Unit == scenarios.FaultsUnit {
				n++
			}
		}
		if n != 1 || s.Metrics[len(s.Metrics)-1].Kind != scenarios.FaultsPerOp {
			t.Errorf("%s: metrics %v, want %s once, last", s.Name, s.Metrics, scenarios.FaultsUnit)
		}
	}
}
