package stackless

import (
	"errors"
	"fmt"
)

// PingPong is the pingpong workload as two hand-written state machines: a
// ping task and a pong task hand control back and forth through two reusable
// one-shot Events (each waits on its own event, resolves the peer's, and
// resets its own after waking). Every handoff passes a sequence number
// through a shared token, so the checksum proves each handoff happened in
// order: after Run it is rounds*(rounds+1) (see PingPongChecksum).
//
// It is exported for the scenario layer; it also serves as a worked example
// of writing a task by hand.
type PingPong struct {
	rounds     int
	token      uint64
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
	p.ping = pingPongTask{state: ppSend, rounds: rounds, token: &p.token, mine: &p.pingEv, peer: &p.pongEv, name: "ping"}
	p.pong = pingPongTask{state: ppRecv, rounds: rounds, token: &p.token, mine: &p.pongEv, peer: &p.pingEv, name: "pong"}
	return p, nil
}

// Spawn spawns the ping task, then the pong task, on s.
func (p *PingPong) Spawn(s *Scheduler) error {
	if err := s.Spawn(&p.ping); err != nil {
		return err
	}
	return s.Spawn(&p.pong)
}

// Checksum returns the sum of the sequence numbers both tasks received.
func (p *PingPong) Checksum() uint64 { return p.ping.sum + p.pong.sum }

// Switches returns the number of one-way handoffs: 2 per round trip.
func (p *PingPong) Switches() uint64 { return 2 * uint64(p.rounds) }

// PingPongChecksum is the checksum a completed pingpong of rounds round trips
// must report: both sides receive 1..rounds.
func PingPongChecksum(rounds int) uint64 { return uint64(rounds) * uint64(rounds+1) }

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
		return got, fmt.Errorf("stackless: pingpong checksum %d, want %d", got, want)
	}
	return p.Checksum(), nil
}

// States of a pingpong task.
const (
	ppSend uint8 = iota // hand the next sequence number to the peer
	ppRecv              // wait for the peer (pong's first state)
	ppWoke              // the peer handed over: take its number
)

type pingPongTask struct {
	Coro
	state       uint8
	rounds      int
	sent, recvd int
	sum         uint64
	token       *uint64
	mine, peer  *Event
	name        string
}

func (t *pingPongTask) Name() string { return t.name }

func (t *pingPongTask) Resume(c *Context) Step {
	for {
		switch t.state {
		case ppSend:
			t.sent++
			*t.token = uint64(t.sent)
			if err := t.peer.Resolve(nil); err != nil {
				return c.Fail(err)
			}
			if t.recvd == t.rounds { // pong: its last send ends it
				return c.Done()
			}
			t.state = ppWoke
			return c.Await(t.mine)
		case ppRecv:
			t.state = ppWoke
			return c.Await(t.mine)
		case ppWoke:
			if err := c.Err(); err != nil {
				if errors.Is(err, ErrCanceled) {
					return c.Done()
				}
				return c.Fail(err)
			}
			t.mine.Reset()
			t.recvd++
			t.sum += *t.token
			if t.sent == t.rounds { // ping: its last receive ends it
				return c.Done()
			}
			t.state = ppSend
		default:
			return c.Fail(fmt.Errorf("pingpong: bad state %d", t.state))
		}
	}
}
