package scenarios

import "net/netip"

// Resolves is the capability of the dns scenario: to look host names up
// against a given DNS server, suspending only the caller. The stackful rows
// use the reactor's Resolve (Go's resolver run on the reactor's thread
// pool, the server given to the scheduler's reactor as
// reactor.Options.DNSServer when the row creates it); the goroutine rows
// use net.Resolver with PreferGo, dialling the same server, in the
// goroutine.
type Resolves interface {
	// NewResolver returns a resolver that asks server ("127.0.0.1:port")
	// over UDP. A row whose runtime was configured with another server
	// fails here, naming both.
	NewResolver(server string) (Resolver, error)
}

// Resolver looks names up; one coroutine uses it at a time.
type Resolver interface {
	// Lookup resolves name (IPv4 and IPv6: Go's "ip" network) without a
	// timeout of its own beyond the resolver's.
	Lookup(name string) ([]netip.Addr, error)
	Close()
}
