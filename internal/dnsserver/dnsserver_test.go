package dnsserver

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the responder process (Start's child).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "dns-responder" {
		os.Exit(Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func resolverFor(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

func checkZone(t *testing.T, addr string) {
	t.Helper()
	r := resolverFor(addr)
	ctx := context.Background()
	for _, i := range []int{0, 1, 255, 256, Names - 1} {
		got, err := r.LookupNetIP(ctx, "ip", Name(i))
		if err != nil || len(got) != 1 || got[0] != Addr(i) {
			t.Errorf("%s: %v %v, want [%v]", Name(i), got, err, Addr(i))
		}
	}
	for _, name := range []string{"host-65536." + Domain, "host-01." + Domain, "other." + Domain, "host-1.example."} {
		_, err := r.LookupNetIP(ctx, "ip", name)
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := r.LookupNetIP(tctx, "ip", Silent+"."+Domain)
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsTimeout {
		t.Errorf("silent name: %v, want a timeout", err)
	}
}

func TestZoneInProcess(t *testing.T) {
	s, err := Listen()
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	checkZone(t, s.Addr())
	if s.Queries() == 0 {
		t.Error("no queries counted")
	}
}

func TestAddrsAreDistinct(t *testing.T) {
	seen := map[[4]byte]bool{}
	for i := 0; i < Names; i++ {
		a := Addr(i).As4()
		if seen[a] {
			t.Fatalf("Addr(%d) = %v repeats", i, Addr(i))
		}
		seen[a] = true
		if j, ok := lookup(Name(i)); !ok || j != i {
			t.Fatalf("lookup(Name(%d)) = %d, %v", i, j, ok)
		}
	}
}

func TestProcess(t *testing.T) {
	p, err := Start([]string{os.Args[0], "dns-responder"})
	if err != nil {
		t.Fatal(err)
	}
	checkZone(t, p.Addr())
	if err := p.Close(); err != nil {
		t.Errorf("responder exit: %v", err)
	}
}

func TestStartNamesAFailedResponder(t *testing.T) {
	_, err := Start([]string{os.Args[0], "dns-responder", "stray"})
	if err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("Start with a bad argument = %v, want the child's complaint", err)
	}
	_, err = Start([]string{"/nonexistent/corobench-responder"})
	if err == nil || !strings.Contains(err.Error(), "starting the responder") {
		t.Errorf("Start of a missing binary = %v", err)
	}
}

// TestStartAwayPlacesTheResponderElsewhere: started from a thread pinned to
// one CPU, the responder runs on the others.
func TestStartAwayPlacesTheResponderElsewhere(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || all.Count() < 2 {
		t.Skipf("needs two CPUs (%d, %v)", all.Count(), err)
	}
	first := -1
	for c := 0; first < 0; c++ {
		if all.IsSet(c) {
			first = c
		}
	}
	var p *Process
	var err error
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var one unix.CPUSet
		one.Set(first)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			t.Skip(err)
		}
		defer unix.SchedSetaffinity(0, &all)
		p, err = Start([]string{os.Args[0], "dns-responder"})
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(p.cmd.Process.Pid, &got); err != nil {
		t.Fatal(err)
	}
	if got.IsSet(first) || got.Count() != all.Count()-1 {
		t.Errorf("responder on %d CPUs (cpu%d: %v), want every CPU but cpu%d", got.Count(), first, got.IsSet(first), first)
	}
}
