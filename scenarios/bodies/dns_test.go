package bodies

import (
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/internal/dnsserver"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// TestDNSOnEveryRowWithPoolPs runs the dns scenario on every row, the
// pool-bound ones with Ps of their own for the pool's threads (1 +
// reactor.DefaultPoolThreads, what they get once the harness gives pool
// cells their own Ps): every lookup must come back with its address
// (Measure checks the checksum).
func TestDNSOnEveryRowWithPoolPs(t *testing.T) {
	for _, row := range scenarios.Rows {
		for _, c := range []string{"1", "16"} {
			t.Run(string(row)+"/c="+c, func(t *testing.T) {
				withRowGOMAXPROCS(t, row)
				if row.GOMAXPROCS() == 1 && row != scenarios.GoroutineSingle {
					runtime.GOMAXPROCS(1 + reactor.DefaultPoolThreads)
				}
				sm, err := driver.Measure(DNS, row, map[string]string{"c": c}, time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if sm.Values[0] <= 0 || sm.Values[1] <= 0 {
					t.Errorf("figures %v", sm.Values)
				}
			})
		}
	}
}

// TestDNSPoolRowsRefuseOneP: at GOMAXPROCS=1 a pool-bound row says why it
// is not measured, as offload and fileio do.
func TestDNSPoolRowsRefuseOneP(t *testing.T) {
	for _, row := range []scenarios.Row{scenarios.StackfulCoro, scenarios.Stackless} {
		withRowGOMAXPROCS(t, row)
		_, err := driver.Measure(DNS, row, map[string]string{"c": "1"}, time.Millisecond)
		if reason, ok := scenarios.IsNotSupported(err); !ok || !strings.Contains(reason, "GOMAXPROCS=1") {
			t.Errorf("%s at GOMAXPROCS=1: %v, want not supported naming GOMAXPROCS=1", row, err)
		}
	}
}

// TestDNSCheckRejectsWrongAnswers: an error, no address, two addresses or
// another name's address fail or change the checksum.
func TestDNSCheckRejectsWrongAnswers(t *testing.T) {
	good := dnsserver.Addr(7)
	if v, err := dnsCheck(7, []netip.Addr{good}, nil); err != nil || v != dnsMix(7, good) {
		t.Fatalf("good answer: %v %v", v, err)
	}
	for _, bad := range [][]netip.Addr{nil, {good, good}, {netip.MustParseAddr("::1")}} {
		if _, err := dnsCheck(7, bad, nil); err == nil {
			t.Errorf("answer %v accepted", bad)
		}
	}
	if _, err := dnsCheck(7, nil, errors.New("boom")); err == nil || !strings.Contains(err.Error(), dnsserver.Name(7)) {
		t.Errorf("lookup error: %v, want it wrapped naming the name", err)
	}
	if dnsMix(7, dnsserver.Addr(8)) == dnsMix(7, good) {
		t.Error("another name's address gives the same checksum")
	}
}

// TestDNSResponderIsAProcess: the responder the scenario uses is the helper
// process and answers the zone.
func TestDNSResponderIsAProcess(t *testing.T) {
	addr, err := scenarios.DNSResponder()
	if err != nil {
		t.Fatal(err)
	}
	again, err := scenarios.DNSResponder()
	if err != nil || again != addr {
		t.Fatalf("second call: %q %v, want the same responder %q", again, err, addr)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("responder at %q, want 127.0.0.1", addr)
	}
}
