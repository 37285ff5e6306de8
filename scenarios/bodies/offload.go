package bodies

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// Offload: c coroutines offload CPU-bound chunks to the thread pool while
// one pair keeps an fd ping-pong going.
var Offload = register(&scenarios.Scenario{
	Name:  "offload",
	Bench: "Offload",
	Summary: "Coroutines offloading CPU-bound checksums to the reactor's thread pool (goroutines: inline) while a pipe ping-pong runs; cost per chunk and the ping-pong's latency meanwhile. " +
		poolCPUs,
	Latency:  true,
	UsesPool: true,
	Doc: "c coroutines each compute CRC-32 checksums over a kb-KiB buffer, N chunks in all: the stackful and stackless rows submit each chunk " +
		"to the reactor's thread pool and await it (stackful.Work, stackless AwaitWork); the goroutine rows compute inline. " +
		"Meanwhile a pair of coroutines ping-pongs one byte over two pipes until the chunks are done. " +
		"ns/chunk is the wall time per chunk (MB/s the checksum throughput); p50/p99-ns/roundtrip are the ping-pong's round trips during the work, " +
		"and roundtrips how many it made. " + poolCPUsDoc,
	Claim: "Threads appear only in the thread pool for CPU-bound tasks (docs/design.md §4): what offloading costs against goroutines, and whether the loop stays responsive.",
	Params: []scenarios.Param{
		{Key: "c", Full: []string{"1", "8"}, Quick: []string{"4"}, Doc: "offloading coroutines", Min: 1, Max: 4096, BytesPer: scenarios.CoroutineBytes},
		{Key: "kb", Full: []string{"16", "256"}, Quick: []string{"64"}, Doc: "KiB checksummed per chunk", Min: 1, Max: 65536, BytesPer: 1 << 10},
	},
	NotJudged: "a blocking read hands the P to another thread on the goroutine rows",
	Metrics: []scenarios.Metric{
		{Unit: "ns/chunk", Kind: scenarios.TimePerOp, Headline: "offloaded CPU chunk"},
		{Unit: "MB/s", Kind: scenarios.BodyMeasured, HigherIsBetter: true},
		{Unit: "p50-ns/roundtrip", Kind: scenarios.BodyMeasured},
		{Unit: "p99-ns/roundtrip", Kind: scenarios.BodyMeasured},
		{Unit: "roundtrips", Kind: scenarios.BodyMeasured, HigherIsBetter: true},
	},
	Blocking:     offloadBlocking,
	StateMachine: offloadStateMachine,
	Want:         offloadWant,
})

// offloadSeeds is how many distinct CRC seeds the chunks use (chunk i
// seeds with i mod offloadSeeds), so Want computes offloadSeeds checksums,
// not N, while every chunk still computes one of its own.
const offloadSeeds = 64

// offloadMaxSamples bounds the ping-pong's recorded round trips (counted
// beyond it, not recorded): the slice is allocated before the timer.
const offloadMaxSamples = 1 << 16

// offloadData is the kb-KiB buffer every chunk checksums (read only).
func offloadData(kb int) []byte {
	b := make([]byte, kb<<10)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

// offloadChunk is chunk i's work: the CRC-32 of buf seeded by i.
func offloadChunk(buf []byte, i int) uint32 {
	return crc32.Update(uint32(i%offloadSeeds), crc32.IEEETable, buf)
}

// offloadMix folds chunk i's checksum into the sum by addition, so the
// order in which chunks complete (which varies) does not matter.
func offloadMix(i int, crc uint32) uint64 { return mix(0, uint64(i)<<32|uint64(crc)) }

func offloadWant(env *scenarios.Env) uint64 {
	buf := offloadData(env.Int("kb"))
	var crcs [offloadSeeds]uint32
	for s := range crcs {
		crcs[s] = offloadChunk(buf, s)
	}
	var sum uint64
	for i := 0; i < env.N; i++ {
		sum += offloadMix(i, crcs[i%offloadSeeds])
	}
	return sum
}

func offloadOutcome(env *scenarios.Env, sum uint64, samples []int64, rounds int64) (scenarios.Outcome, error) {
	lat := summarizeLatencies(samples)
	mb := float64(env.N) * float64(env.Int("kb")<<10) / 1e6 / env.Elapsed().Seconds()
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum, Values: map[string]float64{
		"MB/s": mb, "p50-ns/roundtrip": lat.P50, "p99-ns/roundtrip": lat.P99, "roundtrips": float64(rounds),
	}}, nil
}

