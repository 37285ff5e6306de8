package reactor

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// Resolve is the DNS event (libuv's uv_getaddrinfo_t): it looks a name up
// without blocking the loop, and fires with the addresses or the error.
//
// It runs Go's own resolver (net.Resolver with PreferGo) on a pool thread,
// the way libuv runs getaddrinfo on its threadpool. Why the pool rather than
// a resolver on the loop's own UDP sockets: Go's resolver already does
// everything a real lookup needs — /etc/hosts, resolv.conf's search list and
// ndots, A and AAAA in parallel, retries, rotation, EDNS, TCP fallback on a
// truncated answer — and a second DNS client written for the loop would be
// a second implementation to get right and to keep in step, for a cost
// (one pool thread per lookup in flight, parked in Go's netpoller while it
// waits) that the dns scenario measures rather than assumes. A lookup,
// unlike other pool work, can be interrupted: Stop cancels its context, so
// its thread comes back at once.
//
// Options.DNSServer points every lookup at one server ("127.0.0.1:5353"),
// which is how tests and scenarios use a responder of their own; "" uses
// the system's configuration.
type Resolve struct {
	work   Work
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	// written by the pool thread, read after the callback
	addrs []netip.Addr
	err   error
}

// NewResolve creates an idle lookup event that runs cb when a started lookup
// completed (with addresses or an error).
func (l *Loop) NewResolve(cb func()) *Resolve {
	return &Resolve{work: Work{event: newEvent(l, cb, "Resolve")}}
}

func (l *Loop) netResolver() *net.Resolver {
	if l.resolver == nil {
		l.resolver = &net.Resolver{PreferGo: true}
		if srv := l.opts.DNSServer; srv != "" {
			l.resolver.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, srv)
			}
		}
		l.baseCtx, l.baseCancel = context.WithCancel(context.Background())
	}
	return l.resolver
}

// Start looks name up (IPv4 and IPv6 addresses). timeout > 0 bounds the
// whole lookup: when it passes, the event fires with a *net.DNSError whose
// IsTimeout is true. An unknown name fires with a *net.DNSError whose
// IsNotFound is true. Errors from Start itself are the pool's
// (ErrPoolQueueFull, ErrLoopClosed).
func (r *Resolve) Start(name string, timeout time.Duration) error {
	l := r.work.loop
	if l.closed {
		return ErrLoopClosed
	}
	if r.work.state == stateActive {
		panic("reactor: Resolve.Start on a started Resolve: it does one lookup at a time")
	}
	if r.work.busy {
		return errBusy("Resolve")
	}
	l.netResolver()
	if timeout > 0 {
		r.ctx, r.cancel = context.WithTimeout(l.baseCtx, timeout)
	} else {
		r.ctx, r.cancel = context.WithCancel(l.baseCtx)
	}
	r.name, r.addrs, r.err = name, nil, nil
	if err := r.work.Start(r); err != nil {
		r.cancel()
		return err
	}
	return nil
}

// Run performs the lookup on a pool thread (Job).
func (r *Resolve) Run() {
	r.addrs, r.err = r.work.loop.resolver.LookupNetIP(r.ctx, "ip", r.name)
	r.cancel()
}

// Result returns the addresses found, or the error.
func (r *Resolve) Result() ([]netip.Addr, error) { return r.addrs, r.err }

// Name returns the name of the last lookup.
func (r *Resolve) Name() string { return r.name }

// Stop cancels the lookup: queued, it never runs; running, its context is
// cancelled so the thread returns promptly, and the result is discarded.
func (r *Resolve) Stop() {
	if r.work.state == stateActive {
		r.cancel()
	}
	r.work.Stop()
}

// Close stops and releases the event.
func (r *Resolve) Close() { r.Stop(); r.work.release() }

// Active reports whether a lookup is started and has not completed.
func (r *Resolve) Active() bool { return r.work.Active() }

// Busy reports whether a stopped lookup is still on a pool thread.
func (r *Resolve) Busy() bool { return r.work.Busy() }

// Err is ErrCanceled when Loop.Close cancelled the queued lookup.
func (r *Resolve) Err() error { return r.work.Err() }
