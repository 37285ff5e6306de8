package stackless

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pingPong is the pingpong workload as two hand-written state machines: a
// ping task and a pong task hand control back and forth through two reusable
// one-shot Events (each waits on its own event, resolves the peer's, and
// resets its own after waking).
//
// The checksum is the one scenarios/ uses for pingpong: ping mixes the even
// numbers 0, 2, 4, ... before each handoff and pong the odd numbers after
// each wake-up, into one running sum (sum = (sum ^ v) * 0x100000001b3), so
// the sum equals the mix of 0..2*rounds-1 in order only if every handoff
// happened, in order (see pingPongChecksum).
//
// It lives in the tests: the runtime knows nothing of benchmarks
// (scenarios/pingpong.go owns the scenario's bodies). Here it is a worked
// example of writing tasks by hand, and the workload of BenchmarkPingPong and
// of the allocation and resume-count tests.
type pingPong struct {
	rounds     int
	sum        uint64
	ping, pong pingPongTask
	pingEv     Event // ping waits on it, pong resolves it
	pongEv     Event // pong waits on it, ping resolves it
}

// newPingPong prepares a ping and a pong task for rounds round trips
// (2*rounds one-way switches).
func newPingPong(rounds int) (*pingPong, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("stackless: pingpong needs rounds >= 1, got %d", rounds)
	}
	p := &pingPong{rounds: rounds}
	p.ping = pingPongTask{state: ppSend, rounds: rounds, sum: &p.sum, mine: &p.pingEv, peer: &p.pongEv, ping: true, name: "ping"}
	p.pong = pingPongTask{state: ppRecv, rounds: rounds, sum: &p.sum, mine: &p.pongEv, peer: &p.pingEv, name: "pong"}
	return p, nil
}

// Spawn spawns the ping task, then the pong task, on s.
func (p *pingPong) Spawn(s *Scheduler) error {
	if err := s.Spawn(&p.ping); err != nil {
		return err
	}
	return s.Spawn(&p.pong)
}

// Checksum returns the running sum.
func (p *pingPong) Checksum() uint64 { return p.sum }

// Switches returns the number of one-way handoffs: 2 per round trip.
func (p *pingPong) Switches() uint64 { return 2 * uint64(p.rounds) }

// mix folds v into a running checksum, as scenarios/ does.
func mix(sum, v uint64) uint64 { return (sum ^ v) * 0x100000001b3 }

// pingPongChecksum is the checksum a completed pingpong of rounds round trips
// must report: the mix of 0, 1, ..., 2*rounds-1 in order.
func pingPongChecksum(rounds int) uint64 {
	var sum uint64
	for i := 0; i < 2*rounds; i++ {
		sum = mix(sum, uint64(i))
	}
	return sum
}

// runPingPong runs rounds round trips on a fresh scheduler and returns the
// checksum, verified against pingPongChecksum.
func runPingPong(rounds int) (uint64, error) {
	p, err := newPingPong(rounds)
	if err != nil {
		return 0, err
	}
	s := New()
	if err := p.Spawn(s); err != nil {
		return 0, err
	}
	if err := s.Run(); err != nil {
		return 0, err
	}
	if got, want := p.Checksum(), pingPongChecksum(rounds); got != want {
		return got, fmt.Errorf("stackless: pingpong checksum %#x, want %#x", got, want)
	}
	return p.Checksum(), nil
}

// errPeerNotReset: strict alternation broke (a handoff found the peer's
// event still fired).
var errPeerNotReset = errors.New("stackless: pingpong: the peer's event had not been reset")

// States of a pingpong task.
const (
	ppSend uint8 = iota // ping: mix the next even number and hand over
	ppRecv              // pong's first state: wait for ping
	ppWoke              // the peer handed over
)

// pingPongTask is either side; ping starts in ppSend, pong in ppRecv.
type pingPongTask struct {
	Coro
	state      uint8
	rounds, i  int
	sum        *uint64
	mine, peer *Event
	ping       bool
	name       string
}

func (t *pingPongTask) Name() string { return t.name }

func (t *pingPongTask) Resume(c *Context) Step {
	for {
		switch t.state {
		case ppSend: // ping only
			if t.i == t.rounds {
				return c.Done()
			}
			*t.sum = mix(*t.sum, uint64(2*t.i))
			t.i++
			if !t.peer.Resolve(nil) {
				return c.Fail(errPeerNotReset)
			}
			t.state = ppWoke
			return c.Await(t.mine)
		case ppRecv: // pong only
			t.state = ppWoke
			return c.Await(t.mine)
		case ppWoke:
			if err := c.Err(); err != nil {
				if errors.Is(err, ErrCancelled) {
					return c.Done() // cancelled: nothing to clean up
				}
				return c.Fail(err)
			}
			t.mine.Reset()
			if t.ping {
				t.state = ppSend
				continue
			}
			*t.sum = mix(*t.sum, uint64(2*t.i+1))
			t.i++
			if !t.peer.Resolve(nil) {
				return c.Fail(errPeerNotReset)
			}
			if t.i == t.rounds {
				return c.Done()
			}
			return c.Await(t.mine)
		default:
			return c.Fail(fmt.Errorf("pingpong: bad state %d", t.state))
		}
	}
}

