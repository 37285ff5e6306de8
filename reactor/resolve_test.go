package reactor

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsResponder is a DNS server on 127.0.0.1 for the tests: it answers A
// queries for the names in zone, NXDOMAIN for other names, an empty answer
// for other types, and drops every query when silent is set.
type dnsResponder struct {
	conn    net.PacketConn
	zone    map[string]netip.Addr
	silent  atomic.Bool
	queries atomic.Int64
}

func startDNS(t *testing.T, zone map[string]netip.Addr) *dnsResponder {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	d := &dnsResponder{conn: c, zone: zone}
	done := make(chan struct{})
	go d.serve(done)
	t.Cleanup(func() { c.Close(); <-done })
	return d
}

func (d *dnsResponder) serve(done chan struct{}) {
	defer close(done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		d.queries.Add(1)
		if d.silent.Load() {
			continue
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		addr, known := d.zone[q.Name.String()]
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true}
		if !known {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, rh)
		b.EnableCompression()
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		if known && q.Type == dnsmessage.TypeA {
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr.As4()})
		}
		msg, err := b.Finish()
		if err == nil {
			d.conn.WriteTo(msg, from)
		}
	}
}

func TestResolve(t *testing.T) {
	d := startDNS(t, map[string]netip.Addr{"svc.corobench.test.": netip.MustParseAddr("10.1.2.3")})
	l := newLoop(t, Options{DNSServer: d.conn.LocalAddr().String()})
	fired := 0
	r := l.NewResolve(func() { fired++ })
	if err := r.Start("svc.corobench.test.", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !r.Active() || l.Active() != 1 {
		t.Fatal("Resolve not active after Start")
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	addrs, err := r.Result()
	if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("10.1.2.3") {
		t.Fatalf("lookup: %v %v", addrs, err)
	}
	// Unknown name: NXDOMAIN from our server.
	if err := r.Start("nope.corobench.test.", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 2 })
	_, err = r.Result()
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("unknown name: %v, want a not-found DNSError", err)
	}
	if st := l.Stats(); st.WorkCompleted != 2 || d.queries.Load() == 0 {
		t.Fatalf("stats %+v, %d queries", st, d.queries.Load())
	}
}

// TestResolveTimeoutCancelShutdown uses a server that never answers.
func TestResolveTimeoutCancelShutdown(t *testing.T) {
	d := startDNS(t, nil)
	d.silent.Store(true)
	l, err := NewWithOptions(Options{DNSServer: d.conn.LocalAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fired := 0
	r := l.NewResolve(func() { fired++ })
	if err := r.Start("slow.corobench.test.", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	tickUntil(t, l, func() bool { return fired == 1 })
	_, err = r.Result()
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsTimeout {
		t.Fatalf("silent server: %v, want a timeout DNSError", err)
	}
	// Cancel a lookup in flight: the thread comes back long before the
	// hour-long timeout, and the event does not fire.
	for d.queries.Load() == 0 {
		osYield()
	}
	q := d.queries.Load()
	if err := r.Start("slow.corobench.test.", time.Hour); err != nil {
		t.Fatal(err)
	}
	for d.queries.Load() == q {
		osYield() // the lookup is on a thread, waiting
	}
	r.Stop()
	tickUntil(t, l, func() bool { return !r.Busy() })
	if fired != 1 || l.Stats().WorkDiscarded != 1 {
		t.Fatalf("fired %d, discarded %d after Stop", fired, l.Stats().WorkDiscarded)
	}
	// Shutdown with a lookup in flight: Close cancels it rather than wait
	// for its hour.
	r2 := l.NewResolve(func() { fired++ })
	q = d.queries.Load()
	if err := r2.Start("slow.corobench.test.", time.Hour); err != nil {
		t.Fatal(err)
	}
	for d.queries.Load() == q {
		osYield()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fired != 1 || r2.Active() {
		t.Fatalf("after Close: fired %d, active %v", fired, r2.Active())
	}
}
