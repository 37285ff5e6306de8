package bodies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/internal/loopback"
	"github.com/corobench/corobench/scenarios/loadgen"
)

// The echo load. Each cell offers one open-loop rate (the rate parameter,
// over all connections) of echoSize-byte requests.
const (
	echoSize = 64 // bytes per request and reply
	// echoAcceptTimeout bounds the wait for all c connections; every
	// echoAcceptPoll the acceptor checks that the generator still runs, so
	// a generator that failed is reported at once.
	echoAcceptTimeout = 10 * time.Second
	echoAcceptPoll    = 50 * time.Millisecond
	// echoMinBatch is the least number of requests in one iteration.
	echoMinBatch = 256
)

// EchoSize is the echo scenario's request (and reply) size in bytes, for
// benchrun's measurement of the generator's ceiling, which must send what
// the cells send.
const EchoSize = echoSize

// The load sweep. The rate is swept at echoSweepConns connections, from
// light load to past every row's saturation on the reference 2-core
// machine; c=1 and c=1024 run at echoModerateRate only (Scenario.Grids).
const (
	echoSweepConns   = "64"
	echoModerateRate = "20000"
	// echoKneeBound is the p99 within which a row sustains a rate
	// (LoadSweep.Bound; its Why says why), and echoKneeShare the share of
	// the offered rate it must complete.
	echoKneeBound = 2 * time.Millisecond
	echoKneeShare = 0.95
	// echoCostUnit is the server core's busy time per request
	// (loadgen.CoreMeter): LoadSweep.Capacity, from which the report estimates
	// what one core sustains where the generator caps the knee.
	echoCostUnit = "cpu-ns/req"
)

// echoBatch is the number of requests in one iteration at c connections:
// the fewest whole rounds over the connections that reach echoMinBatch.
// Each iteration costs a generator process and c connections, so an
// iteration of one request per connection would spend a cell's time on
// processes and handshakes (a loopback connect costs tens of µs here).
func echoBatch(c int) int {
	return c * ((echoMinBatch + c - 1) / c)
}

