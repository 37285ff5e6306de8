package harness

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/internal/cpulist"
	"github.com/corobench/corobench/internal/results"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// poolCheckMode is the child mode (childModeEnv, "poolcheck:DIR") that
// reports, from inside a real cell child, the settings a pool cell
// depends on: its GOMAXPROCS, the CPUs it may run on, and how many jobs
// its row's runtime ran at once on its thread pool, which is the pool's
// size (poolCheckChild).
const poolCheckMode = "poolcheck:"

// poolCheck is what a poolcheck child writes to DIR/<row>.json.
type poolCheck struct {
	GOMAXPROCS int
	CPUs       []int
	// Peak is the most pool jobs that ran at once: the pool's size, since
	// each job sleeps long enough for every pool thread to take one. -1:
	// the row has no pool (the goroutine rows run the work inline).
	Peak int
	Jobs int
	// PoolCPUs are the CPUs the pool's jobs found their threads allowed,
	// all of them alike (a job on a thread placed otherwise fails the
	// child); nil without a pool.
	PoolCPUs []int
}

// poolJobs is how many jobs a poolcheck child offloads: more than any
// pool size the test tells apart (PoolThreads and the reactor's default).
func poolJobs() int { return max(scenarios.PoolThreads(), reactor.DefaultPoolThreads) + 2 }

// poolCheckChild is the poolcheck child: args are the cell's arguments
// (childArgs).
func poolCheckChild(dir string, args []string) int {
	fs := flag.NewFlagSet("poolcheck", flag.ContinueOnError)
	name := fs.String("scenario", "", "")
	impl := fs.String("impl", "", "")
	params := fs.String("params", "", "")
	fs.String("benchtime", "", "")
	fs.Bool("gc-on", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s, _ := scenarios.Lookup(*name)
	row, _ := scenarios.ParseRow(*impl)
	p, err := scenarios.ParseParams(*params)
	if s == nil || err != nil {
		fmt.Fprintln(os.Stderr, "poolcheck: bad cell", *name, *params, err)
		return 2
	}
	got := poolCheck{GOMAXPROCS: runtime.GOMAXPROCS(0), Peak: -1, Jobs: poolJobs()}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		fmt.Fprintln(os.Stderr, "poolcheck:", err)
		return 1
	}
	got.CPUs = cpulist.Of(&set)
	var running, peak atomic.Int32
	var placeMu sync.Mutex
	var placeErr error
	job := func() {
		var set unix.CPUSet
		err := unix.SchedGetaffinity(0, &set)
		placeMu.Lock()
		switch cpus := cpulist.Of(&set); {
		case err != nil:
			placeErr = err
		case got.PoolCPUs == nil:
			got.PoolCPUs = cpus
		case fmt.Sprint(cpus) != fmt.Sprint(got.PoolCPUs):
			placeErr = fmt.Errorf("pool jobs ran on threads allowed %v and %v", got.PoolCPUs, cpus)
		}
		placeMu.Unlock()
		n := running.Add(1)
		for {
			if p := peak.Load(); n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		running.Add(-1)
	}
	if row.RunsStateMachines() {
		err = stacklessPoolPeak(s.Name, got.Jobs, job)
		got.Peak = int(peak.Load())
	} else {
		err = row.RunBlocking(scenarios.CellInfo{Scenario: s.Name, Params: p}, func(rt scenarios.Blocking) {
			if _, pooled := rt.(scenarios.PoolBound); !pooled {
				return
			}
			off := rt.(scenarios.Offloads)
			done := make([]scenarios.Signal, got.Jobs)
			errs := make([]error, got.Jobs)
			for i := range done {
				done[i] = rt.NewSignal()
				rt.Go(func() {
					defer done[i].Fire()
					o, err := off.NewOffloader()
					if err != nil {
						errs[i] = err
						return
					}
					defer o.Close()
					errs[i] = o.Run(job)
				})
			}
			for _, d := range done {
				d.Wait()
			}
			if err := errors.Join(errs...); err != nil {
				panic(err)
			}
			got.Peak = int(peak.Load())
		})
	}
	if err == nil {
		err = placeErr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "poolcheck:", err)
		return 1
	}
	b, _ := json.Marshal(got)
	if err := os.WriteFile(filepath.Join(dir, string(row)+".json"), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "poolcheck:", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(childReport{Unsupported: "poolcheck"})
	return 0
}

// stacklessPoolPeak offloads jobs jobs from as many tasks of the scheduler
// the stackless row's bodies of the scenario run on (bodies.StacklessFor).
func stacklessPoolPeak(scenario string, jobs int, job func()) error {
	s, release, err := bodies.StacklessFor(scenario)
	if err != nil {
		return err
	}
	defer release()
	for range jobs {
		w, err := s.NewWork()
		if err != nil {
			return err
		}
		defer w.Close()
		if err := s.Spawn(&offloadTask{w: w, job: job}); err != nil {
			return err
		}
	}
	return s.Run()
}

// offloadTask awaits one job on the pool.
type offloadTask struct {
	stackless.Coro
	w       *stackless.Work
	job     reactor.JobFunc
	started bool
}

func (t *offloadTask) Resume(c *stackless.Context) stackless.Step {
	if t.started {
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
		return c.Done()
	}
	t.started = true
	return c.AwaitWork(t.w, t.job, 0)
}

// TestPoolCellsGetTheirPs: the plan gives the pool cells (offload, fileio
// on the stackful and stackless rows) GOMAXPROCS = 1 + PoolThreads() and
// no other cell more than its row's, and each child's environment says so.
func TestPoolCellsGetTheirPs(t *testing.T) {
	k := scenarios.PoolThreads()
	if want := max(1, runtime.NumCPU()-1); k != want {
		t.Fatalf("PoolThreads() = %d, want allowed CPUs - 1 = %d", k, want)
	}
	pool := []*scenarios.Scenario{bodies.Offload, bodies.FileIO}
	for _, s := range pool {
		if !s.UsesPool {
			t.Errorf("%s does not declare UsesPool", s.Name)
		}
	}
	for _, c := range Plan(append(pool, bodies.PingPong, bodies.Echo), scenarios.Rows, true, nil, 1) {
		want := map[scenarios.Row]int{
			scenarios.StackfulAsm: 1, scenarios.StackfulCoro: 1, scenarios.Stackless: 1,
			scenarios.GoroutineSingle: 1, scenarios.GoroutineMulti: runtime.NumCPU(),
		}[c.Row]
		if slices.Contains(pool, c.Scenario) && c.Row != scenarios.GoroutineSingle && c.Row != scenarios.GoroutineMulti {
			want = 1 + k
		}
		env := childEnv([]string{"GOMAXPROCS=9"}, c)
		if got := envValue(env, "GOMAXPROCS"); got != strconv.Itoa(want) {
			t.Errorf("%s: child GOMAXPROCS=%s, want %d", c.Name(), got, want)
		}
		if got := c.Row.CellGOMAXPROCS(c.Scenario); got != want {
			t.Errorf("%s: CellGOMAXPROCS = %d, want %d", c.Name(), got, want)
		}
	}
}

func envValue(env []string, key string) string {
	var v string
	n := 0
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v = val
			n++
		}
	}
	if n != 1 {
		return fmt.Sprintf("(%d values)", n)
	}
	return v
}

