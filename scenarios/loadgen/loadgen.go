// Package loadgen is the open-loop TCP load generator of corobench's echo
// scenario. It runs in a process of its own (benchrun's hidden `loadgen`
// subcommand, or a test binary re-executing itself), never in the server's,
// so the generator's work does not steal the server's CPU or scheduler.
//
// It opens c connections to an echo server on a loopback address, then
// sends fixed-size requests at a fixed total rate: request j is due at
// t0 + j/rate and goes out on connection j mod c, whether or not earlier
// replies have arrived (open loop: a slow server builds a queue instead of
// slowing the generator down, so its latency is not hidden). Each request's
// latency is measured from its intended send time, not from when it was
// actually written, so a generator or server stall is charged to every
// request it delays (no coordinated omission). Every reply is compared byte
// for byte with what was sent.
//
// The generator is one goroutine spinning on non-blocking sockets, pinned
// (when asked) to a core of its own: a timer wait would add the timer's own
// lateness (Go rounds sub-millisecond waits up to 1 ms) to every send. It
// drives the sockets with an io_uring where the kernel makes one (-engine
// auto, the default: one io_uring_enter per loop turn submits every send
// that came due and collects every receive that completed; uring.go,
// uringload.go), else, or with -engine epoll, with a write per request, a
// read per readable socket and a zero-timeout epoll_wait per turn. Either
// way each request is a send of its own; the Report names the engine. On a
// machine with cores to spare it can run several such threads (-threads;
// threads.go), each offering its share of the connections. It is bounded in requests and in time, and writes
// one JSON Report to stdout. Against any echo server on this machine:
//
//	benchrun loadgen -addr 127.0.0.1:7000 -conns 64 -requests 20000 -rate 20000 -cpu 1
//
// With -self-echo instead of -addr it loads a TrivialServer of its own (one
// thread, raw epoll, on another core): what the generator itself sustains,
// the ceiling benchrun records once per run with echo cells.
package loadgen

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Report is what the generator writes to stdout, as one JSON object.
type Report struct {
	// Requests is the number of requests sent and verified.
	Requests int `json:"requests"`
	// Bytes is the number of reply bytes that matched what was sent.
	Bytes int64 `json:"bytes"`
	// ElapsedNs runs from the first request's intended send time to the
	// last reply's arrival.
	ElapsedNs int64 `json:"elapsed_ns"`
	// LatencyNs[j] is request j's latency: the arrival of its whole reply
	// minus its intended send time.
	LatencyNs []int64 `json:"latency_ns"`
	// MaxSendLagNs is the largest delay between a request's intended send
	// time and its write: the generator's own lag, already included in the
	// latencies.
	MaxSendLagNs int64 `json:"max_send_lag_ns"`
	// CPU is the core the generator was pinned to, or -1.
	CPU int `json:"cpu"`
	// ServerCPU is the core of the TrivialServer's thread in a -self-echo
	// run (-1: not pinned), else 0 and absent.
	ServerCPU int `json:"server_cpu,omitempty"`
	// ServerIdleNs is the time the TrivialServer's thread of a -self-echo
	// run spent waiting for work, from its start (before the connections)
	// to its close: near zero, the ceiling is the server's, not the
	// generator's.
	ServerIdleNs int64 `json:"server_idle_ns,omitempty"`
	// ServerCostNs is, in a -self-echo run, the busy time of the server's
	// core (CoreMeter) from the schedule's start to the last reply, per
	// request: 1e9 over it estimates the rate one such core sustains.
	// ServerCostSource says what was read (Source).
	ServerCostNs     float64 `json:"server_cost_ns,omitempty"`
	ServerCostSource string  `json:"server_cost_source,omitempty"`
	// Engine is how the generator drove its sockets: EngineIOUring or
	// EngineEpoll.
	Engine string `json:"engine"`
	// EngineNote says why, when -engine auto fell back to epoll (the
	// kernel refused io_uring), and which setup flags a ring got.
	EngineNote string `json:"engine_note,omitempty"`
	// Syscalls counts the generator's kernel entries during the load
	// (from the first request's intended send time on): writes, reads and
	// epoll_waits on the epoll path, io_uring_enters on the ring.
	Syscalls int64 `json:"syscalls"`
	// Queued counts requests that could not be handed to the kernel when
	// due because their connection's earlier bytes were still unsent (a
	// full socket buffer). On the epoll path they went out in one write
	// with those bytes; on the ring each still went out as a send of its
	// own, once its connection's earlier sends completed.
	Queued int `json:"queued"`
	// Sends counts the writes (epoll) or SENDs (ring) that carried request
	// bytes. On the ring it is Requests exactly: one SEND per request.
	Sends int64 `json:"sends"`
	// IdleNs is the time the generator spent in loop turns that found
	// nothing at all to do (no request due, no unsent bytes, no reply): a
	// lower bound of its spare time, since a turn that only collected a
	// reply counts as busy (at 150k req/s over 64 connections nearly every
	// turn does). Near zero says little; well above it, the generator
	// had time to spare.
	IdleNs int64 `json:"idle_ns"`
	// Threads is the number of generator threads that ran (Config.Threads,
	// narrowed to a divisor of the connections); IdleNs sums theirs.
	Threads int `json:"threads"`
}