// Echo: a TCP echo server on loopback in the cell's process, driven at an
// offered rate by a load generator process.
var Echo = register(&scenarios.Scenario{
	Name:    "echo",
	Bench:   "Echo",
	Summary: "A TCP echo server on loopback driven open-loop at an offered rate (swept at c=64) by a separate load-generator process over c connections.",
	Latency: true,
	Doc: fmt.Sprintf("A TCP echo server on 127.0.0.1 in the cell's process (one coroutine per connection), driven open-loop by a separate load-generator process "+
		"at an offered rate (req/s over all c connections) of %d-byte requests: request j is due at j/rate and goes out on connection j mod c whether or not earlier replies came back. "+
		"The rate is swept at c=%s from light load to past every row's saturation; c=1 and c=1024 run at %s req/s. "+
		"N iterations of max(c, %d) requests (rounded up to whole rounds over the connections); "+
		"with 2 or more cores the server's threads and the generator are pinned to different cores (so goroutine-multi's Ps share one core). "+
		"Latency is a round trip measured by the generator from each request's intended send time to its whole reply (no coordinated omission), "+
		"summarised by an HdrHistogram (3 significant digits; the max exact); "+
		"req/s is the requests completed over the load's duration (the achieved rate, beside the offered one). Every reply is verified byte for byte. "+
		"%s is the busy time (all but idle and iowait, softirq included: on loopback the server's core also runs the kernel's path for its replies) of the core the server is pinned to, "+
		"over the timed window, per request (the process's CPU time per request where nothing is pinned); 1e9 over it is a lower bound on the rate one core sustains (the cost per request falls as the load rises). "+
		"A row's knee is the highest offered rate at which it completes at least %.0f%% of it with p99 within %v; "+
		"the results file's loadgen-ceiling line is the generator's own rate against a trivial server.",
		echoSize, echoSweepConns, echoModerateRate, echoMinBatch, echoCostUnit, 100*echoKneeShare, echoKneeBound),
	NotJudged:   "its load generator is a process of its own, running beside the server",
	CoreMarkOff: "its server and load generator run on two CPUs, and the probe reads only the body's",
	Claim: "Measurement (docs/design.md §6): closed-loop load and averages hide tails, so the load is open-loop from intended send times, with percentiles; " +
		"reference: TrueAsync HTTP server 43k req/s, p99 2.3 ms on one thread; Go net echo p99 2.12 ms at c=100 (cloudwego/netpoll-benchmark#3).",
	Params: []scenarios.Param{
		{Key: "c", Full: []string{"1", echoSweepConns, "1024"}, Quick: []string{echoSweepConns}, Doc: "client connections",
			// At most 16384: every connection is a loopback socket pair from one
			// client address, drawing on Linux's default ephemeral port range
			// (net.ipv4.ip_local_port_range, 28232 ports). One coroutine each;
			// the kernel's socket buffers are not counted.
			Min: 1, Max: 16384, BytesPer: scenarios.CoroutineBytes},
		{Key: "rate", Full: echoRates, Quick: echoQuickRates, Doc: "offered requests per second over all connections (open loop)",
			Min: 1, Max: loadgen.MaxRate},
	},
	// The rate is swept at c=64 only, and c at the moderate rate only: the
	// full product would be three sweeps, two of them about the
	// connection count rather than the load.
	Grids: []scenarios.Grid{{"c": {echoSweepConns}}, {"rate": {echoModerateRate}}},
	Metrics: []scenarios.Metric{
		{Unit: "req/s", Kind: scenarios.BodyMeasured, HigherIsBetter: true, Headline: "echo max sustained", HeadlineAt: []string{"c=" + echoSweepConns}, HeadlineKnee: true},
		{Unit: "p50-ns/req", Kind: scenarios.BodyMeasured},
		{Unit: "p90-ns/req", Kind: scenarios.BodyMeasured},
		{Unit: "p99-ns/req", Kind: scenarios.BodyMeasured, Headline: "echo latency p99",
			HeadlineAt: []string{"c=" + echoSweepConns + "/rate=" + echoModerateRate, "c=1/rate=" + echoModerateRate}},
		{Unit: "p99.9-ns/req", Kind: scenarios.BodyMeasured},
		{Unit: "max-ns/req", Kind: scenarios.BodyMeasured},
		{Unit: echoCostUnit, Kind: scenarios.BodyMeasured},
	},
	Load: &scenarios.LoadSweep{
		Rate: func(params map[string]string) float64 {
			r, _ := strconv.ParseFloat(params["rate"], 64)
			return r
		},
		What:     "req",
		Latency:  "p99-ns/req",
		Bound:    float64(echoKneeBound.Nanoseconds()),
		Key:      "rate",
		Achieved: "req/s",
		Share:    echoKneeShare,
		Capacity: echoCostUnit,
		Why: "2 ms: a loopback round trip at light load costs tens of µs, so a p99 many times that is requests queueing behind a server that cannot keep up " +
			"(at an offered rate r over a capacity C the queue grows by r−C a second: 2% over for 0.1 s is 2 ms), and it is the p99 published for Go's net echo server at c=100 " +
			"(2.12 ms, cloudwego/netpoll-benchmark#3) and the Timer scenario's bound; " +
			"a row must also complete 95% of the offered rate (short of it, requests were still queued when the run ended)",
	},
	Blocking:     echoBlocking,
	StateMachine: echoStateMachine,
	Want:         echoWant,
})

