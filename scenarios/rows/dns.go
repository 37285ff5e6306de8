package rows

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/scenarios"
)

// This file holds the built-in rows' DNS capability (scenarios.Resolves),
// which the dns body type-asserts. The stackful rows resolve with
// stackful.Resolver: Go's resolver on the reactor's thread pool, pointed at
// the server their scheduler's reactor was created with (dnsServer, called
// by StackfulOptions); the goroutine rows with a net.Resolver of their own,
// PreferGo and the same server, in the goroutine.

var (
	_ scenarios.Resolves = fibers{}
	_ scenarios.Resolves = (*goroutines)(nil)
)

// stackfulDNS is the server dnsServer last gave a stackful scheduler, for
// fibers.NewResolver to check against.
var stackfulDNS struct {
	sync.Mutex
	server string
}

// dnsServer is the reactor.Options.DNSServer a stackful row's scheduler
// runs cell with: the dns scenario's responder (started on first use) for
// its cells, the system's configuration ("") for every other. A responder
// that fails to start leaves "": the body reports the failure itself.
func dnsServer(cell scenarios.CellInfo) string {
	if cell.Scenario != "dns" {
		return ""
	}
	server, err := scenarios.DNSResponder()
	if err != nil {
		return ""
	}
	stackfulDNS.Lock()
	stackfulDNS.server = server
	stackfulDNS.Unlock()
	return server
}

// NewResolver returns a stackful.Resolver of the running scheduler, whose
// reactor must have been created with server.
func (fibers) NewResolver(server string) (scenarios.Resolver, error) {
	stackfulDNS.Lock()
	got := stackfulDNS.server
	stackfulDNS.Unlock()
	if got != server {
		return nil, fmt.Errorf("the stackful row's reactor resolves against %q (reactor.Options.DNSServer, set when the row creates its scheduler), not %q", got, server)
	}
	return fiberResolver{stackful.NewResolver()}, nil
}

type fiberResolver struct{ r *stackful.Resolver }

func (r fiberResolver) Lookup(name string) ([]netip.Addr, error) { return r.r.Lookup(name, -1) }
func (r fiberResolver) Close()                                   { r.r.Close() }

// NewResolver returns Go's resolver dialling server, as the reactor's does
// (reactor.Loop's netResolver: PreferGo, every query to that server).
func (*goroutines) NewResolver(server string) (scenarios.Resolver, error) {
	return goResolver{&net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}}, nil
}

type goResolver struct{ r *net.Resolver }

func (r goResolver) Lookup(name string) ([]netip.Addr, error) {
	return r.r.LookupNetIP(context.Background(), "ip", name)
}
func (goResolver) Close() {}
