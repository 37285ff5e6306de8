package bodies

import (
	"fmt"
	"net/netip"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/internal/dnsserver"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// DNS: c coroutines resolve names against a responder the scenario runs in
// a process of its own on 127.0.0.1.
var DNS = register(&scenarios.Scenario{
	Name:     "dns",
	Bench:    "DNS",
	UsesPool: true,
	Summary:  "Coroutines resolving host names against a local responder process: Go's resolver on the reactor's thread pool, or in the goroutine; cost per lookup and lookups per second.",
	Doc: fmt.Sprintf("c coroutines each resolve host names of a fixed list of %d (host-i.corobench.test, each with its own A record and an empty AAAA answer), N lookups in all, "+
		"against a DNS responder on 127.0.0.1 (UDP) that the scenario starts once per process as a process of its own (benchrun's hidden %s subcommand), "+
		"placed on the CPUs the cell's process is not pinned to (all of them for the unpinned goroutine-multi row), "+
		"so the responder's work runs on no row's Ps or pinned CPU and every row resolves the same names the same way. "+
		"Every row resolves with Go's own resolver (net.Resolver, PreferGo, every query dialled to the responder; network \"ip\", so each lookup is an A and an AAAA query in parallel): "+
		"the stackful and stackless rows through the reactor's Resolve (stackful.Resolver.Lookup, stackless AwaitLookup; reactor.Options.DNSServer), which runs the lookup on the reactor's thread pool, "+
		"as libuv runs getaddrinfo on its pool: a lookup blocks a pool thread (parked in Go's netpoller), so at most as many as the pool has threads are in flight whatever c is; benchrun runs those rows' cells with GOMAXPROCS = 1 + pool threads (allowed CPUs − 1, as offload and fileio: the results' thread-pool line), so the pool's Go code has Ps of its own; "+
		"the goroutine rows call the resolver in the goroutine, as many in flight as c. "+
		"The pool rather than a resolver on the loop's own UDP sockets because Go's resolver already handles everything a real lookup needs (hosts file, search list, retries, TCP fallback); the cost of that choice is what this measures. "+
		"ns/lookup is the wall time per lookup, lookups/s its inverse.", dnsNames, scenarios.DNSResponderSubcommand),
	Claim: "Name resolution as a reactor event on the thread pool (docs/design.md §4): what it costs a single-threaded runtime against goroutines that block in the resolver.",
	Params: []scenarios.Param{
		{Key: "c", Full: []string{"1", "64"}, Quick: []string{"16"}, Doc: "resolving coroutines", Min: 1, Max: reactor.DefaultPoolQueue, BytesPer: scenarios.CoroutineBytes},
	},
	NotJudged: "its responder is a process of its own, running beside it",
	Metrics: []scenarios.Metric{
		{Unit: "ns/lookup", Kind: scenarios.TimePerOp, Headline: "DNS lookup (local responder)"},
		{Unit: "lookups/s", Kind: scenarios.BodyMeasured, HigherIsBetter: true},
	},
	Blocking:     dnsBlocking,
	StateMachine: dnsStateMachine,
	Want:         dnsWant,
})

// dnsNames is how many distinct names the scenario resolves (lookup i asks
// for name i mod dnsNames).
const dnsNames = 256

// dnsNameList is the names, built once (not in the timed region).
var dnsNameList = func() []string {
	l := make([]string, dnsNames)
	for i := range l {
		l[i] = dnsserver.Name(i)
	}
	return l
}()

// dnsMix folds lookup i's address into the sum by addition (lookups finish
// in varying order).
func dnsMix(i int, a netip.Addr) uint64 {
	b := a.As4()
	return mix(0, uint64(i)<<32|uint64(b[0])<<24|uint64(b[1])<<16|uint64(b[2])<<8|uint64(b[3]))
}

func dnsWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.N; i++ {
		sum += dnsMix(i, dnsserver.Addr(i%dnsNames))
	}
	return sum
}

