package stackful

import (
	"errors"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"
)

// Signal is a Unix signal a coroutine can wait for (a reactor.Signal; the
// reference design's signal event, docs/design.md §4). Deliveries after
// NewSignal count; several arriving before the scheduler looks fire one
// wake-up (Wait returns how many it covered). While a Signal for sig is
// open, sig's default action (SIGINT's exit, say) does not happen. At most
// one coroutine may wait on a Signal at a time; impl/stackless's Signal is
// the same reactor event as a Source.
type Signal struct {
	sg *reactor.Signal
	ev Event // resolved by the reactor callback with the delivery count
}

// NewSignal returns a Signal for sig on the running scheduler's reactor.
func NewSignal(sig unix.Signal) (*Signal, error) {
	s := scheduler("NewSignal")
	g := &Signal{}
	var err error
	if g.sg, err = s.loop.NewSignal(sig, func() { g.ev.Resolve(g.sg.Count()) }); err != nil {
		return nil, err
	}
	return g, nil
}

// Wait suspends the coroutine until sig is delivered (at once, at the next
// reactor tick, if it was delivered since the last Wait) and returns the
// number of deliveries the wake-up covers; ErrTimeout after timeout (none if
// negative), or a cancellation.
func (g *Signal) Wait(timeout time.Duration) (uint64, error) {
	g.ev.Reset()
	g.sg.Start()
	v, err := AwaitWith(&g.ev, nil, timeout)
	g.sg.Stop()
	n, _ := v.(uint64)
	return n, err
}

// Close releases the signal event; when it was the last for its signal, the
// signal gets its default behaviour back.
func (g *Signal) Close() { g.sg.Close() }

// Process is a child process's exit a coroutine can wait for (a
// reactor.Process on a pidfd). It does not reap the child (call
// os.Process.Wait or unix.Wait4 after Wait returns).
type Process struct {
	p  *reactor.Process
	ev Event
}

// NewProcess returns a Process for pid; the error wraps
// reactor.ErrNotSupported on kernels without pidfd_open.
func NewProcess(pid int) (*Process, error) {
	s := scheduler("NewProcess")
	p := &Process{}
	var err error
	if p.p, err = s.loop.NewProcess(pid, func() { p.ev.Resolve(nil) }); err != nil {
		return nil, err
	}
	return p, nil
}

// Wait suspends the coroutine until the process has exited (at once if it
// already has); ErrTimeout after timeout (none if negative), or a
// cancellation.
func (p *Process) Wait(timeout time.Duration) error {
	if p.p.Exited() {
		return nil
	}
	p.ev.Reset()
	p.p.Start()
	_, err := AwaitWith(&p.ev, nil, timeout)
	p.p.Stop()
	return err
}

// Close releases the event and its pidfd.
func (p *Process) Close() { p.p.Close() }

// ListenUDP returns a UDP socket bound to addr (port 0: any free port),
// registered with the running scheduler's reactor. Receive with ReadFrom,
// send with WriteTo; after Connect, Read and Write work on it too.
func ListenUDP(addr netip.AddrPort) (*IO, error) {
	s := scheduler("ListenUDP")
	rfd, err := s.loop.ListenUDP(addr)
	if err != nil {
		return nil, err
	}
	return wrapIO(s, rfd), nil
}

// ReadFrom receives one datagram into p and returns its size and sender,
// suspending the coroutine until one arrives. The sender is a
// unix.Sockaddr, which allocates; on a connected socket Read does not.
func (io *IO) ReadFrom(p []byte) (int, unix.Sockaddr, error) {
	for {
		n, from, err := io.fd.TryRecvfrom(p)
		if !errors.Is(err, reactor.ErrWouldBlock) {
			return n, from, err
		}
		if err := io.wait(io.rpoll, &io.rready, -1); err != nil {
			return 0, nil, err
		}
	}
}

// WriteTo sends p as one datagram to to, suspending the coroutine while
// the socket's send buffer is full.
func (io *IO) WriteTo(p []byte, to unix.Sockaddr) error {
	for {
		err := io.fd.TrySendto(p, to)
		if !errors.Is(err, reactor.ErrWouldBlock) {
			return err
		}
		if err := io.wait(io.wpoll, &io.wready, -1); err != nil {
			return err
		}
	}
}

// Connect sets a datagram socket's default peer (no packets are sent);
// Read and Write then exchange datagrams with it.
func (io *IO) Connect(addr netip.AddrPort) error { return io.fd.Connect(addr) }

// LocalAddr returns the socket's bound address (the port picked for port 0).
func (io *IO) LocalAddr() (netip.AddrPort, error) { return io.fd.LocalAddr() }

// shutdownSignals are the signals Options.ShutdownOnSignal turns into a
// graceful shutdown (the reference design's shutdown on an OS signal,
// docs/design.md §1, graceful shutdown). impl/stackless has the twin of
// this watch (its watchShutdownSignals).
var shutdownSignals = [...]unix.Signal{unix.SIGINT, unix.SIGTERM}

// watchShutdownSignals starts, for one Run, a reactor signal event per
// shutdown signal; the first delivery closes them all (a second Ctrl-C then
// has its default effect) and starts a graceful shutdown.
func (s *Scheduler) watchShutdownSignals() error {
	for _, sig := range shutdownSignals {
		ev, err := s.loop.NewSignal(sig, func() {
			s.stopShutdownSignals()
			s.shutdown(errShutdownCancel)
		})
		if err != nil {
			s.stopShutdownSignals()
			return err
		}
		ev.Start()
		s.sigWatch = append(s.sigWatch, ev)
	}
	return nil
}

// stopShutdownSignals closes the watch (at the first signal, or when Run
// ends): the signals get their default behaviour back.
func (s *Scheduler) stopShutdownSignals() {
	for i, ev := range s.sigWatch {
		ev.Close()
		s.sigWatch[i] = nil
	}
	s.sigWatch = s.sigWatch[:0]
}

// activeEvents is the number of active reactor events that can wake a
// coroutine: the shutdown-signal watch is not one of them, so it neither
// keeps an idle run alive nor hides a deadlock.
func (s *Scheduler) activeEvents() int {
	n := s.loop.Active()
	for _, ev := range s.sigWatch {
		if ev.Active() {
			n--
		}
	}
	return n
}