// Engines: how the generator drives its sockets (Config.Engine).
const (
	// EngineAuto is io_uring when the kernel makes a ring, else epoll.
	EngineAuto = "auto"
	// EngineIOUring submits every due send and collects every completed
	// receive with one io_uring_enter per loop turn (uring.go).
	EngineIOUring = "io_uring"
	// EngineEpoll writes each request and reads each reply with a
	// syscall of its own, polling with a zero-timeout epoll_wait.
	EngineEpoll = "epoll"
)

// Config is a generator run.
type Config struct {
	Addr     netip.AddrPort // must be a loopback address
	Conns    int            // connections, opened before the first request
	Requests int            // total requests, spread round-robin over Conns
	Rate     float64        // requests per second, over all connections
	Size     int            // bytes per request (and reply)
	CPU      int            // core to pin the process to (generator thread t: CPU+t); -1: no pinning
	Timeout  time.Duration  // bound on the whole run, connections included
	// Engine is EngineAuto (also ""), EngineIOUring (an error if the
	// kernel refuses a ring) or EngineEpoll.
	Engine string
	// Threads is the number of generator threads (0 means 1, except
	// with SelfEcho: AutoThreads, as an echo cell runs), each
	// offering its share of the connections (threads.go); fewer run when
	// Threads does not divide Conns (the largest divisor below it). With
	// CPU >= 0, thread t is pinned to core CPU+t.
	Threads int
	// pinned: the process is already on CPU (runSelfEcho did it).
	pinned bool
	// SelfEcho (the -self-echo flag, Main only) runs the generator against
	// a TrivialServer in its own process instead of Addr: its own ceiling.
	// With two cores or more the server's thread and the generator are
	// pinned to two different ones (PinCPUs), as in an echo cell.
	SelfEcho bool
	// ServerBurn (-server-burn, SelfEcho only) makes the trivial server
	// spin for this much thread CPU time per request it reads
	// (StartBurningServer): a server of known extra cost whose knee lies
	// below the generator's ceiling.
	ServerBurn time.Duration
}

// Limits on a run, so a mistyped flag cannot become an unbounded load.
const (
	MaxConns    = 16384
	MaxRequests = 10_000_000
	MaxSize     = 1 << 20
	MaxRate     = 10_000_000
	MaxTimeout  = 10 * time.Minute
	MaxThreads  = 256
	// MaxServerBurn bounds -server-burn: a trivial server slower than
	// 1000 req/s measures nothing the sweep needs.
	MaxServerBurn = time.Millisecond
)

// Main is the generator's command line: it parses args, runs, writes the
// Report as JSON to stdout and returns the exit status (0 ok, 1 the run
// failed, 2 bad arguments). Errors go to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	cfg, err := ParseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 2
	}
	// The process exists only for this run: one P per generator thread,
	// each on a locked thread, is all the spinning loops need, and keeps
	// the runtime's other threads idle.
	runtime.GOMAXPROCS(cfg.threadCount())
	runtime.LockOSThread()
	var rep *Report
	if cfg.SelfEcho {
		rep, err = runSelfEcho(cfg)
	} else {
		rep, err = Run(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintf(stderr, "loadgen: writing the report: %v\n", err)
		return 1
	}
	return 0
}

