package stackless

import (
	"errors"
	"fmt"
)

// PingPong is the pingpong workload as two hand-written state machines: a
// ping task and a pong task hand control back and forth through two reusable
// one-shot Events (each waits on its own event, resolves the peer's, and
// resets its own after waking).
//
// The checksum is the one scenarios/ uses for pingpong: ping mixes the even
// numbers 0, 2, 4, ... before each handoff and pong the odd numbers after
// each wake-up, into one running sum (sum = (sum ^ v) * 0x100000001b3), so
// the sum equals the mix of 0..2*rounds-1 in order only if every handoff
// happened, in order (see PingPongChecksum).
//
// It is exported for the scenario layer and as a worked example of writing
// tasks by hand.
type PingPong struct {
	rounds     int
	sum        uint64
	ping, pong pingPongTask
	pingEv     Event // ping waits on it, pong resolves it
	pongEv     Event // pong waits on it, ping resolves it
}

// NewPingPong prepares a ping and a pong task for rounds round trips
// (2*rounds one-way switches).
func NewPingPong(rounds int) (*PingPong, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("stackless: pingpong needs rounds >= 1, got %d", rounds)
	}
	p := &PingPong{rounds: rounds}
	p.ping = pingPongTask{state: ppSend, rounds: rounds, sum: &p.sum, mine: &p.pingEv, peer: &p.pongEv, ping: true, name: "ping"}
	p.pong = pingPongTask{state: ppRecv, rounds: rounds, sum: &p.sum, mine: &p.pongEv, peer: &p.pingEv, name: "pong"}
	return p, nil
}

// Spawn spawns the ping task, then the pong task, on s.
func (p *PingPong) Spawn(s *Scheduler) error {
	if err := s.Spawn(&p.ping); err != nil {
		return err
	}
	return s.Spawn(&p.pong)
}

// Checksum returns the running sum.
func (p *PingPong) Checksum() uint64 { return p.sum }

// Switches returns the number of one-way handoffs: 2 per round trip.
func (p *PingPong) Switches() uint64 { return 2 * uint64(p.rounds) }

// Mix folds v into a running checksum, as scenarios/ does.
func Mix(sum, v uint64) uint64 { return (sum ^ v) * 0x100000001b3 }

// PingPongChecksum is the checksum a completed pingpong of rounds round trips
// must report: the mix of 0, 1, ..., 2*rounds-1 in order.
func PingPongChecksum(rounds int) uint64 {
	var sum uint64
	for i := 0; i < 2*rounds; i++ {
		sum = Mix(sum, uint64(i))
	}
	return sum
}

// RunPingPong runs rounds round trips on a fresh scheduler and returns the
// checksum, verified against PingPongChecksum.
func RunPingPong(rounds int) (uint64, error) {
	p, err := NewPingPong(rounds)
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
	if got, want := p.Checksum(), PingPongChecksum(rounds); got != want {
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
			*t.sum = Mix(*t.sum, uint64(2*t.i))
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
			*t.sum = Mix(*t.sum, uint64(2*t.i+1))
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