// TestPoolCellsArePlacedInTwoParts: with pinning on, a pool cell starts
// on the pin CPU, as the single-P cells of the same rows do, and its pool
// threads are told the rest; the goroutine rows' cells of the same
// scenarios are not pool cells; the cpu-pin line says where each part ran.
func TestPoolCellsArePlacedInTwoParts(t *testing.T) {
	var orig unix.CPUSet
	orig.Set(0)
	orig.Set(1)
	orig.Set(2)
	p := &pinPlan{cpu: 2, orig: orig, rest: orig}
	p.rest.Clear(2)
	if got := p.poolCPUs(); got != "0,1" {
		t.Errorf("pool CPUs %q, want 0,1", got)
	}
	for _, r := range []scenarios.Row{scenarios.StackfulAsm, scenarios.StackfulCoro, scenarios.Stackless} {
		for _, s := range []*scenarios.Scenario{bodies.Offload, bodies.FileIO} {
			if p.pinned(s, r) || !p.poolPlaced(s, r) {
				t.Errorf("%s/%s: pinned %v, pool placed %v; want a placed pool cell", s.Name, r, p.pinned(s, r), p.poolPlaced(s, r))
			}
			if aff := p.childAffinity(s, r); aff == nil || aff.Count() != 1 || !aff.IsSet(2) {
				t.Errorf("%s/%s starts on %v, want cpu2 alone", s.Name, r, aff)
			}
		}
		if !p.pinned(bodies.PingPong, r) || p.poolPlaced(bodies.PingPong, r) {
			t.Errorf("pingpong/%s is not a pinned single-P cell", r)
		}
		want := string(r) + "=cpu2 (" + poolNames() + ": scheduler cpu2, pool threads cpu0,1)"
		if cfg := p.config(); !strings.Contains(cfg, want) {
			t.Errorf("cpu-pin %q does not contain %q", cfg, want)
		}
	}
	if !p.pinned(bodies.Offload, scenarios.GoroutineSingle) || p.poolPlaced(bodies.Offload, scenarios.GoroutineSingle) {
		t.Error("offload/goroutine-single (one P, no pool) is not a pinned single-P cell")
	}
	off := &pinPlan{cpu: -1, off: "off (--pin=false)"}
	if off.poolPlaced(bodies.FileIO, scenarios.Stackless) {
		t.Error("with pinning off, a pool cell is placed")
	}
	env := childEnv([]string{scenarios.PoolCPUsEnv + "=7", "HOME=/x"}, Cell{Scenario: bodies.PingPong, Row: scenarios.StackfulAsm})
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, scenarios.PoolCPUsEnv+"=") }) {
		t.Errorf("the caller's %s reached a child: %v", scenarios.PoolCPUsEnv, env)
	}
}