// dnsCheck folds lookup i's answer, or says what is wrong with it: the
// answer must be exactly the name's one IPv4 address.
func dnsCheck(i int, addrs []netip.Addr, err error) (uint64, error) {
	name := dnsNameList[i%dnsNames]
	if err != nil {
		return 0, fmt.Errorf("dns: lookup %d (%s): %w", i, name, err)
	}
	if len(addrs) != 1 || !addrs[0].Is4() {
		return 0, fmt.Errorf("dns: lookup %d (%s): got %v, want one IPv4 address", i, name, addrs)
	}
	return dnsMix(i, addrs[0]), nil
}

func dnsOutcome(env *scenarios.Env, sum uint64) (scenarios.Outcome, error) {
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum, Values: map[string]float64{
		"lookups/s": float64(env.N) / env.Elapsed().Seconds(),
	}}, nil
}

// dnsBlocking is the blocking body: resolver w does lookups w, w+c, ...;
// its sum is its own until its done signal.
func dnsBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarvedBlocking(rt); err != nil {
		return scenarios.Outcome{}, err
	}
	res, ok := rt.(scenarios.Resolves)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Resolves", "the row has no name lookup that suspends only the calling coroutine")
	}
	server, err := scenarios.DNSResponder()
	if err != nil {
		return scenarios.Outcome{}, fmt.Errorf("dns: %w", err)
	}
	n, c := env.N, env.Int("c")
	sums := make([]uint64, c)
	errs := make([]error, c)
	done := make([]scenarios.Signal, c)
	for w := range done {
		done[w] = rt.NewSignal()
	}
	env.ResetTimer()
	for w := 0; w < c; w++ {
		rt.Go(func() {
			defer done[w].Fire()
			r, err := res.NewResolver(server)
			if err != nil {
				errs[w] = fmt.Errorf("dns: %w", err)
				return
			}
			defer r.Close()
			for i := w; i < n; i += c {
				addrs, err := r.Lookup(dnsNameList[i%dnsNames])
				v, err := dnsCheck(i, addrs, err)
				if err != nil {
					errs[w] = err
					return
				}
				sums[w] += v
			}
		})
	}
	waitAll(done)
	env.StopTimer()
	sum, err := sumWorkers(errs, sums)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return dnsOutcome(env, sum)
}

// dnsStateMachine is the state-machine twin: c resolver tasks on a
// stackless scheduler whose reactor asks the responder
// (reactor.Options.DNSServer through Options.Loop).
func dnsStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarved(); err != nil {
		return scenarios.Outcome{}, err
	}
	server, err := scenarios.DNSResponder()
	if err != nil {
		return scenarios.Outcome{}, fmt.Errorf("dns: %w", err)
	}
	loop, err := reactor.NewWithOptions(reactor.Options{DNSServer: server, PoolThreads: scenarios.ProcessPoolThreads()})
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer loop.Close()
	s, err := stackless.NewWithOptions(stackless.Options{Loop: loop})
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer s.Close()
	c := env.Int("c")
	left := c
	tasks := make([]*dnsTask, c)
	for w := range tasks {
		r, err := s.NewResolver()
		if err != nil {
			return scenarios.Outcome{}, err
		}
		defer r.Close()
		tasks[w] = &dnsTask{r: r, i: w, n: env.N, c: c, left: &left, env: env}
	}
	env.ResetTimer()
	for _, t := range tasks {
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	var sum uint64
	for _, t := range tasks {
		sum += t.sum
	}
	return dnsOutcome(env, sum)
}

// dnsTask is one resolving task: lookups i, i+c, ...; its one state is
// whether a lookup is in flight.
type dnsTask struct {
	stackless.Coro
	r       *stackless.Resolver
	waiting bool // a lookup was started: the Resume delivers its answer
	i, n, c int
	sum     uint64
	left    *int // tasks not finished; the last one stops the timer
	env     *scenarios.Env
}

func (t *dnsTask) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		v, err := dnsCheck(t.i, stackless.Addrs(c), c.Err())
		if err != nil {
			return c.Fail(err)
		}
		t.sum += v
		t.i += t.c
	}
	if t.i < t.n {
		t.waiting = true
		return c.AwaitLookup(t.r, dnsNameList[t.i%dnsNames], 0)
	}
	if *t.left--; *t.left == 0 {
		t.env.StopTimer()
	}
	return c.Done()
}
