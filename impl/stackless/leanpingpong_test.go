package stackless

import (
	"runtime"
	"testing"
	"time"
)

// This file is a measurement prototype, not a second runtime: the least a
// stackless hand-off through a run queue can do on this machine, for
// BenchmarkPingPongLean to set beside BenchmarkPingPong. One hand-off is:
// the running task fires an event (its one waiter is pushed on the run
// queue), awaits its own event (it becomes that event's waiter) and
// returns; the loop pops the next task and calls its Resume through an
// interface. What the real path does on top (microtasks before each
// switch, the throttled reactor check, two priorities, switch handlers,
// the waker's states and outcome, waiter lists in FIFO order,
// cancellation, statistics) is what BenchmarkPingPong minus this costs.

// leanCoro is the prototype's task header.
type leanCoro struct {
	task leanTask
}

// leanTask is the prototype's Task: Resume returns false when it is done.
type leanTask interface {
	resume(s *leanSched) bool
}

// leanEvent is a one-shot event with at most one waiter.
type leanEvent struct {
	done   bool
	waiter *leanCoro
}

// fire marks e done and queues its waiter, if any.
func (e *leanEvent) fire(s *leanSched) {
	e.done = true
	if w := e.waiter; w != nil {
		e.waiter = nil
		s.push(w)
	}
}

// leanSched is a ring-buffer run queue and the loop.
type leanSched struct {
	buf        [16]*leanCoro
	head, tail uint
}

func (s *leanSched) push(co *leanCoro) {
	s.buf[s.tail&15] = co
	s.tail++
}

func (s *leanSched) run() {
	for s.head != s.tail {
		co := s.buf[s.head&15]
		s.head++
		if co.task.resume(s) {
			continue
		}
	}
}

// leanSide is one side of the prototype's pingpong, with the same
// checksum as pingPongTask.
type leanSide struct {
	leanCoro
	woken      bool
	ping       bool
	i, n       int
	sum        *uint64
	mine, peer *leanEvent
}

func (t *leanSide) resume(s *leanSched) bool {
	for {
		if t.woken {
			t.woken = false
			t.mine.done = false // Reset
			if !t.ping {
				*t.sum = mix(*t.sum, uint64(2*t.i+1))
				t.peer.fire(s)
			}
			t.i++
		}
		if t.i == t.n {
			return false
		}
		if t.ping {
			*t.sum = mix(*t.sum, uint64(2*t.i))
			t.peer.fire(s)
		}
		t.woken = true
		if !t.mine.done { // await: suspend unless already fired
			t.mine.waiter = &t.leanCoro
			return true
		}
	}
}

// BenchmarkPingPongLean is BenchmarkPingPong on the prototype above: the
// floor of a stackless hand-off through a run queue (see the file comment).
func BenchmarkPingPongLean(b *testing.B) {
	rounds := max(b.N/2, 1)
	var sum uint64
	var pingEv, pongEv leanEvent
	ping := &leanSide{ping: true, n: rounds, sum: &sum, mine: &pingEv, peer: &pongEv}
	pong := &leanSide{n: rounds, sum: &sum, mine: &pongEv, peer: &pingEv}
	ping.task, pong.task = ping, pong
	var s leanSched
	s.push(&ping.leanCoro)
	// pong starts by waiting on its event.
	pong.woken = true
	pongEv.waiter = &pong.leanCoro
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, start := threadCPU(b), time.Now()
	s.run()
	elapsed, cpu := time.Since(start), threadCPU(b)-cpu0
	b.StopTimer()
	if sum != pingPongChecksum(rounds) {
		b.Fatalf("checksum %d, want %d", sum, pingPongChecksum(rounds))
	}
	sw := float64(2 * rounds)
	b.ReportMetric(float64(elapsed.Nanoseconds())/sw, "ns/switch")
	b.ReportMetric(float64(cpu)/sw, "cpu-ns/switch")
}
