package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/perf/benchfmt"

	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
	"github.com/corobench/corobench/scenarios/loadgen"
)

// The load generator's own ceiling. An echo row can sustain no more than
// the generator offers, so a run with echo cells first measures what the
// generator sustains against the cheapest server there is
// (loadgen.TrivialServer: one thread, raw epoll, in the generator's own
// process, on the other core, as an echo cell places its server) at the
// connection count the echo sweep uses: the highest offered rate of which
// it completes the echo scenario's share (its LoadSweep.Share, 95%). Its
// latency is recorded but not held to the rows' bound: on a shared machine
// a preemption of either side puts a try's p99 over 2 ms at any rate, and
// that is the machine, not a limit of the generator; a rate the generator
// cannot offer shows as requests it did not complete. The result is the
// results file's loadgen-ceiling line; the report marks a row whose knee
// comes within 80% of it.
//
// The server lives in the generator's process rather than a third one so
// that one process start per try is all it costs, and nothing (no server
// runtime, no scheduler) stands between the kernel and either side.

// Ceiling sweep: offered rates from ceilingStart, each ceilingStep times the
// last, each tried up to ceilingTries times for ceilingDuration of load;
// a rate is sustained when one try completes the share, and the sweep
// stops at the first rate that none does. One good try is enough because
// the ceiling is what the generator can do: another tenant's preemption
// only ever makes a try worse (a short try's completed share drops by the
// stall over its length). Then two halvings of the gap between the last
// rate sustained and the first not (ceilingRefine) bring the ceiling's
// uncertainty from 20% to 5%. About 3–7 s in all on the reference machine.
const (
	ceilingStart    = 50_000.0
	ceilingStep     = 1.2
	ceilingTries    = 3
	ceilingDuration = 200 * time.Millisecond
	ceilingTimeout  = 30 * time.Second
	ceilingRefine   = 2
)

// ceilingMaxRate ends a sweep that never fails (a variable for the tests,
// which stop early).
var ceilingMaxRate = 5_000_000.0

// ceilingCommand starts a generator process; nil skips the measurement (a
// test that is not about it). Tests that are point it at the test binary.
var ceilingCommand scenarios.LoadgenCommand = scenarios.ReexecLoadgen(LoadgenSubcommand)

// loadgenCeiling measures the ceiling when cells has echo cells and
// returns its config line (none otherwise). A failed measurement is a
// line that says so, never a failed run: the cells do not depend on it.
func loadgenCeiling(ctx context.Context, cells []Cell, pins *pinPlan) []benchfmt.Config {
	conns, ok := echoSweepConns(cells)
	if !ok || ceilingCommand == nil {
		return nil
	}
	value := fmt.Sprintf("%s c=%d: %s", bodies.Echo.Bench, conns, measureCeiling(ctx, conns, pins))
	return []benchfmt.Config{{Key: results.KeyLoadgenCeiling, Value: []byte(value), File: true}}
}

