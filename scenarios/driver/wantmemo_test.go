package driver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// TestWantMemoGivesWhatWantGives: for registered scenarios whose Want
// reads N and parameters, the memo returns what a direct call returns,
// for every N and setting asked in any order, again when asked twice:
// it is keyed on both, so no setting or count gets another's checksum.
func TestWantMemoGivesWhatWantGives(t *testing.T) {
	cases := []struct {
		s      *scenarios.Scenario
		params []map[string]string
	}{
		{bodies.Calibrate, []map[string]string{nil}},
		{bodies.PingPong, []map[string]string{nil}},
		{bodies.Yield, []map[string]string{{"n": "2"}, {"n": "64"}, {"n": "4096"}}},
		{bodies.Timer, []map[string]string{{"n": "1"}, {"n": "1000"}}},
		{bodies.Offload, []map[string]string{{"c": "1", "kb": "16"}, {"c": "1", "kb": "256"}}},
		{bodies.AwaitReady, []map[string]string{{"state": "ready"}, {"state": "pending"}}},
	}
	for _, c := range cases {
		m := newWantMemo()
		for pass := 0; pass < 2; pass++ {
			for _, n := range []int{1, 7, 100, 7, 1} {
				for _, p := range c.params {
					env := &scenarios.Env{N: n, Params: p}
					want := c.s.Want(env)
					if got := m.want(c.s, env); got != want {
						t.Errorf("%s %v N=%d (pass %d): memo %#x, Want %#x", c.s.Name, p, n, pass, got, want)
					}
				}
			}
		}
	}
}

// TestWantMemoKeysOnNAndParams counts the calls of a Want that reads
// both: one per distinct (parameters, N), none for a repeat, and a map
// with the same pairs in another order is the same setting.
func TestWantMemoKeysOnNAndParams(t *testing.T) {
	var calls []string
	s := &scenarios.Scenario{Name: "keyed", Want: func(env *scenarios.Env) uint64 {
		calls = append(calls, fmt.Sprintf("%v/%d", env.Params, env.N))
		return uint64(env.N)*1000 + uint64(len(env.Params["a"]))
	}}
	m := newWantMemo()
	asks := []struct {
		params map[string]string
		n      int
		want   uint64
		call   bool
	}{
		{map[string]string{"a": "x", "b": "1"}, 3, 3001, true},
		{map[string]string{"a": "x", "b": "1"}, 3, 3001, false},
		{map[string]string{"b": "1", "a": "x"}, 3, 3001, false}, // the same setting
		{map[string]string{"a": "x", "b": "1"}, 4, 4001, true},  // another N
		{map[string]string{"a": "xy", "b": "1"}, 3, 3002, true}, // another value
		{map[string]string{"a": "x", "b": "2"}, 3, 3001, true},  // a value Want's sum does not show
		{map[string]string{"a": "x=b"}, 3, 3003, true},          // not "a=x" and "b=…" run together
		{nil, 3, 3000, true},
		{nil, 3, 3000, false},
	}
	for i, a := range asks {
		before := len(calls)
		if got := m.want(s, &scenarios.Env{N: a.n, Params: a.params}); got != a.want {
			t.Errorf("ask %d (%v N=%d): %d, want %d", i, a.params, a.n, got, a.want)
		}
		if called := len(calls) > before; called != a.call {
			t.Errorf("ask %d (%v N=%d): Want called %v, want %v", i, a.params, a.n, called, a.call)
		}
	}
	var nilMemo *wantMemo
	for range 2 {
		nilMemo.want(s, &scenarios.Env{N: 5})
	}
	if n := strings.Count(strings.Join(calls, " "), "/5"); n != 2 {
		t.Errorf("a nil memo called Want %d times for 2 asks, want 2", n)
	}
}

// TestEveryRunIsStillChecked: with the memo, a measurement computes Want
// once per iteration count, yet holds every run to it: a timed run whose
// checksum is wrong, after runs with the same N that were right, fails
// the measurement.
func TestEveryRunIsStillChecked(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	for bad := 1; bad <= 3; bad++ {
		var wants, runs int
		s := &scenarios.Scenario{
			Name: "checked", Bench: "Checked", FixedIters: 4, RerunFixed: func(map[string]string) scenarios.Rerun { return scenarios.RerunAlways },
			Metrics: []scenarios.Metric{{Unit: "ns/op", Kind: scenarios.TimePerOp}},
			Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
				runs++
				sum := uint64(env.N)
				if runs == bad+1 {
					sum++ // this run did not do the work
				}
				return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
			},
			Want: func(env *scenarios.Env) uint64 { wants++; return uint64(env.N) },
		}
		_, err := MeasureWith(s, scenarios.GoroutineSingle, nil, Options{Benchtime: time.Millisecond, Runs: 5, NoMark: true})
		if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
			t.Errorf("run %d of 5 wrong: err %v, want a checksum mismatch", bad+1, err)
		}
		if runs != bad+1 {
			t.Errorf("run %d of 5 wrong: %d runs made, want the measurement to stop at it", bad+1, runs)
		}
		if wants != 1 {
			t.Errorf("run %d of 5 wrong: Want computed %d times for one N, want once", bad+1, wants)
		}
	}
}