// runSelfEcho runs cfg against a TrivialServer of this process: the
// generator's own ceiling. A second P serves the server's thread, which
// spends its time blocked in epoll_wait.
func runSelfEcho(cfg Config) (*Report, error) {
	serverCPU, clientCPU, pin := PinCPUs()
	if pin && cfg.Threads == 0 {
		// As many threads as an echo cell's generator runs (before the
		// pinning below narrows this thread's affinity).
		cfg.Threads = AutoThreads(clientCPU)
	}
	runtime.GOMAXPROCS(cfg.threadCount() + 1)
	if pin {
		// Every thread to the generator's core first; the server's
		// thread then moves itself to its own.
		if _, err := PinProcess(clientCPU); err != nil {
			return nil, err
		}
	} else {
		serverCPU, clientCPU = -1, -1
	}
	srv, err := StartBurningServer(serverCPU, cfg.ServerBurn, cfg.Size)
	if err != nil {
		return nil, err
	}
	meter := OpenCoreMeter(serverCPU)
	defer meter.Close()
	if serverCPU < 0 {
		// No core of its own: the process's CPU time would count the
		// generator too, so there is no server cost to give.
		meter = nil
	}
	cfg.Addr, cfg.CPU, cfg.pinned = srv.Addr(), clientCPU, true // pinned above
	var onStart func()
	if meter != nil {
		onStart = meter.Begin
	}
	rep, err := run(cfg, onStart)
	var cost float64
	if err == nil && meter != nil {
		cost, err = meter.End(cfg.Requests)
	}
	if cerr := srv.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	rep.CPU, rep.ServerCPU, rep.ServerIdleNs = clientCPU, serverCPU, int64(srv.Blocked())
	if meter != nil {
		rep.ServerCostNs, rep.ServerCostSource = cost, meter.Source()
	}
	return rep, nil
}

// Args returns the command line that makes Main run cfg.
func Args(cfg Config) []string {
	if cfg.SelfEcho {
		a := append([]string{"-self-echo"}, args(cfg)[2:]...)
		if cfg.ServerBurn > 0 {
			a = append(a, "-server-burn", cfg.ServerBurn.String())
		}
		return a
	}
	return args(cfg)
}

func args(cfg Config) []string {
	return []string{
		"-addr", cfg.Addr.String(),
		"-conns", strconv.Itoa(cfg.Conns),
		"-requests", strconv.Itoa(cfg.Requests),
		"-rate", strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
		"-size", strconv.Itoa(cfg.Size),
		"-cpu", strconv.Itoa(cfg.CPU),
		"-timeout", cfg.Timeout.String(),
		"-engine", cfg.Engine,
		"-threads", strconv.Itoa(cfg.Threads),
	}
}

// ParseArgs parses and validates a generator command line.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "server address, a loopback ip:port such as 127.0.0.1:8080 (required)")
	conns := fs.Int("conns", 1, "connections")
	requests := fs.Int("requests", 1000, "total requests, spread round-robin over the connections")
	rate := fs.Float64("rate", 10000, "requests per second over all connections (open loop)")
	size := fs.Int("size", 64, "bytes per request")
	cpu := fs.Int("cpu", -1, "core to pin the generator to (-1: none)")
	timeout := fs.Duration("timeout", 30*time.Second, "bound on the whole run")
	engine := fs.String("engine", "", "how to drive the sockets: auto (the default, also \"\"; io_uring when the kernel makes a ring, else epoll), io_uring, or epoll")
	threads := fs.Int("threads", 0, "generator threads (0 or 1: one), each offering its share of the connections (the largest divisor of -conns not above it runs); with -cpu C, thread t is pinned to core C+t")
	selfEcho := fs.Bool("self-echo", false, "run against a trivial echo server in this process (one thread, raw epoll) instead of -addr: the generator's own ceiling")
	serverBurn := fs.Duration("server-burn", 0, "with -self-echo: the trivial server spins for this much of its thread's CPU time per request (a server of known extra cost, whose knee lies below the generator's ceiling)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q: loadgen takes flags only (see -h)", fs.Arg(0))
	}
	cfg := Config{Conns: *conns, Requests: *requests, Rate: *rate, Size: *size, CPU: *cpu, Timeout: *timeout, SelfEcho: *selfEcho, Engine: *engine, Threads: *threads, ServerBurn: *serverBurn}
	if *serverBurn != 0 && (!*selfEcho || *serverBurn < 0 || *serverBurn > MaxServerBurn) {
		return Config{}, fmt.Errorf("-server-burn %v: want a duration in (0, %v], with -self-echo (it slows the generator's own server)", *serverBurn, MaxServerBurn)
	}
	if *selfEcho {
		if *addr != "" || *cpu != -1 {
			return Config{}, errors.New("-self-echo serves itself and places itself: give no -addr and no -cpu")
		}
		// Validated with a stand-in address; the server's replaces it.
		cfg.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 1)
		return cfg, cfg.Validate()
	}
	if *addr == "" {
		return Config{}, errors.New("-addr is required: the echo server's loopback address, e.g. 127.0.0.1:8080")
	}
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil {
		return Config{}, fmt.Errorf("-addr %q: %v (want ip:port, e.g. 127.0.0.1:8080)", *addr, err)
	}
	cfg.Addr = ap
	return cfg, cfg.Validate()
}