// echoRates is the offered-rate sweep (req/s): doublings through light
// load, then steps of 1.2–1.33 around the saturation of every row measured
// on the reference 2-core machine (about 230–240k req/s at c=64, which is
// also about where the generator itself tops out: the report compares each
// knee with the loadgen-ceiling line), and one rate past it.
// echoQuickRates is a coarse subset for --quick, which runs c=64 only.
var (
	echoRates      = []string{echoModerateRate, "40000", "80000", "120000", "160000", "200000", "240000", "320000"}
	echoQuickRates = []string{echoModerateRate, "120000", "320000"}
)

// echoMaxCount caps the repetitions of every echo cell of a default run at
// --count's default: an overloaded cell's achieved rate varies from run
// to run by what the backlog did, which extra repetitions would chase
// without changing its verdict (above the knee), and the sweep's ~50
// cells must fit the run's time budget.
const echoMaxCount = 10

func init() {
	Echo.MaxCount = map[string]int{}
	for _, quick := range []bool{false, true} {
		for _, c := range Echo.Combos(quick, nil) {
			Echo.MaxCount[scenarios.FormatParams(c)] = echoMaxCount
		}
	}
}

// echoChecksum folds the bytes the server echoed and the bytes the
// generator verified.
func echoChecksum(echoed, verified int64) uint64 {
	return mix(mix(0, uint64(echoed)), uint64(verified))
}

func echoWant(env *scenarios.Env) uint64 {
	total := int64(env.N) * int64(echoBatch(env.Int("c"))) * echoSize
	return echoChecksum(total, total)
}

// echoBlocking is the blocking body: the main coroutine accepts c
// connections and spawns an echo coroutine for each, then waits for all of
// them to see the generator close its end.
func echoBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	tcp, ok := rt.(scenarios.TCP)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "TCP", "the row has no TCP sockets whose reads suspend only the calling coroutine")
	}
	conns := env.Int("c")
	ln, err := tcp.ListenLoopback()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	gen, err := startLoadgen(env.Loadgen, ln.Port(), conns, env.N*echoBatch(conns), float64(env.Int("rate")))
	if err != nil {
		ln.Close()
		return scenarios.Outcome{}, err
	}
	var echoed, left atomic.Int64
	left.Store(int64(conns))
	errs := make([]error, conns)
	allDone := rt.NewSignal()
	accepted := 0
	var acceptErr error
	acceptDeadline := time.Now().Add(echoAcceptTimeout)
	for accepted < conns {
		conn, err := ln.Accept(echoAcceptPoll)
		if err == scenarios.ErrAcceptTimeout {
			if err = gen.checkAccepting(acceptDeadline); err == nil {
				continue
			}
		}
		if err != nil {
			acceptErr = fmt.Errorf("echo: accepting connection %d of %d: %w", accepted+1, conns, err)
			break
		}
		k := accepted
		rt.Go(func() {
			errs[k] = echoConn(conn, &echoed)
			conn.Close()
			if left.Add(-1) == 0 {
				allDone.Fire()
			}
		})
		accepted++
	}
	ln.Close()
	if acceptErr != nil {
		// Killing the generator closes its connections, which ends the
		// echo coroutines already running.
		genErr := gen.kill()
		if left.Add(int64(accepted-conns)) > 0 {
			allDone.Wait()
		}
		return scenarios.Outcome{}, errors.Join(acceptErr, genErr)
	}
	gen.startWindow(env)
	allDone.Wait()
	cost, costErr := gen.endWindow(env, env.N*echoBatch(conns))
	rep, genErr := gen.finish()
	if err := errors.Join(errors.Join(errs...), genErr, costErr); err != nil {
		return scenarios.Outcome{}, err
	}
	return echoOutcome(rep, echoed.Load(), env.N*echoBatch(conns), cost)
}

// echoConn echoes everything it reads until the peer closes.
func echoConn(conn io.ReadWriter, echoed *atomic.Int64) error {
	buf := make([]byte, 4096)
	var total int64
	defer func() { echoed.Add(total) }()
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := conn.Write(buf[:n]); werr != nil {
				return fmt.Errorf("echo: write: %w", werr)
			}
			total += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("echo: read: %w", err)
		}
	}
}

