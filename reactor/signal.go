package reactor

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signal fires when the process receives a Unix signal.
//
// Why not signalfd: a signalfd receives a process-directed signal only if
// no thread has it unblocked; otherwise the kernel delivers it to a thread
// that does, where Go's own handler takes it. Go gives us no way to block a
// signal in every thread: pthread_sigmask affects the calling thread only,
// and the runtime starts new threads from the mask the process started
// with. reactor/internal/signalfdprobe measures it: with SIGUSR1 blocked on
// a locked thread reading a signalfd, 0 of 20 kill(getpid(), SIGUSR1)
// reached the signalfd (Go 1.26.8, Linux 6.18), while 20 of 20 tgkill aimed
// at that thread did. So signals come through os/signal: one goroutine per
// signal number in use counts each delivery and wakes the loop through the
// trigger eventfd. Those goroutines are outside the loop; the loop
// goroutine only reads the counts.
//
// Like os/signal, deliveries can coalesce: several signals arriving before
// the loop looks may fire once (Count tells how many were seen).
type Signal struct {
	event
	sig   unix.Signal
	seen  uint64 // deliveries accounted for by earlier firings (or before creation)
	count uint64 // deliveries covered by the last firing
	index int    // position in signalState.events
}

// signalState is the loop's os/signal subscription: one channel and one
// forwarding goroutine per signal number in use, because os/signal can only
// unsubscribe a whole channel, and a shared channel would have to drop every
// signal for a moment to drop one.
type signalState struct {
	counts [65]atomic.Uint64 // deliveries per signal number, written by the forwarders
	subs   [65]*signalSub    // open subscriptions, nil when no event uses the number
	events []*Signal
}

type signalSub struct {
	ch   chan os.Signal
	done chan struct{}
	refs int // open Signal events for this number
}

// NewSignal creates an idle event for sig. Only deliveries after NewSignal
// count; a delivery while the event is idle fires after the next Start.
// While any Signal event for sig is open, sig's default action (e.g.
// SIGINT's exit) does not happen.
func (l *Loop) NewSignal(sig unix.Signal, cb func()) (*Signal, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	switch {
	case sig <= 0 || sig > 64:
		return nil, fmt.Errorf("reactor: NewSignal(%d): signal numbers run from 1 to 64", int(sig))
	case sig == unix.SIGKILL || sig == unix.SIGSTOP:
		return nil, fmt.Errorf("reactor: NewSignal(%v): this signal cannot be caught", sig)
	case sig == unix.SIGSEGV || sig == unix.SIGBUS || sig == unix.SIGFPE || sig == unix.SIGILL:
		return nil, fmt.Errorf("reactor: NewSignal(%v): synchronous fault signals become Go panics and cannot be waited for", sig)
	}
	if l.signals == nil {
		l.signals = &signalState{}
	}
	st := l.signals
	sub := st.subs[sig]
	if sub == nil {
		sub = &signalSub{ch: make(chan os.Signal, 16), done: make(chan struct{})}
		st.subs[sig] = sub
		signal.Notify(sub.ch, syscall.Signal(sig))
		go st.forward(l, sub, sig)
	}
	sub.refs++
	s := &Signal{event: newEvent(l, cb, "Signal"), sig: sig, index: len(st.events)}
	s.seen = st.counts[sig].Load()
	st.events = append(st.events, s)
	return s, nil
}

// forward runs on its own goroutine: it counts deliveries and wakes the loop.
func (st *signalState) forward(l *Loop, sub *signalSub, sig unix.Signal) {
	defer close(sub.done)
	for range sub.ch {
		st.counts[sig].Add(1)
		l.wakeUp()
	}
}

// unsubscribe ends delivery of one signal number. After signal.Stop returns
// no more values arrive, so the channel can be closed and the forwarder ends.
func (st *signalState) unsubscribe(sig unix.Signal) {
	sub := st.subs[sig]
	st.subs[sig] = nil
	signal.Stop(sub.ch)
	close(sub.ch)
	<-sub.done
}

// scan queues the started Signal events that have new deliveries.
func (st *signalState) scan(l *Loop) {
	for _, s := range st.events {
		if s.state == stateActive && st.counts[s.sig].Load() != s.seen {
			l.enqueue(s, &s.queued)
		}
	}
}

// stop ends all delivery (Loop.Close).
func (st *signalState) stop() {
	for n := range st.subs {
		if st.subs[n] != nil {
			st.unsubscribe(unix.Signal(n))
		}
	}
}

// Signum returns the signal the event waits for.
func (s *Signal) Signum() unix.Signal { return s.sig }

// Count returns how many deliveries the last firing covered (>= 1).
func (s *Signal) Count() uint64 { return s.count }

// Start lets the event fire; fires in the next Tick if deliveries arrived
// while it was idle.
func (s *Signal) Start() {
	if s.activate("Signal") && s.loop.signals.counts[s.sig].Load() != s.seen {
		s.loop.enqueue(s, &s.queued)
	}
}

// Stop stops firing; deliveries keep being counted until Close.
func (s *Signal) Stop() { s.deactivate() }

// Close releases the event. When it was the last one for its signal, the
// signal gets its default behaviour back (signal.Stop).
func (s *Signal) Close() {
	if s.state == stateClosed {
		return
	}
	s.release()
	l := s.loop
	if l.closed {
		return
	}
	st := l.signals
	last := st.events[len(st.events)-1]
	st.events[s.index] = last
	last.index = s.index
	st.events[len(st.events)-1] = nil
	st.events = st.events[:len(st.events)-1]
	if sub := st.subs[s.sig]; sub != nil {
		if sub.refs--; sub.refs == 0 {
			st.unsubscribe(s.sig)
		}
	}
}

func (s *Signal) fireQueued() {
	s.queued = false
	if s.state != stateActive {
		return
	}
	c := s.loop.signals.counts[s.sig].Load()
	if c == s.seen {
		return
	}
	s.count, s.seen = c-s.seen, c
	s.fire()
}