// Validate checks cfg's bounds. The generator only ever targets loopback
// addresses: it is a benchmark of a server in the same machine.
func (cfg Config) Validate() error {
	switch {
	case !cfg.Addr.Addr().IsLoopback() || !cfg.Addr.Addr().Is4():
		return fmt.Errorf("address %v is not an IPv4 loopback address: the generator only loads a server on this machine (127.0.0.0/8)", cfg.Addr)
	case cfg.Addr.Port() == 0:
		return fmt.Errorf("address %v has no port", cfg.Addr)
	case cfg.Conns < 1 || cfg.Conns > MaxConns:
		return fmt.Errorf("-conns %d: want 1..%d", cfg.Conns, MaxConns)
	case cfg.Requests < 1 || cfg.Requests > MaxRequests:
		return fmt.Errorf("-requests %d: want 1..%d", cfg.Requests, MaxRequests)
	case !(cfg.Rate > 0 && cfg.Rate <= MaxRate):
		return fmt.Errorf("-rate %v: want a rate in (0, %d] requests per second", cfg.Rate, MaxRate)
	case cfg.Size < 1 || cfg.Size > MaxSize:
		return fmt.Errorf("-size %d: want 1..%d bytes", cfg.Size, MaxSize)
	case cfg.Timeout <= 0 || cfg.Timeout > MaxTimeout:
		return fmt.Errorf("-timeout %v: want a duration in (0, %v]", cfg.Timeout, MaxTimeout)
	case cfg.CPU < -1:
		return fmt.Errorf("-cpu %d: want a core number, or -1 for no pinning", cfg.CPU)
	case cfg.Engine != "" && cfg.Engine != EngineAuto && cfg.Engine != EngineIOUring && cfg.Engine != EngineEpoll:
		return fmt.Errorf("-engine %q: want %s, %s or %s", cfg.Engine, EngineAuto, EngineIOUring, EngineEpoll)
	case cfg.Threads < 0 || cfg.Threads > MaxThreads:
		return fmt.Errorf("-threads %d: want 1..%d", cfg.Threads, MaxThreads)
	case cfg.Engine == EngineIOUring && 2*cfg.Conns > uringMaxEntries:
		return fmt.Errorf("-engine io_uring with -conns %d: a ring holds a send and a receive per connection, at most %d connections", cfg.Conns, uringMaxEntries/2)
	}
	return nil
}

// RequestByte is byte i of request j: a function of both, so a reply that
// belongs to another request, or is shifted by a byte, does not match.
func RequestByte(j, i int) byte {
	x := uint64(j)*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9
	return byte(x>>56) ^ byte(x>>29)
}

// conn is one connection's state. Requests on a connection are answered in
// order (TCP is a stream, and an echo server keeps it in order), so the
// connection keeps a FIFO of the requests in flight.
type conn struct {
	fd       int
	pending  []byte // bytes of due requests the kernel has not taken yet
	inflight []int  // request numbers sent (or pending) and not yet answered, oldest first
	head     int    // index of the oldest in inflight
	got      int    // bytes of the oldest request's reply received so far
	// The ring's (uringload.go): sendBuf holds the bytes of the send in
	// flight (owned by the kernel until its completion); unsent indexes
	// the first request in inflight not yet queued for sending; rbuf is
	// the receive buffer, owned by the kernel while a receive is armed
	// (always, from the start to the drain).
	sendBuf []byte
	sends   int // sends in flight
	unsent  int
	listed  bool // in loadRing's list of connections with unsent requests
	rbuf    []byte
}

// Run runs the generator in the calling goroutine and returns its report.
func Run(cfg Config) (*Report, error) {
	return run(cfg, nil)
}

// run is Run with onStart, when not nil, called just before the schedule's
// start (t0), after every connection is open.
func run(cfg Config, onStart func()) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(cfg.Timeout)
	if cfg.CPU >= 0 && !cfg.pinned {
		// The process is the generator's alone: the pinning is not undone.
		if _, err := PinProcess(cfg.CPU); err != nil {
			return nil, err
		}
	}
	conns, epfd, err := dialAll(cfg, deadline)
	defer func() {
		for _, c := range conns {
			unix.Close(c.fd)
		}
		if epfd >= 0 {
			unix.Close(epfd)
		}
	}()
	if err != nil {
		return nil, err
	}
	rep := &Report{LatencyNs: make([]int64, cfg.Requests), CPU: cfg.CPU}
	if err := runThreads(cfg, conns, deadline, rep, onStart); err != nil {
		return nil, err
	}
	return rep, nil
}