// echoOutcome turns the generator's report and the server core's busy
// time per request (loadgen.CoreMeter) into the cell's figures.
func echoOutcome(rep *loadgen.Report, echoed int64, requests int, cost float64) (scenarios.Outcome, error) {
	if rep.Requests != requests || len(rep.LatencyNs) != requests {
		return scenarios.Outcome{}, fmt.Errorf("echo: the generator reported %d requests and %d latencies, want %d", rep.Requests, len(rep.LatencyNs), requests)
	}
	if rep.ElapsedNs <= 0 {
		return scenarios.Outcome{}, fmt.Errorf("echo: the generator reported a load lasting %d ns", rep.ElapsedNs)
	}
	lat := summarizeLatencies(rep.LatencyNs)
	return scenarios.Outcome{
		Ops:      int64(requests),
		Checksum: echoChecksum(echoed, rep.Bytes),
		Values: map[string]float64{
			"req/s":        float64(requests) / (float64(rep.ElapsedNs) / 1e9),
			"p50-ns/req":   lat.P50,
			"p90-ns/req":   lat.P90,
			"p99-ns/req":   lat.P99,
			"p99.9-ns/req": lat.P999,
			"max-ns/req":   lat.Max,
			echoCostUnit:   cost,
		},
	}, nil
}

// loadgenRun is a running generator process. Its stdout and stderr go to
// unlinked temporary files rather than pipes: with *os.File outputs os/exec
// starts no copying goroutines, so waiting for the process is one wait
// system call, which is safe on a fiber stack (no goroutine park).
type loadgenRun struct {
	cmd       *exec.Cmd
	out, errs *os.File
	unpin     func() error // nil when nothing was pinned
	// meter reads the server's core (the process's CPU time when nothing
	// was pinned) over the timed window: the cpu-ns/req figure.
	meter *loadgen.CoreMeter
}

// startLoadgen pins this process to one core and starts the generator,
// pinned to another, against 127.0.0.1:port.
func startLoadgen(command scenarios.LoadgenCommand, port, conns, requests int, rate float64) (*loadgenRun, error) {
	if command == nil {
		return nil, errors.New("echo: no load generator command is set (scenarios.Options.Loadgen): " +
			"benchrun passes one that re-runs itself with its loadgen subcommand; a test must pass one")
	}
	cfg := loadgen.Config{
		Addr:     netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)),
		Conns:    conns,
		Requests: requests,
		Rate:     rate,
		Size:     echoSize,
		CPU:      -1,
		// The load lasts requests/rate; the rest is for connecting and
		// for a machine that is busy with other work.
		Timeout: time.Duration(float64(requests)/rate*float64(time.Second)) + 20*time.Second,
	}
	g := &loadgenRun{}
	serverCPU, clientCPU, ok := loadgen.PinCPUs()
	if ok {
		// One generator thread per core after the generator's (thread t
		// on clientCPU+t): one on a 2-core machine. Counted before this
		// process narrows its own affinity to the server's core.
		cfg.Threads = loadgen.AutoThreads(clientCPU)
		unpin, err := loadgen.PinProcess(serverCPU)
		if err != nil {
			return nil, fmt.Errorf("echo: pinning the server: %w", err)
		}
		g.unpin, cfg.CPU = unpin, clientCPU
	} else {
		serverCPU = -1
	}
	g.meter = loadgen.OpenCoreMeter(serverCPU)
	var err error
	if g.out, err = unlinkedTemp(); err == nil {
		g.errs, err = unlinkedTemp()
	}
	if err != nil {
		g.cleanup()
		return nil, fmt.Errorf("echo: %w", err)
	}
	g.cmd = command(context.Background(), loadgen.Args(cfg))
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.errs
	if g.cmd.SysProcAttr == nil {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// If this process dies mid-run, the generator must not go on.
	g.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := g.cmd.Start(); err != nil {
		g.cleanup()
		return nil, fmt.Errorf("echo: starting the load generator: %w", err)
	}
	return g, nil
}