// echoSweepConns is the connection count at which the run's echo cells
// sweep the most rates (c=64 in a default run).
func echoSweepConns(cells []Cell) (int, bool) {
	rates := map[string][]string{}
	for _, c := range cells {
		if c.Scenario != bodies.Echo {
			continue
		}
		rates[c.Params["c"]] = appendNew(rates[c.Params["c"]], c.Params["rate"])
	}
	best := -1
	for c, rs := range rates {
		n, err := strconv.Atoi(c)
		if err != nil {
			continue
		}
		if b := strconv.Itoa(best); best < 0 || len(rs) > len(rates[b]) || (len(rs) == len(rates[b]) && n < best) {
			best = n
		}
	}
	return best, best >= 0
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// ceilingTry is one generator run of the sweep.
type ceilingTry struct {
	achieved, p99 float64 // req/s, ns
	cpu, server   int
	engine        string // the generator's Report.Engine, with its note
	// The shares of the load's time the generator spent in turns with
	// nothing at all to do (a lower bound of its spare time: a turn that
	// only collected a reply counts as busy) and the trivial server
	// waiting for work in epoll_wait: how close each side was to its own
	// limit (on a shared machine both shrink with what other tenants take).
	genIdle, srvIdle float64
	// srvCost is the busy time of the trivial server's core per request
	// (loadgen.Report.ServerCostNs; 0 when it has no core of its own).
	srvCost float64
}

func (tr ceilingTry) idleText() string {
	return fmt.Sprintf("generator turns with nothing to do %.0f%% of the time, trivial server waiting for work %.0f%%", 100*tr.genIdle, 100*tr.srvIdle)
}

// measureCeiling runs the sweep and describes its outcome: "<rate> req/s
// (how)", "none (…)" or "failed: …".
func measureCeiling(ctx context.Context, conns int, pins *pinPlan) string {
	start := time.Now()
	var steps []string
	last, where := 0.0, ""
	var lastTry ceilingTry
	// tryRate runs up to ceilingTries tries at rate: the first that
	// completes the share, or the best of them.
	tryRate := func(rate float64) (ceilingTry, bool, error) {
		var best ceilingTry
		for try := 0; try < ceilingTries; try++ {
			tr, err := ceilingRun(ctx, conns, rate, pins)
			if err != nil {
				return tr, false, err
			}
			where = fmt.Sprintf("the server's thread on %s, the generator on %s; generator engine %s", cpuText(tr.server), cpuText(tr.cpu), tr.engine)
			if tr.achieved >= bodies.Echo.Load.Share*rate {
				return tr, true, nil
			}
			if tr.achieved > best.achieved {
				best = tr
			}
		}
		return best, false, nil
	}
	fail, failTry := 0.0, ceilingTry{}
	first, firstTry := 0.0, ceilingTry{} // the lowest rate sustained
	for rate := ceilingStart; rate <= ceilingMaxRate; rate *= ceilingStep {
		rate = float64(int(rate/1000)) * 1000 // whole thousands, for the reader
		tr, ok, err := tryRate(rate)
		if err != nil {
			return "failed: " + err.Error()
		}
		if !ok {
			fail, failTry = rate, tr
			break
		}
		last, lastTry = rate, tr
		if first == 0 {
			first, firstTry = rate, tr
		}
	}
	// Between the last rate sustained and the first not, ceilingRefine
	// halvings: a ×1.2 step alone leaves the ceiling 20% uncertain.
	for h := 0; h < ceilingRefine && last > 0 && fail > 0; h++ {
		mid := float64(int((last+fail)/2/1000)) * 1000
		if mid <= last || mid >= fail {
			break
		}
		tr, ok, err := tryRate(mid)
		if err != nil {
			return "failed: " + err.Error()
		}
		if ok {
			last, lastTry = mid, tr
		} else {
			fail, failTry = mid, tr
		}
	}
	if fail > 0 {
		steps = append(steps, fmt.Sprintf("first rate not sustained %.0f req/s (the best of %d tries completed %.0f%%; %s)",
			fail, ceilingTries, 100*failTry.achieved/fail, failTry.idleText()))
	}
	parts := []string{fmt.Sprintf("the highest offered rate of which the generator completed ≥ %.0f%% in one of up to %d tries of %v (rates ×%.1f from %.0fk, then %d halvings of the gap between the last rate sustained and the first not) against a trivial echo server in its own process (one thread, raw epoll; %s)",
		100*bodies.Echo.Load.Share, ceilingTries, ceilingDuration, ceilingStep, ceilingStart/1000, ceilingRefine, where)}
	if len(steps) == 0 {
		steps = append(steps, "no rate up to the sweep's last failed: the ceiling may lie higher")
	}
	parts = append(parts, steps...)
	if last > 0 {
		parts = append(parts, fmt.Sprintf("p99 at %.0f req/s %v; %s", last, time.Duration(lastTry.p99).Round(time.Microsecond), lastTry.idleText()))
	}
	if first > 0 && firstTry.srvCost > 0 && lastTry.srvCost > 0 {
		// The check of the report's capacity estimate on the one server
		// whose ceiling the sweep measures: what its core spent per
		// request at a light rate, and at the ceiling.
		parts = append(parts, fmt.Sprintf("the trivial server's core busy %v per request at %.0f req/s (1e9 over it, %.0f req/s, is the report's lower bound on one core), %v at %.0f req/s",
			time.Duration(firstTry.srvCost).Round(10*time.Nanosecond), first, 1e9/firstTry.srvCost, time.Duration(lastTry.srvCost).Round(10*time.Nanosecond), last))
	}
	parts = append(parts, fmt.Sprintf("measured in %v", time.Since(start).Round(100*time.Millisecond)))
	how := strings.Join(parts, "; ")
	if last == 0 {
		return "none (" + how + ")"
	}
	return fmt.Sprintf("%.0f req/s (%s)", last, how)
}

func cpuText(cpu int) string {
	if cpu < 0 {
		return "no pinned core"
	}
	return "cpu" + strconv.Itoa(cpu)
}

// ceilingRun runs the generator once against its own server at rate.
func ceilingRun(ctx context.Context, conns int, rate float64, pins *pinPlan) (ceilingTry, error) {
	requests := max(conns, int(rate*ceilingDuration.Seconds()))
	cfg := loadgen.Config{Conns: conns, Requests: requests, Rate: rate, Size: bodies.EchoSize, CPU: -1, Timeout: ceilingTimeout, SelfEcho: true}
	cctx, cancel := context.WithTimeout(ctx, ceilingTimeout+5*time.Second)
	defer cancel()
	cmd := ceilingCommand(cctx, loadgen.Args(cfg))
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	// Started as a cell is, with benchrun's whole CPU set, so that it can
	// put its server and itself on two cores.
	var err error
	if pins.off == "" {
		err = startChild(cmd, &pins.orig, &pins.rest)
	} else {
		err = startChild(cmd, nil, nil)
	}
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return ceilingTry{}, fmt.Errorf("the generator at %.0f req/s: %v: %s", rate, err, strings.TrimSpace(tail(errs.String(), 300)))
	}
	var rep loadgen.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return ceilingTry{}, fmt.Errorf("the generator's report: %w", err)
	}
	if rep.ElapsedNs <= 0 || len(rep.LatencyNs) != requests {
		return ceilingTry{}, fmt.Errorf("the generator reported %d latencies over %d ns for %d requests", len(rep.LatencyNs), rep.ElapsedNs, requests)
	}
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	for _, v := range rep.LatencyNs {
		h.RecordValue(min(max(v, 1), int64(time.Hour)))
	}
	return ceilingTry{
		achieved: float64(rep.Requests) / (float64(rep.ElapsedNs) / 1e9),
		p99:      float64(h.ValueAtQuantile(99)),
		cpu:      rep.CPU, server: rep.ServerCPU,
		engine:  engineText(rep),
		genIdle: float64(rep.IdleNs) / float64(max(rep.Threads, 1)) / float64(rep.ElapsedNs),
		srvIdle: float64(rep.ServerIdleNs) / float64(rep.ElapsedNs),
		srvCost: rep.ServerCostNs,
	}, nil
}

// engineText names how the generator drove its sockets (what the echo
// cells' generator also uses, on the same kernel): "io_uring (ring setup
// flags …)" or "epoll (io_uring refused (…), so epoll)".
func engineText(rep loadgen.Report) string {
	if rep.Engine == "" {
		return "unknown (the generator did not say)"
	}
	e := rep.Engine
	if rep.EngineNote != "" {
		e += " (" + rep.EngineNote + ")"
	}
	if rep.Threads > 1 {
		e += fmt.Sprintf(", %d threads", rep.Threads)
	}
	return e
}