// dialAll opens every connection. The connects are issued non-blocking,
// all at once, and then awaited together: a loopback handshake costs tens of
// µs of kernel time on each side, and waiting for each in turn would
// serialise the server's accepts with the generator's connects. Each socket
// ends up non-blocking, with TCP_NODELAY, registered level-triggered for
// input with one epoll instance (its data is the connection's index).
func dialAll(cfg Config, deadline time.Time) ([]*conn, int, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("epoll_create1: %w", err)
	}
	sa := &unix.SockaddrInet4{Addr: cfg.Addr.Addr().As4(), Port: int(cfg.Addr.Port())}
	perConn := (cfg.Requests + cfg.Conns - 1) / cfg.Conns
	conns := make([]*conn, 0, cfg.Conns)
	connecting := 0
	for k := 0; k < cfg.Conns; k++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return conns, epfd, fmt.Errorf("socket for connection %d: %w", k, err)
		}
		conns = append(conns, &conn{fd: fd, inflight: make([]int, 0, perConn)})
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return conns, epfd, fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
		}
		want := uint32(unix.EPOLLIN)
		switch err := unix.Connect(fd, sa); err {
		case nil:
		case unix.EINPROGRESS:
			want = unix.EPOLLOUT
			connecting++
		default:
			return conns, epfd, fmt.Errorf("connect %d of %d to %v: %w", k+1, cfg.Conns, cfg.Addr, err)
		}
		ev := unix.EpollEvent{Events: want, Fd: int32(k)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return conns, epfd, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	events := make([]unix.EpollEvent, 256)
	for connecting > 0 {
		if time.Now().After(deadline) {
			return conns, epfd, fmt.Errorf("timed out after %v with %d of %d connections still connecting", cfg.Timeout, connecting, cfg.Conns)
		}
		n, err := unix.EpollWait(epfd, events, 10)
		if err != nil && err != unix.EINTR {
			return conns, epfd, fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:max(n, 0)] {
			c := conns[ev.Fd]
			soErr, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err == nil && soErr != 0 {
				err = unix.Errno(soErr)
			}
			if err != nil {
				return conns, epfd, fmt.Errorf("connect %d of %d to %v: %w", ev.Fd+1, cfg.Conns, cfg.Addr, err)
			}
			in := unix.EpollEvent{Events: unix.EPOLLIN, Fd: ev.Fd}
			if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, c.fd, &in); err != nil {
				return conns, epfd, fmt.Errorf("epoll_ctl: %w", err)
			}
			connecting--
		}
	}
	return conns, epfd, nil
}

// load is the open-loop run: send what is due, collect what arrived, spin.
func load(cfg Config, conns []*conn, epfd int, p part, deadline time.Time, rep *Report) error {
	n, mine := cfg.Requests, p.requests(cfg.Requests)
	interval := 1e9 / cfg.Rate
	req := make([]byte, cfg.Size)
	rbuf := make([]byte, 64<<10)
	events := make([]unix.EpollEvent, 256)
	var flushing []*conn // connections with pending bytes
	t0 := p.t0
	next, done := p.first, 0
	var last time.Duration
	for done < mine {
		now := time.Since(t0)
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v with %d of %d replies (the server is too slow for -rate %v, or stuck)", cfg.Timeout, done, mine, cfg.Rate)
		}
		if err := p.stopped(); err != nil {
			return err
		}
		busy := len(flushing) > 0 || (next < n && intended(next, interval) <= now)
		// Send every request that is due.
		for next < n && intended(next, interval) <= now {
			lag := int64(now - intended(next, interval))
			rep.MaxSendLagNs = max(rep.MaxSendLagNs, lag)
			c := conns[next%len(conns)]
			for i := range req {
				req[i] = RequestByte(next, i)
			}
			c.inflight = append(c.inflight, next)
			if len(c.pending) == 0 {
				w, err := writeSome(c.fd, req)
				rep.Syscalls++
				rep.Sends++
				if err != nil {
					return fmt.Errorf("request %d: %w", next, ioError(c, "write", err))
				}
				if w < len(req) {
					c.pending = append(c.pending, req[w:]...)
					flushing = append(flushing, c)
				}
			} else {
				c.pending = append(c.pending, req...)
				rep.Queued++
			}
			next += p.stride
		}
		// Retry writes the kernel could not take (a full socket buffer).
		kept := flushing[:0]
		for _, c := range flushing {
			w, err := writeSome(c.fd, c.pending)
			rep.Syscalls++
			rep.Sends++
			if err != nil {
				return ioError(c, "write", err)
			}
			c.pending = c.pending[:copy(c.pending, c.pending[w:])]
			if len(c.pending) > 0 {
				kept = append(kept, c)
			}
		}
		flushing = kept
		// Collect replies.
		ne, err := unix.EpollWait(epfd, events, 0)
		rep.Syscalls++
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:max(ne, 0)] {
			c := conns[ev.Fd]
			got, err := readReplies(c, rbuf, cfg.Size, interval, t0, rep)
			if err != nil {
				return fmt.Errorf("connection %d: %w", ev.Fd, err)
			}
			done += got
			if got > 0 {
				last = time.Since(t0)
			}
		}
		if !busy && ne <= 0 {
			rep.IdleNs += int64(time.Since(t0) - now)
		}
	}
	rep.Requests = mine
	rep.ElapsedNs = int64(last)
	return nil
}

