package claims

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corobench/corobench/cmd/benchrun/internal/cells"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
)

// cell writes 8 samples of name spread ±2% around median.
func cell(name, unit string, median float64) string {
	var b strings.Builder
	for i := -4; i < 4; i++ {
		fmt.Fprintf(&b, "Benchmark%s 100 %g %s\n", name, median*(1+0.005*float64(i)), unit)
	}
	return b.String()
}

func evaluate(t *testing.T, text string) map[string]Result {
	t.Helper()
	f, err := results.Read(strings.NewReader("goarch: amd64\n"+text), "claims.txt")
	if err != nil {
		t.Fatal(err)
	}
	set, err := cells.Group([]*results.File{f})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Result{}
	for _, r := range Evaluate(set) {
		out[strings.Fields(r.Text)[1]] = r // "full-context", "stackful", "per", "direct", "context"
	}
	return out
}

func want(t *testing.T, r Result, v Verdict, whyContains string) {
	t.Helper()
	if r.Verdict != v || !strings.Contains(r.Why, whyContains) {
		t.Errorf("%q: verdict %q why %q figure %q; want %q with %q", r.Text, r.Verdict, r.Why, r.Figure, v, whyContains)
	}
}

func TestClaimsHold(t *testing.T) {
	rs := evaluate(t,
		cell("Switch/impl=stackful-asm", "ns/switch", 16)+
			cell("Switch/impl=stackful-coro", "ns/switch", 40)+
			cell("Switch/impl=stackless", "ns/switch", 12)+
			cell("Handoff/impl=stackful-asm/via=direct", "ns/switch", 10)+
			cell("Handoff/impl=stackful-asm/via=scheduler", "ns/switch", 19)+
			cell("Spawn/impl=stackful-asm/alive=1/pool=cold", "ns/spawn", 24000)+
			cell("Spawn/impl=stackful-asm/alive=1/pool=warm", "ns/spawn", 35)+
			cell("Memory/impl=stackful-asm/n=1000", "B/coroutine", 4400)+
			cell("Memory/impl=stackless/n=1000", "B/coroutine", 1100)+
			cell("Memory/impl=stackful-asm/n=100000", "B/coroutine", 4300)+
			cell("Memory/impl=stackless/n=100000", "B/coroutine", 1050))
	want(t, rs["full-context"], Holds, "overlaps the claimed [10 ns, 20 ns]")
	want(t, rs["stackful"], Holds, "stackless: 95% CI overlaps the claimed [10 ns, 50 ns]")
	want(t, rs["per"], Holds, "stackless/stackful-asm = 0.24")
	if !strings.HasPrefix(rs["per"].Figure, "n=100000:") {
		t.Errorf("memory claim not checked at the largest n: %q", rs["per"].Figure)
	}
	want(t, rs["direct"], Holds, "via=scheduler / via=direct = 1.90×")

	// A larger n with too few samples for a CI is passed over.
	rs2 := evaluate(t,
		cell("Memory/impl=stackful-asm/n=100000", "B/coroutine", 4300)+
			cell("Memory/impl=stackless/n=100000", "B/coroutine", 1050)+
			"BenchmarkMemory/impl=stackful-asm/n=1000000 1 4200 B/coroutine\n"+
			"BenchmarkMemory/impl=stackless/n=1000000 1 1000 B/coroutine\n")
	want(t, rs2["per"], Holds, "stackless/stackful-asm")
	if !strings.HasPrefix(rs2["per"].Figure, "n=100000:") {
		t.Errorf("memory claim judged at a column without a CI: %q", rs2["per"].Figure)
	}
	want(t, rs["context"], Holds, "alive=1/pool=cold / alive=1/pool=warm = 685.71×")
	// n=8: the 95% CI of the median is [x(1), x(8)] = [15.68, 16.24].
	if f := rs["full-context"].Figure; f != "16.0 ns (95% CI 15.7–16.2 ns, n=8)" {
		t.Errorf("figure %q", f)
	}
}

func TestClaimsDoNotHold(t *testing.T) {
	rs := evaluate(t,
		cell("Switch/impl=stackful-asm", "ns/switch", 5)+
			cell("Switch/impl=stackless", "ns/switch", 80)+
			cell("Handoff/impl=stackful-asm/via=direct", "ns/switch", 10)+
			cell("Handoff/impl=stackful-asm/via=scheduler", "ns/switch", 12)+
			cell("Spawn/impl=stackful-asm/alive=1/pool=cold", "ns/spawn", 35)+
			cell("Spawn/impl=stackful-asm/alive=1/pool=warm", "ns/spawn", 35)+
			cell("Memory/impl=stackful-asm/n=1000", "B/coroutine", 128*1024)+
			cell("Memory/impl=stackless/n=1000", "B/coroutine", 1100))
	want(t, rs["full-context"], Cheaper, "below the claimed [10 ns, 20 ns] (cheaper than claimed)")
	want(t, rs["stackful"], DoesNotHold, "stackless: 95% CI lies above the claimed [10 ns, 50 ns]")
	want(t, rs["per"], DoesNotHold, "above the claimed [4 KiB, 64 KiB]")
	want(t, rs["direct"], DoesNotHold, "below the 1.5× the rule asks")
	want(t, rs["context"], DoesNotHold, "not significant")
}

