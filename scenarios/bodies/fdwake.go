package bodies

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// FDWake: two coroutines ping-pong one byte over two pipes, N round trips.
// Every hand-off is a pipe write that wakes a reader suspended on fd
// readiness: through the corobench reactor (epoll, edge-triggered) on the
// stackful and stackless rows, through Go's netpoller on the goroutine rows.
var FDWake = register(&scenarios.Scenario{
	Name:    "fdwake",
	Bench:   "FDWake",
	Summary: "Two coroutines ping-ponging over pipes through the reactor or netpoller; cost per round trip.",
	Latency: true,
	Doc: "Two coroutines ping-pong one byte over two pipes, N round trips: each side's read suspends until the other side's write " +
		"makes its pipe readable, through the reactor (stackful: OpenIO; stackless: NewFD + AwaitReadable) or Go's netpoller (goroutines: os.Pipe). " +
		"ns/roundtrip is a round trip (two fd wake-ups); p99-ns/roundtrip is the 99th percentile of the individual round trips of the run.",
	Claim: "Reactor wake-up cost: epoll single-fd wake-up 726 ns, floor 483 ns (grpc/grpc#10330, docs/design.md §8); tail latency, not only averages (docs/design.md §6).",
	Metrics: []scenarios.Metric{
		{Unit: "ns/roundtrip", Kind: scenarios.TimePerOp, Headline: "fd wake round trip"},
		{Unit: "p99-ns/roundtrip", Kind: scenarios.BodyMeasured},
	},
	Blocking:     fdWakeBlocking,
	StateMachine: fdWakeStateMachine,
	Want:         fdWakeWant,
})

// fdWakeByte is the byte the pinger sends in round trip i, and fdWakeReply
// what the ponger answers: a function of it, so the checksum proves the
// ponger read the byte before replying.
func fdWakeByte(i int) byte   { return byte(i*7 + 1) }
func fdWakeReply(b byte) byte { return b ^ 0xA5 }
func fdWakeMix(sum uint64, i int, reply byte) uint64 {
	return mix(sum, uint64(i)<<8|uint64(reply))
}

func fdWakeWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.N; i++ {
		sum = fdWakeMix(sum, i, fdWakeReply(fdWakeByte(i)))
	}
	return sum
}

// errFDWakeReply fails a run whose reply was not the transform of the byte
// sent: a byte was lost, duplicated or misrouted.
func errFDWakeReply(i int, got byte) error {
	return fmt.Errorf("fdwake: round trip %d got reply %#x, want %#x", i, got, fdWakeReply(fdWakeByte(i)))
}

// fdWakeBlocking is the blocking body. The main coroutine (the pinger)
// writes to pipe a and reads the reply from pipe b; its partner (the
// ponger) reads a and writes b. One clock reading per round trip gives the
// per-round-trip samples.
func fdWakeBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	pipes, ok := rt.(scenarios.Pipes)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Pipes", "the row has no pipes whose reads suspend only the calling coroutine")
	}
	n := env.N
	ar, aw, err := pipes.Pipe()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	br, bw, err := pipes.Pipe()
	if err != nil {
		closeAll(ar, aw)
		return scenarios.Outcome{}, err
	}
	samples := make([]int64, n)
	var pongErr error
	pongDone := rt.NewSignal()
	rt.Go(func() {
		defer pongDone.Fire()
		var buf [1]byte
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(ar, buf[:]); err != nil {
				pongErr = fmt.Errorf("fdwake: ponger read: %w", err)
				bw.Close() // ends the pinger's read with EOF
				return
			}
			buf[0] = fdWakeReply(buf[0])
			if _, err := bw.Write(buf[:]); err != nil {
				pongErr = fmt.Errorf("fdwake: ponger write: %w", err)
				bw.Close()
				return
			}
		}
	})
	var sum uint64
	var pingErr error
	var buf [1]byte
	env.ResetTimer()
	last := monoNow()
	for i := 0; i < n; i++ {
		buf[0] = fdWakeByte(i)
		if _, err := aw.Write(buf[:]); err != nil {
			pingErr = fmt.Errorf("fdwake: pinger write: %w", err)
			break
		}
		if _, err := io.ReadFull(br, buf[:]); err != nil {
			pingErr = fmt.Errorf("fdwake: pinger read: %w", err)
			break
		}
		now := monoNow()
		samples[i], last = now-last, now
		if buf[0] != fdWakeReply(fdWakeByte(i)) {
			pingErr = errFDWakeReply(i, buf[0])
			break
		}
		sum = fdWakeMix(sum, i, buf[0])
	}
	env.StopTimer()
	if pingErr != nil {
		// Unblock the ponger: closing the write end of its pipe ends its
		// read with EOF.
		aw.Close()
	}
	pongDone.Wait()
	closeAll(ar, aw, br, bw)
	if err := errors.Join(pingErr, pongErr); err != nil {
		return scenarios.Outcome{}, err
	}
	return fdWakeOutcome(n, sum, samples)
}