// intended is request j's intended send time, relative to t0.
func intended(j int, interval float64) time.Duration {
	return time.Duration(float64(j) * interval)
}

// writeSome writes what the kernel takes without blocking. Its error is
// the write's errno, for ioError to describe.
func writeSome(fd int, p []byte) (int, error) {
	for {
		w, err := unix.Write(fd, p)
		switch {
		case err == nil:
			return w, nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, nil
		default:
			return 0, err
		}
	}
}

// ioError describes errno, the failure of a read or write (op: "read",
// "write", "send", "recv") on c. A server that closes a connection shows
// up in one of three ways, depending only on how its close interleaves with
// the generator's sends: an end of stream (it closed with nothing unread:
// a FIN), ECONNRESET (it closed with requests unread: a reset), or EPIPE
// (a request written after its FIN drew a reset, and the socket, its
// receive side already ended, then refuses every further write; Linux's
// tcp_reset gives EPIPE in CLOSE_WAIT). All three are the same event, so
// they are reported in the same words, with the errno kept (errors.Is).
func ioError(c *conn, op string, errno error) error {
	if errno == unix.ECONNRESET || errno == unix.EPIPE {
		return fmt.Errorf("%s (%s: %w)", serverClosed(c), op, errno)
	}
	return fmt.Errorf("%s: %w", op, errno)
}

// serverClosed is what ioError and an end of stream say: the server
// closed c, and how many of its requests it left unanswered.
func serverClosed(c *conn) string {
	return fmt.Sprintf("the server closed the connection with %d requests unanswered", len(c.inflight)-c.head)
}

// readReplies reads what is available on c, verifies it against the
// requests in flight, and records the latency of every completed reply.
func readReplies(c *conn, rbuf []byte, size int, interval float64, t0 time.Time, rep *Report) (completed int, err error) {
	for {
		r, err := unix.Read(c.fd, rbuf)
		rep.Syscalls++
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return completed, nil
		}
		if err != nil {
			return completed, ioError(c, "read", err)
		}
		if r == 0 {
			return completed, errors.New(serverClosed(c))
		}
		got, err := verify(c, rbuf[:r], size, interval, time.Since(t0), rep)
		completed += got
		if err != nil {
			return completed, err
		}
		if r < len(rbuf) {
			return completed, nil
		}
	}
}

// verify checks the reply bytes b, which arrived on c at arrived (since
// t0), against the requests in flight, and records the latency of every
// reply they complete. Both engines' receives end here.
func verify(c *conn, b []byte, size int, interval float64, arrived time.Duration, rep *Report) (completed int, err error) {
	for _, x := range b {
		if c.head == len(c.inflight) {
			return completed, errors.New("the server sent more bytes than were requested")
		}
		j := c.inflight[c.head]
		if want := RequestByte(j, c.got); x != want {
			return completed, fmt.Errorf("reply to request %d differs at byte %d: got %#x, want %#x", j, c.got, x, want)
		}
		rep.Bytes++
		c.got++
		if c.got == size {
			rep.LatencyNs[j] = int64(arrived - intended(j, interval))
			c.got = 0
			c.head++
			completed++
		}
	}
	return completed, nil
}