// offloadBlocking is the blocking body. Worker w does chunks w, w+c, ...;
// its sum is its own (goroutine rows run workers in parallel) and is added
// after its done signal. The pinger runs until the workers are done (an
// atomic flag: on the goroutine rows the workers run on other threads).
func offloadBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarvedBlocking(rt); err != nil {
		return scenarios.Outcome{}, err
	}
	off, ok := rt.(scenarios.Offloads)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Offloads", "the row has no thread pool to offload work to")
	}
	pipes, ok := rt.(scenarios.Pipes)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Pipes", "the row has no pipes whose reads suspend only the calling coroutine")
	}
	n, c, buf := env.N, env.Int("c"), offloadData(env.Int("kb"))
	ar, aw, err := pipes.Pipe()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	br, bw, err := pipes.Pipe()
	if err != nil {
		closeAll(ar, aw)
		return scenarios.Outcome{}, err
	}
	defer closeAll(ar, br, bw) // aw: the pinger closes it
	sums := make([]uint64, c)
	errs := make([]error, c+2)
	done := make([]scenarios.Signal, c)
	for w := range done {
		done[w] = rt.NewSignal()
	}
	var stop atomic.Bool
	samples := make([]int64, 0, offloadMaxSamples)
	var rounds int64
	pingDone, pongDone := rt.NewSignal(), rt.NewSignal()
	env.ResetTimer()
	rt.Go(func() { // ponger: echo each byte until EOF
		defer pongDone.Fire()
		var b [1]byte
		for {
			if _, err := io.ReadFull(ar, b[:]); err != nil {
				if !errors.Is(err, io.EOF) {
					errs[c+1] = fmt.Errorf("offload: ponger read: %w", err)
				}
				return
			}
			if _, err := bw.Write(b[:]); err != nil {
				errs[c+1] = fmt.Errorf("offload: ponger write: %w", err)
				return
			}
		}
	})
	rt.Go(func() { // pinger: round trips until the workers are done
		defer pingDone.Fire()
		var b [1]byte
		for i := 0; !stop.Load(); i++ {
			t0 := monoNow()
			b[0] = byte(i)
			if _, err := aw.Write(b[:]); err != nil {
				errs[c] = fmt.Errorf("offload: pinger write: %w", err)
				break
			}
			if _, err := io.ReadFull(br, b[:]); err != nil || b[0] != byte(i) {
				errs[c] = fmt.Errorf("offload: pinger read %#x, want %#x: %v", b[0], byte(i), err)
				break
			}
			if len(samples) < cap(samples) {
				samples = append(samples, monoNow()-t0)
			}
			rounds++
		}
		aw.Close() // the ponger's read ends with EOF
	})
	for w := 0; w < c; w++ {
		rt.Go(func() {
			defer done[w].Fire()
			o, err := off.NewOffloader()
			if err != nil {
				errs[w] = err
				return
			}
			defer o.Close()
			var i int
			var crc uint32
			job := func() { crc = offloadChunk(buf, i) }
			for i = w; i < n; i += c {
				if err := o.Run(job); err != nil {
					errs[w] = fmt.Errorf("offload: chunk %d: %w", i, err)
					return
				}
				sums[w] += offloadMix(i, crc)
			}
		})
	}
	waitAll(done)
	env.StopTimer()
	stop.Store(true)
	pingDone.Wait()
	pongDone.Wait()
	sum, err := sumWorkers(errs, sums)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return offloadOutcome(env, sum, samples, rounds)
}