// TestPoolCellChildReadBack runs offload's cells through Run with pinning
// on, each child reporting from inside what it runs with: the pool cells
// have GOMAXPROCS = 1 + k, a pool that runs k jobs at once (not the
// reactor's default), and every allowed CPU; goroutine-single one P, on
// the pin CPU; pingpong on stackful-asm (the control) one P, on the pin
// CPU, and the reactor's default pool. The results' config lines say the
// same.
func TestPoolCellChildReadBack(t *testing.T) {
	k := scenarios.PoolThreads()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	allCPUs := cpulist.Of(&all)
	last := allCPUs[len(allCPUs)-1]
	pinning := len(allCPUs) > 1
	type want struct {
		procs, peak int
		cpus        []int // the process's, at start
		poolCPUs    []int // its pool threads'
	}
	single, rest := allCPUs, allCPUs
	if pinning {
		single, rest = []int{last}, allCPUs[:len(allCPUs)-1]
	}
	// A pool cell starts on the pin CPU with its pool threads on the rest.
	pool := want{1 + k, k, single, rest}
	cases := []struct {
		s    *scenarios.Scenario
		rows map[scenarios.Row]want
	}{
		{bodies.Offload, map[scenarios.Row]want{
			scenarios.StackfulAsm:     pool,
			scenarios.StackfulCoro:    pool,
			scenarios.Stackless:       pool,
			scenarios.GoroutineSingle: {1, -1, single, nil},
			scenarios.GoroutineMulti:  {runtime.NumCPU(), -1, allCPUs, nil},
		}},
		{bodies.FileIO, map[scenarios.Row]want{
			scenarios.StackfulAsm: pool,
			scenarios.Stackless:   pool,
		}},
		// The control: not a pool scenario, so one P, pinned, and the
		// reactor's default pool (its jobs sleep: they need no P), not
		// placed: its threads stay where the process is.
		{bodies.PingPong, map[scenarios.Row]want{
			scenarios.StackfulAsm: {1, reactor.DefaultPoolThreads, single, single},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.s.Name, func(t *testing.T) {
			dir := t.TempDir()
			var rows []scenarios.Row
			modes := map[scenarios.Row]string{}
			for _, r := range scenarios.Rows {
				if _, ok := tc.rows[r]; ok {
					rows = append(rows, r)
					modes[r] = poolCheckMode + dir
				}
			}
			cells := Plan([]*scenarios.Scenario{tc.s}, rows, true, nil, 1)[:len(rows)]
			sum, err := Run(context.Background(), Options{
				Cells: cells, Benchtime: time.Millisecond, Timeout: time.Minute,
				OutDir: t.TempDir(), Runstamp: NewRunstamp(time.Now()), Header: "pool test",
				Machine: MachineConfig("test", time.Millisecond, false),
				Command: fakeCommand(modes), Pin: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failed > 0 {
				log, _ := os.ReadFile(sum.LogPath)
				t.Fatalf("%d cells failed:\n%s", sum.Failed, log)
			}
			for r, w := range tc.rows {
				b, err := os.ReadFile(filepath.Join(dir, string(r)+".json"))
				if err != nil {
					t.Fatalf("%s: no report from the child: %v", r, err)
				}
				var got poolCheck
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatal(err)
				}
				if got.GOMAXPROCS != w.procs {
					t.Errorf("%s/%s: GOMAXPROCS %d in the child, want %d", tc.s.Name, r, got.GOMAXPROCS, w.procs)
				}
				if got.Peak != w.peak {
					t.Errorf("%s/%s: the pool ran %d of %d jobs at once, want %d (its size)", tc.s.Name, r, got.Peak, got.Jobs, w.peak)
				}
				if fmt.Sprint(got.CPUs) != fmt.Sprint(w.cpus) {
					t.Errorf("%s/%s: child may run on CPUs %v, want %v", tc.s.Name, r, got.CPUs, w.cpus)
				}
				if fmt.Sprint(got.PoolCPUs) != fmt.Sprint(w.poolCPUs) {
					t.Errorf("%s/%s: pool threads may run on CPUs %v, want %v", tc.s.Name, r, got.PoolCPUs, w.poolCPUs)
				}
			}
			f, err := results.ReadFile(sum.ResultsPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Check(); err != nil {
				t.Error(err)
			}
			// Every cell is a note here (the children report "poolcheck"
			// as unsupported), so the config lines are read as text.
			cfg := map[string]string{}
			text, _ := os.ReadFile(sum.ResultsPath)
			for _, line := range strings.Split(string(text), "\n") {
				if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(k, "#") {
					cfg[k] = v
				}
			}
			procs := results.ParsePerRow(cfg[results.KeyGOMAXPROCS])
			if want := fmt.Sprintf("1 (%s: %d)", poolNames(), 1+k); procs["stackful-asm"] != want || procs["stackless"] != want {
				t.Errorf("gomaxprocs line %q: want stackful-asm and stackless %q", cfg[results.KeyGOMAXPROCS], want)
			}
			if procs["goroutine-single"] != "1" {
				t.Errorf("gomaxprocs line %q: goroutine-single not 1", cfg[results.KeyGOMAXPROCS])
			}
			if tp := cfg[results.KeyThreadPool]; !strings.HasPrefix(tp, fmt.Sprintf("%d thread", k)) || !strings.Contains(tp, poolNames()) {
				t.Errorf("thread-pool line %q", tp)
			}
			cpu := "cpu" + strconv.Itoa(last)
			if pinning && !strings.Contains(cfg[results.KeyCPUPin], "stackful-asm="+cpu+" ("+poolNames()+": scheduler "+cpu+", pool threads cpu"+cpulist.Format(rest)+")") {
				t.Errorf("cpu-pin line %q", cfg[results.KeyCPUPin])
			}
			if io := cfg[results.KeyIOUring]; !strings.Contains(io, "available (io_uring_setup") || !strings.Contains(io, "not used") {
				t.Errorf("io-uring line %q", io)
			}
		})
	}
}

// TestIOUringConfig: the io-uring line says "available" only when the
// probe made a ring, and always that it is not used.
func TestIOUringConfig(t *testing.T) {
	if got := ioUringConfig(ioUringProbe{err: unix.EPERM, disabled: "2"}); !strings.HasPrefix(got, "unavailable (io_uring_setup: operation not permitted; kernel.io_uring_disabled=2)") || !strings.Contains(got, "not used") {
		t.Errorf("refused probe: %q", got)
	}
	if got := ioUringConfig(ioUringProbe{features: 0x3fff, disabled: "0"}); !strings.HasPrefix(got, "available (io_uring_setup made a ring, features 0x3fff; kernel.io_uring_disabled=0)") {
		t.Errorf("working probe: %q", got)
	}
	pr := probeIOUring()
	if pr.err == nil && pr.features == 0 {
		t.Error("probe made a ring but read no features: the params struct is laid out wrong")
	}
	t.Logf("this kernel: %s", ioUringConfig(pr))
}

// poolNames is the registry's pool scenarios as the config lines list them
// ("offload,fileio,…"), taken from Scenario.UsesPool so a new pool
// scenario needs no edit here.
func poolNames() string {
	var names []string
	for _, s := range poolScenarios() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}