func fdWakeOutcome(n int, sum uint64, samples []int64) (scenarios.Outcome, error) {
	lat := summarizeLatencies(samples)
	return scenarios.Outcome{Ops: int64(n), Checksum: sum, Values: map[string]float64{"p99-ns/roundtrip": lat.P99}}, nil
}

func closeAll(cs ...io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// fdWakeStateMachine is the state-machine twin: the pinger and the ponger
// as tasks on impl/stackless, waiting with AwaitReadable and moving the
// byte with TryRead/TryWrite.
func fdWakeStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	s := stackless.New()
	defer s.Close()
	fds, err := stacklessPipes(s) // a read, a write, b read, b write
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer func() {
		for _, f := range fds {
			f.Close()
		}
	}()
	ping := &fdWakeTask{ping: true, n: env.N, in: fds[2], out: fds[1], samples: make([]int64, env.N)}
	pong := &fdWakeTask{state: fwRecv, n: env.N, in: fds[0], out: fds[3]}
	if err := s.Spawn(ping); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Spawn(pong); err != nil {
		return scenarios.Outcome{}, err
	}
	env.ResetTimer()
	ping.last = monoNow()
	err = s.Run()
	env.StopTimer()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return fdWakeOutcome(env.N, ping.sum, ping.samples)
}

// States of an fdwake task.
const (
	fwSend uint8 = iota // write this round's byte (pinger) or the reply (ponger)
	fwRecv              // read the peer's byte
)

// fdWakeTask is one side of fdwake. The pinger starts in fwSend, the ponger
// in fwRecv (set at construction); each write is one byte, which a pipe with room takes whole.
type fdWakeTask struct {
	stackless.Coro
	state   uint8
	ping    bool
	i, n    int
	buf     [1]byte
	in, out *stackless.FD
	sum     uint64
	last    int64
	samples []int64
}

func (t *fdWakeTask) Resume(c *stackless.Context) stackless.Step {
	if err := c.Err(); err != nil {
		return c.Fail(err)
	}
	for t.i < t.n {
		switch t.state {
		case fwSend:
			if t.ping {
				t.buf[0] = fdWakeByte(t.i)
			}
			_, err := t.out.TryWrite(t.buf[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitWritable(t.out)
			}
			if err != nil {
				return c.Fail(fmt.Errorf("fdwake: write: %w", err))
			}
			if !t.ping {
				t.i++ // the ponger's round ends with its reply
			}
			t.state = fwRecv
		case fwRecv:
			n, err := t.in.TryRead(t.buf[:])
			if errors.Is(err, reactor.ErrWouldBlock) {
				return c.AwaitReadable(t.in)
			}
			if err != nil {
				return c.Fail(fmt.Errorf("fdwake: read: %w", err))
			}
			if n != 1 {
				return c.Fail(fmt.Errorf("fdwake: read %d bytes, want 1", n))
			}
			if t.ping {
				now := monoNow()
				t.samples[t.i], t.last = now-t.last, now
				if t.buf[0] != fdWakeReply(fdWakeByte(t.i)) {
					return c.Fail(errFDWakeReply(t.i, t.buf[0]))
				}
				t.sum = fdWakeMix(t.sum, t.i, t.buf[0])
				t.i++ // the pinger's round ends with the reply read
			} else {
				t.buf[0] = fdWakeReply(t.buf[0])
			}
			t.state = fwSend
		}
	}
	return c.Done()
}

// stacklessPipes makes two pipes registered on s, as a read, a write, b
// read, b write; on an error it closes everything it opened. The set-up the
// fdwake and offload state machines share; the caller closes the FDs.
func stacklessPipes(s *stackless.Scheduler) ([4]*stackless.FD, error) {
	var fds [4]*stackless.FD
	raw := [4]int{-1, -1, -1, -1}
	fail := func(err error, from int) ([4]*stackless.FD, error) {
		for i := 0; i < from; i++ {
			fds[i].Close()
		}
		for i := from; i < len(raw); i++ {
			if raw[i] >= 0 {
				unix.Close(raw[i])
			}
		}
		return [4]*stackless.FD{}, err
	}
	for p := 0; p < 2; p++ {
		if err := unix.Pipe2(raw[2*p:2*p+2], unix.O_CLOEXEC); err != nil {
			return fail(fmt.Errorf("pipe2: %w", err), 0)
		}
	}
	for i := range fds {
		f, err := s.NewFD(raw[i])
		if err != nil {
			return fail(err, i)
		}
		fds[i] = f
	}
	return fds, nil
}