func unlinkedTemp() (*os.File, error) {
	f, err := os.CreateTemp("", "corobench-loadgen-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// checkAccepting is called while connections are still expected: it
// returns an error if the generator has exited (it can only have failed,
// since it has not finished its connections) or the deadline has passed.
func (g *loadgenRun) checkAccepting(deadline time.Time) error {
	// WNOWAIT leaves the exited process to be reaped by Wait.
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, g.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	// Linux zeroes info when no child is waitable.
	if err == nil && info.Signo == int32(unix.SIGCHLD) {
		g.cmd.Wait()
		return fmt.Errorf("the load generator exited before connecting (%v): %s", g.cmd.ProcessState, g.stderr())
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("%w: the load generator did not connect within %v", scenarios.ErrAcceptTimeout, echoAcceptTimeout)
	}
	return nil
}

// startWindow starts the cell's timed window and the server core's meter
// in it; endWindow ends both and returns the core's busy time per request
// over the window. (The bodies call these in place of env.ResetTimer and
// env.StopTimer, so the meter adds no line to what the bodies' line counts
// compare.)
func (g *loadgenRun) startWindow(env *scenarios.Env) {
	env.ResetTimer()
	g.meter.Begin()
}

func (g *loadgenRun) endWindow(env *scenarios.Env, requests int) (float64, error) {
	cost, err := g.meter.End(requests)
	env.StopTimer()
	return cost, err
}

// finish waits for the generator to exit and returns its report.
func (g *loadgenRun) finish() (*loadgen.Report, error) {
	defer g.cleanup()
	waitErr := g.cmd.Wait()
	if waitErr != nil {
		return nil, fmt.Errorf("echo: the load generator failed (%v): %s", waitErr, g.stderr())
	}
	if _, err := g.out.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var rep loadgen.Report
	if err := json.NewDecoder(g.out).Decode(&rep); err != nil {
		return nil, fmt.Errorf("echo: reading the load generator's report: %w", err)
	}
	return &rep, nil
}

// kill stops the generator after a server-side failure and returns what it
// said, if anything.
func (g *loadgenRun) kill() error {
	defer g.cleanup()
	if g.cmd.ProcessState != nil {
		return nil // already reaped, and its message already reported
	}
	g.cmd.Process.Kill()
	g.cmd.Wait()
	if msg := g.stderr(); msg != "" {
		return fmt.Errorf("echo: the load generator said: %s", msg)
	}
	return nil
}

func (g *loadgenRun) stderr() string {
	if _, err := g.errs.Seek(0, io.SeekStart); err != nil {
		return err.Error()
	}
	b, _ := io.ReadAll(io.LimitReader(g.errs, 4096))
	return strings.TrimSpace(string(b))
}

func (g *loadgenRun) cleanup() {
	if g.meter != nil {
		g.meter.Close()
	}
	if g.out != nil {
		g.out.Close()
	}
	if g.errs != nil {
		g.errs.Close()
	}
	if g.unpin != nil {
		g.unpin()
		g.unpin = nil
	}
}

// echoStateMachine is the state-machine twin: an acceptor task and one
// echo task per connection, on impl/stackless, with TryRead/TryWrite and
// readiness waits.
func echoStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	conns := env.Int("c")
	s := stackless.New()
	defer s.Close()
	lfd, port, err := loopback.Listen()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	lf, err := s.NewFD(lfd)
	if err != nil {
		unix.Close(lfd)
		return scenarios.Outcome{}, err
	}
	gen, err := startLoadgen(env.Loadgen, port, conns, env.N*echoBatch(conns), float64(env.Int("rate")))
	if err != nil {
		lf.Close()
		return scenarios.Outcome{}, err
	}
	var echoed int64
	acc := &echoAcceptor{lf: lf, gen: gen, deadline: time.Now().Add(echoAcceptTimeout), conns: conns, env: env, echoed: &echoed, tasks: make([]echoTask, conns)}
	if err := s.Spawn(acc); err != nil {
		lf.Close()
		return scenarios.Outcome{}, errors.Join(err, gen.kill())
	}
	runErr := s.Run()
	cost, costErr := gen.endWindow(env, env.N*echoBatch(conns))
	if runErr != nil {
		return scenarios.Outcome{}, errors.Join(runErr, gen.kill())
	}
	rep, err := gen.finish()
	if err := errors.Join(err, costErr); err != nil {
		return scenarios.Outcome{}, err
	}
	return echoOutcome(rep, echoed, env.N*echoBatch(conns), cost)
}

// echoAcceptor accepts the generator's connections and spawns an echo task
// for each; the load starts when the last one is accepted.
type echoAcceptor struct {
	stackless.Coro
	lf       *stackless.FD
	gen      *loadgenRun
	deadline time.Time // for all connections to arrive
	conns    int
	accepted int
	env      *scenarios.Env
	echoed   *int64
	tasks    []echoTask
}

func (a *echoAcceptor) Resume(c *stackless.Context) stackless.Step {
	err := c.Err()
	if errors.Is(err, stackless.ErrTimeout) {
		err = a.gen.checkAccepting(a.deadline)
	}
	if err != nil {
		a.lf.Close()
		return c.Fail(fmt.Errorf("echo: accepting connection %d of %d: %w", a.accepted+1, a.conns, err))
	}
	for a.accepted < a.conns {
		nfd, err := loopback.TryAccept(a.lf.Reactor())
		if err == reactor.ErrWouldBlock {
			return c.AwaitReadableTimeout(a.lf, echoAcceptPoll)
		}
		if err != nil {
			a.lf.Close()
			return c.Fail(fmt.Errorf("echo: %w", err))
		}
		f, err := c.Scheduler().NewFD(nfd)
		if err != nil {
			unix.Close(nfd)
			a.lf.Close()
			return c.Fail(err)
		}
		t := &a.tasks[a.accepted]
		t.fd, t.echoed = f, a.echoed
		if err := c.Spawn(t); err != nil {
			f.Close()
			a.lf.Close()
			return c.Fail(err)
		}
		a.accepted++
	}
	a.lf.Close()
	a.gen.startWindow(a.env)
	return c.Done()
}

// States of an echo task.
const (
	etRead  uint8 = iota // read what the peer sent
	etWrite              // write buf[off:n] back
)

// echoTask is echoConn lowered by hand.
type echoTask struct {
	stackless.Coro
	state  uint8
	fd     *stackless.FD
	buf    [4096]byte
	off, n int
	echoed *int64
}

func (t *echoTask) Resume(c *stackless.Context) stackless.Step {
	if err := c.Err(); err != nil {
		t.fd.Close()
		return c.Fail(fmt.Errorf("echo: %w", err))
	}
	for {
		switch t.state {
		case etRead:
			n, err := t.fd.TryRead(t.buf[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitReadable(t.fd)
			}
			if err == io.EOF {
				t.fd.Close()
				return c.Done()
			}
			if err != nil {
				t.fd.Close()
				return c.Fail(fmt.Errorf("echo: read: %w", err))
			}
			t.off, t.n, t.state = 0, n, etWrite
		case etWrite:
			w, err := t.fd.TryWrite(t.buf[t.off:t.n])
			w = max(w, 0)
			t.off += w
			*t.echoed += int64(w)
			if errors.Is(err, reactor.ErrWouldBlock) || (err == nil && t.off < t.n) {
				return c.AwaitWritable(t.fd)
			}
			if err != nil {
				t.fd.Close()
				return c.Fail(fmt.Errorf("echo: write: %w", err))
			}
			t.state = etRead
		}
	}
}