// offloadStateMachine is the state-machine twin: c worker tasks awaiting
// their chunks with AwaitWork, and the pinger and ponger as fdwake's tasks
// do it with AwaitReadable and TryRead/TryWrite.
func offloadStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarved(); err != nil {
		return scenarios.Outcome{}, err
	}
	s, release, err := StacklessFor("offload")
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer release()
	fds, err := stacklessPipes(s) // a read, a write, b read, b write
	if err != nil {
		return scenarios.Outcome{}, err
	}
	n, c, buf := env.N, env.Int("c"), offloadData(env.Int("kb"))
	left := c
	ping := &offloadPinger{in: fds[2], out: fds[1], left: &left, samples: make([]int64, 0, offloadMaxSamples)}
	pong := &offloadPonger{state: fwRecv, in: fds[0], out: fds[3]}
	defer func() {
		for i, f := range fds {
			if i != 1 || !ping.closed { // the pinger closes a's write end when done
				f.Close()
			}
		}
	}()
	workers := make([]*offloadWorker, c)
	for w := range workers {
		wk, err := s.NewWork()
		if err != nil {
			return scenarios.Outcome{}, err
		}
		defer wk.Close()
		t := &offloadWorker{w: wk, i: w, n: n, c: c, buf: buf, left: &left, env: env}
		t.job = func() { t.crc = offloadChunk(t.buf, t.i) }
		workers[w] = t
	}
	env.ResetTimer()
	for _, t := range []stackless.Task{pong, ping} {
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	for _, t := range workers {
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	// The timer stops when the last worker finishes (offloadWorker), as
	// the blocking body's does; the pinger's last round comes after it.
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	var sum uint64
	for _, t := range workers {
		sum += t.sum
	}
	return offloadOutcome(env, sum, ping.samples, ping.rounds)
}

// offloadWorker is one offloading coroutine: submit chunk i, await it,
// fold it in, next.
type offloadWorker struct {
	stackless.Coro
	w       *stackless.Work
	job     reactor.JobFunc
	i, n, c int
	buf     []byte
	crc     uint32
	sum     uint64
	waiting bool
	left    *int // workers not finished; the last one stops the timer
	env     *scenarios.Env
}

func (t *offloadWorker) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		if err := c.Err(); err != nil {
			return c.Fail(fmt.Errorf("offload: chunk %d: %w", t.i, err))
		}
		t.sum += offloadMix(t.i, t.crc)
		t.i += t.c
	}
	if t.i < t.n {
		t.waiting = true
		return c.AwaitWork(t.w, t.job, 0)
	}
	if *t.left--; *t.left == 0 {
		t.env.StopTimer()
	}
	return c.Done()
}

// offloadPinger sends byte i and reads it back, until no worker is left.
type offloadPinger struct {
	stackless.Coro
	state   uint8 // fwSend, fwRecv (fdwake's states)
	i       int
	b       [1]byte
	t0      int64
	in, out *stackless.FD
	left    *int
	samples []int64
	rounds  int64
	closed  bool // out closed
}

func (t *offloadPinger) Resume(c *stackless.Context) stackless.Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for {
		switch t.state {
		case fwSend:
			if *t.left == 0 {
				_ = t.out.Close() // the ponger reads EOF
				t.closed = true
				return c.Done()
			}
			t.t0 = monoNow()
			t.b[0] = byte(t.i)
			_, err := t.out.TryWrite(t.b[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitWritable(t.out)
			}
			if err != nil {
				return c.Fail(fmt.Errorf("offload: pinger write: %w", err))
			}
			t.state = fwRecv
		case fwRecv:
			_, err := t.in.TryRead(t.b[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitReadable(t.in)
			}
			if err != nil || t.b[0] != byte(t.i) {
				return c.Fail(fmt.Errorf("offload: pinger read %#x, want %#x: %v", t.b[0], byte(t.i), err))
			}
			if len(t.samples) < cap(t.samples) {
				t.samples = append(t.samples, monoNow()-t.t0)
			}
			t.rounds++
			t.i++
			t.state = fwSend
		}
	}
}

// offloadPonger echoes each byte until EOF.
type offloadPonger struct {
	stackless.Coro
	state   uint8
	b       [1]byte
	in, out *stackless.FD
}

func (t *offloadPonger) Resume(c *stackless.Context) stackless.Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for {
		switch t.state {
		case fwRecv:
			n, err := t.in.TryRead(t.b[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitReadable(t.in)
			}
			if errors.Is(err, io.EOF) || (err == nil && n == 0) {
				return c.Done()
			}
			if err != nil {
				return c.Fail(fmt.Errorf("offload: ponger read: %w", err))
			}
			t.state = fwSend
		case fwSend:
			_, err := t.out.TryWrite(t.b[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitWritable(t.out)
			}
			if err != nil {
				return c.Fail(fmt.Errorf("offload: ponger write: %w", err))
			}
			t.state = fwRecv
		}
	}
}