func TestClaimsNotMeasured(t *testing.T) {
	rs := evaluate(t,
		"# corobench:unsupported BenchmarkSwitch/impl=stackful-asm: not supported: toolchain not gated\n"+
			cell("Switch/impl=stackless", "ns/switch", 3)+
			"# corobench:failed BenchmarkHandoff/impl=stackful-asm/via=direct: timed out after 1m0s\n"+
			cell("Handoff/impl=stackful-asm/via=scheduler", "ns/switch", 19)+
			cell("Spawn/impl=stackful-asm/alive=1/pool=cold", "ns/spawn", 24000))
	want(t, rs["full-context"], NotMeasured, "Switch stackful-asm: unsupported: not supported: toolchain not gated")
	want(t, rs["stackful"], NotMeasured, "unsupported")
	want(t, rs["per"], NotMeasured, "Memory not in this run")
	if rs["per"].Why != "Memory not in this run" {
		t.Errorf("why repeats itself: %q", rs["per"].Why)
	}
	want(t, rs["direct"], NotMeasured, "Handoff stackful-asm via=direct: failed: timed out after 1m0s")
	want(t, rs["context"], NotMeasured, "Spawn stackful-asm alive=1/pool=warm: no ns/spawn figure in this run")
	if !strings.Contains(rs["direct"].Figure, "via=scheduler: 19.0 ns") {
		t.Errorf("the measured half is not shown: %q", rs["direct"].Figure)
	}

	arm := evaluate(t, "goarch: arm64\n"+cell("Switch/impl=stackful-asm", "ns/switch", 15))
	want(t, arm["full-context"], NotMeasured, "this run is arm64")
}

func TestAnchorsQuoteSources(t *testing.T) {
	if len(Anchors) < 20 {
		t.Fatalf("%d anchors", len(Anchors))
	}
	for _, a := range Anchors {
		if a.Topic == "" || a.System == "" || a.Figure == "" || a.Source == "" {
			t.Errorf("anchor without topic, system, figure or source: %+v", a)
		}
		if a.Topic == "Context switch" && a.Counting == "" {
			t.Errorf("switch anchor %s does not say one-way or round trip", a.System)
		}
	}
}

// TestClaimsNameRegisteredCells holds each claim's cells to the scenarios
// registry: the scenario, its unit and the rows must exist, and a run
// without that scenario must leave the claim "not measured" naming it (so
// the declared scenario is the one the check reads).
func TestClaimsNameRegisteredCells(t *testing.T) {
	empty, err := cells.Group(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Claims {
		s, ok := scenarios.LookupBench(c.Scenario)
		if !ok {
			t.Errorf("claim %q: scenario %q is not registered", c.Text, c.Scenario)
			continue
		}
		if !slices.ContainsFunc(s.Metrics, func(m scenarios.Metric) bool { return m.Unit == c.Unit }) {
			t.Errorf("claim %q: scenario %s has no unit %q", c.Text, c.Scenario, c.Unit)
		}
		for _, r := range c.Rows {
			if _, ok := scenarios.ParseRow(r); !ok {
				t.Errorf("claim %q: row %q is not registered", c.Text, r)
			}
		}
		if len(s.Params) > 0 && len(c.Columns) == 0 && c.Scenario != "Memory" {
			t.Errorf("claim %q: scenario %s has parameters but the claim names no column", c.Text, c.Scenario)
		}
		for _, col := range c.Columns {
			// A column names every parameter once, in declaration
			// order, with a valid value: the reader's column form.
			parts := strings.Split(col, "/")
			if len(parts) != len(s.Params) {
				t.Errorf("claim %q: column %q does not set each of %s's parameters %v", c.Text, col, c.Scenario, s.ParamKeys())
				continue
			}
			for i, kv := range parts {
				k, v, _ := strings.Cut(kv, "=")
				if k != s.Params[i].Key || s.Params[i].Check(v) != nil {
					t.Errorf("claim %q: column %q: %q is not a valid setting of %s's parameter %s", c.Text, col, kv, c.Scenario, s.Params[i].Key)
				}
			}
		}
		// And the check reads those columns: a run with exactly those
		// cells measures the claim.
		if len(c.Columns) > 0 {
			var text strings.Builder
			text.WriteString("goarch: amd64\n")
			for _, r := range c.Rows {
				for i, col := range c.Columns {
					text.WriteString(cell(c.Scenario+"/impl="+r+"/"+col, c.Unit, 100*float64(len(c.Columns)-i)))
				}
			}
			f, err := results.Read(strings.NewReader(text.String()), "columns.txt")
			if err != nil {
				t.Fatal(err)
			}
			set, err := cells.Group([]*results.File{f})
			if err != nil {
				t.Fatal(err)
			}
			if r := c.check(set); r.Verdict == NotMeasured {
				t.Errorf("claim %q with cells at its columns %v: not measured (%s): the check reads other cells", c.Text, c.Columns, r.Why)
			}
		}
		r := c.check(empty)
		if r.Verdict != NotMeasured || !strings.Contains(r.Why, c.Scenario) {
			t.Errorf("claim %q on an empty run: %s (%s), want not measured naming %s", c.Text, r.Verdict, r.Why, c.Scenario)
		}
	}
}

// TestCheaperThanClaimed: a cost below the claimed range is its own
// verdict, not "does not hold"; combined with a part that holds, the claim
// is cheaper; with a part above its range, it does not hold.
func TestCheaperThanClaimed(t *testing.T) {
	rs := evaluate(t,
		cell("Switch/impl=stackful-asm", "ns/switch", 5)+
			cell("Switch/impl=stackless", "ns/switch", 20))
	want(t, rs["full-context"], Cheaper, "cheaper than claimed")
	want(t, rs["stackful"], Cheaper, "stackless: 95% CI overlaps")
}