// threadCPU returns the calling thread's CPU time in ns. The benchmarks lock
// their goroutine to its thread and report it next to wall time: on a loaded
// machine wall time includes the spells the thread was descheduled, thread
// CPU time does not.
func threadCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return ts.Nano()
}

func TestPingPongChecksum(t *testing.T) {
	for _, rounds := range []int{1, 2, 3, 100, 10000} {
		sum, err := runPingPong(rounds)
		if err != nil {
			t.Fatalf("rounds=%d: %v", rounds, err)
		}
		if want := pingPongChecksum(rounds); sum != want {
			t.Fatalf("rounds=%d: checksum %d, want %d", rounds, sum, want)
		}
	}
	if _, err := newPingPong(0); err == nil {
		t.Fatal("newPingPong(0) succeeded, want an error")
	}
}

func TestPingPongResumeCount(t *testing.T) {
	p, _ := newPingPong(50)
	s := New()
	if err := p.Spawn(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	// Each task is resumed once to start and once per handoff it receives.
	// Pong's first receive takes the fast path (ping resolved pong's event
	// before pong first waited): pong is called again at once, not queued.
	if st.Resumes != 2*50+2 || st.FastPaths != 1 {
		t.Fatalf("stats %+v, want Resumes=%d FastPaths=1", st, 2*50+2)
	}
}

// TestPingPongNoAllocs: the steady-state handoff allocates nothing. MemStats
// counts the whole process, so a run gets a few attempts (background runtime
// allocations only ever add).
func TestPingPongNoAllocs(t *testing.T) {
	const rounds = 10000
	var n uint64
	for attempt := 0; attempt < 3; attempt++ {
		p, _ := newPingPong(rounds)
		s := New()
		_ = p.Spawn(s)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n = after.Mallocs - before.Mallocs; n == 0 {
			return
		}
	}
	t.Fatalf("%d allocations over %d handoffs, want 0", n, 2*rounds)
}

// BenchmarkPingPong: b.N one-way switches between two state machines through
// reusable one-shot events. Reports ns/switch and allocs/switch.
func BenchmarkPingPong(b *testing.B) {
	rounds := max(b.N/2, 1)
	p, _ := newPingPong(rounds)
	s := New()
	_ = p.Spawn(s)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	cpu0, start := threadCPU(b), time.Now()
	err := s.Run()
	elapsed, cpu := time.Since(start), threadCPU(b)-cpu0
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if err != nil {
		b.Fatal(err)
	}
	if p.Checksum() != pingPongChecksum(rounds) {
		b.Fatalf("checksum %d, want %d", p.Checksum(), pingPongChecksum(rounds))
	}
	sw := float64(p.Switches())
	b.ReportMetric(float64(elapsed.Nanoseconds())/sw, "ns/switch")
	b.ReportMetric(float64(cpu)/sw, "cpu-ns/switch")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/sw, "allocs/switch")
}

// yielder yields n times.
type yielder struct {
	Coro
	n int
}

func (t *yielder) Resume(c *Context) Step {
	if t.n == 0 {
		return c.Done()
	}
	t.n--
	return c.Yield()
}

// BenchmarkYield: two tasks yielding to each other: the bare cost of the
// run loop per switch (no events), for comparison with BenchmarkPingPong.
func BenchmarkYield(b *testing.B) {
	s := New()
	n := max(b.N/2, 1)
	_ = s.Spawn(&yielder{n: n})
	_ = s.Spawn(&yielder{n: n})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, start := threadCPU(b), time.Now()
	if err := s.Run(); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), threadCPU(b)-cpu0
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(2*n), "ns/switch")
	b.ReportMetric(float64(cpu)/float64(2*n), "cpu-ns/switch")
}

// TestIndependentSchedulers: schedulers share no state, so several can run
// at once on different goroutines (race detector clean).
func TestIndependentSchedulers(t *testing.T) {
	const k, rounds = 4, 2000
	errs := make(chan error, k)
	for i := 0; i < k; i++ {
		go func() {
			sum, err := runPingPong(rounds)
			if err == nil && sum != pingPongChecksum(rounds) {
				err = errors.New("bad checksum")
			}
			errs <- err
		}()
	}
	for i := 0; i < k; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
