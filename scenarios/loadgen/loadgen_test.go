package loadgen

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// echoServer serves on 127.0.0.1 with handle as each connection's body,
// and returns its address. It stops with the test.
func echoServer(t *testing.T, handle func(net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

func echo(c net.Conn) { io.Copy(c, c) }

func testConfig(addr netip.AddrPort) Config {
	return Config{Addr: addr, Conns: 3, Requests: 60, Rate: 20000, Size: 100, CPU: -1, Timeout: 10 * time.Second}
}

func TestRunVerifiesEveryReply(t *testing.T) { forEachEngine(t, testRunVerifiesEveryReply) }

func testRunVerifiesEveryReply(t *testing.T, engine string) {
	cfg := testConfig(echoServer(t, echo))
	cfg.Engine = engine
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != cfg.Requests || rep.Bytes != int64(cfg.Requests*cfg.Size) || len(rep.LatencyNs) != cfg.Requests {
		t.Fatalf("report %d requests, %d bytes, %d latencies; want %d, %d, %d",
			rep.Requests, rep.Bytes, len(rep.LatencyNs), cfg.Requests, cfg.Requests*cfg.Size, cfg.Requests)
	}
	for j, l := range rep.LatencyNs {
		if l <= 0 {
			t.Errorf("request %d: latency %d ns, want > 0", j, l)
		}
	}
	if rep.Engine != engine || rep.Syscalls <= 0 {
		t.Errorf("report: engine %q, %d syscalls; want %q and some", rep.Engine, rep.Syscalls, engine)
	}
	// The last request is due (Requests-1)/Rate after the first, so the
	// load cannot have ended sooner.
	if span := int64(float64(cfg.Requests-1) / cfg.Rate * 1e9); rep.ElapsedNs < span {
		t.Errorf("elapsed %d ns is shorter than the load's schedule, %d ns", rep.ElapsedNs, span)
	}
}

// TestLatencyIsFromTheIntendedSendTime checks the absence of coordinated
// omission: a server that stalls before answering anything delays every
// request that was due during the stall, and each one's latency must count
// the stall from its own intended send time.
func TestLatencyIsFromTheIntendedSendTime(t *testing.T) {
	forEachEngine(t, testLatencyIsFromTheIntendedSendTime)
}

func testLatencyIsFromTheIntendedSendTime(t *testing.T, engine string) {
	const stall = 30 * time.Millisecond
	// The stall starts when request 0 (due at the start of the schedule)
	// has arrived, so it cannot overlap the connection set-up.
	addr := echoServer(t, func(c net.Conn) {
		first := make([]byte, 1)
		if _, err := io.ReadFull(c, first); err != nil {
			return
		}
		time.Sleep(stall)
		if _, err := c.Write(first); err != nil {
			return
		}
		echo(c)
	})
	cfg := Config{Addr: addr, Conns: 1, Requests: 10, Rate: 1000, Size: 8, CPU: -1, Timeout: 10 * time.Second, Engine: engine}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for j, l := range rep.LatencyNs {
		// Request j is due at j ms; the server answers nothing before
		// the stall is over.
		if floor := stall - time.Duration(j)*time.Millisecond; time.Duration(l) < floor {
			t.Errorf("request %d: latency %v, want at least %v (stall %v minus its intended send time)", j, time.Duration(l), floor, stall)
		}
	}
}

func TestRunFailsOnACorruptReply(t *testing.T) { forEachEngine(t, testRunFailsOnACorruptReply) }

func testRunFailsOnACorruptReply(t *testing.T, engine string) {
	addr := echoServer(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		buf[n-1] ^= 1
		c.Write(buf[:n])
		echo(c)
	})
	cfg := testConfig(addr)
	cfg.Engine = engine
	_, err := Run(cfg)
	if err == nil || !strings.Contains(err.Error(), "differs at byte") {
		t.Fatalf("Run = %v, want an error naming the byte that differs", err)
	}
}

func TestRunFailsWhenTheServerCloses(t *testing.T) { forEachEngine(t, testRunFailsWhenTheServerCloses) }

func testRunFailsWhenTheServerCloses(t *testing.T, engine string) {
	addr := echoServer(t, func(c net.Conn) {})
	cfg := testConfig(addr)
	cfg.Engine = engine
	_, err := Run(cfg)
	// The server closes every connection as it accepts it. Timing alone
	// decides how the generator learns of it (ioError): an end of stream
	// (closed before any request arrived), a reset (closed with requests
	// unread), or a broken pipe (a request written after the close drew a
	// reset, then another written on the same connection, as happens when
	// a stalled generator sends several due requests in one turn). Each
	// way the run fails, promptly (not at its timeout), saying so.
	if err == nil || !strings.Contains(err.Error(), "the server closed the connection") {
		t.Fatalf("Run = %v, want an error saying the server closed the connection", err)
	}
	t.Logf("Run = %v", err)
}

// TestIOErrorNamesTheServerClosing: the errnos a server's close leaves
// (see testRunFailsWhenTheServerCloses) are reported as that close, with
// the errno kept; any other failure keeps its own words.
func TestIOErrorNamesTheServerClosing(t *testing.T) {
	c := &conn{inflight: []int{3, 6, 9}, head: 1}
	for _, errno := range []unix.Errno{unix.EPIPE, unix.ECONNRESET} {
		err := ioError(c, "write", errno)
		if !strings.Contains(err.Error(), "the server closed the connection with 2 requests unanswered") || !errors.Is(err, errno) {
			t.Errorf("ioError(write, %v) = %v, want the close named, 2 requests unanswered, and the errno kept", errno, err)
		}
	}
	if err := ioError(c, "read", unix.EBADF); strings.Contains(err.Error(), "server") || !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "read: ") {
		t.Errorf("ioError(read, EBADF) = %v, want it as read: EBADF, no server named", err)
	}
}

func TestRunIsBoundedInTime(t *testing.T) { forEachEngine(t, testRunIsBoundedInTime) }

func testRunIsBoundedInTime(t *testing.T, engine string) {
	addr := echoServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	cfg := testConfig(addr)
	cfg.Engine = engine
	cfg.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := Run(cfg)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Run = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v despite a %v timeout", d, cfg.Timeout)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	want := Config{Addr: netip.MustParseAddrPort("127.0.0.1:4242"), Conns: 64, Requests: 1234, Rate: 20000.5, Size: 64, CPU: 1, Timeout: 3 * time.Second}
	got, err := ParseArgs(Args(want), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("ParseArgs(Args(%+v)) = %+v", want, got)
	}
}

func TestParseArgsRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-addr is required"},
		{[]string{"-addr", "localhost"}, "want ip:port"},
		// Validation only: nothing is sent anywhere.
		{[]string{"-addr", "192.0.2.1:80"}, "not an IPv4 loopback"},
		{[]string{"-addr", "127.0.0.1:0"}, "no port"},
		{[]string{"-addr", "127.0.0.1:80", "-conns", "0"}, "-conns 0"},
		{[]string{"-addr", "127.0.0.1:80", "-rate", "0"}, "-rate 0"},
		{[]string{"-addr", "127.0.0.1:80", "-requests", "-1"}, "-requests -1"},
		{[]string{"-addr", "127.0.0.1:80", "-size", "0"}, "-size 0"},
		{[]string{"-addr", "127.0.0.1:80", "-timeout", "0s"}, "-timeout 0s"},
		{[]string{"-addr", "127.0.0.1:80", "-cpu", "-2"}, "-cpu -2"},
		{[]string{"-addr", "127.0.0.1:80", "extra"}, "unexpected argument"},
	} {
		_, err := ParseArgs(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestMainExitStatus(t *testing.T) {
	var out, errs strings.Builder
	if code := Main([]string{"-addr", "192.0.2.1:80"}, &out, &errs); code != 2 {
		t.Errorf("Main with a non-loopback address exited %d, want 2", code)
	}
	if !strings.Contains(errs.String(), "loopback") || out.Len() != 0 {
		t.Errorf("stdout %q, stderr %q: want only an error on stderr", out.String(), errs.String())
	}
}

func TestRequestBytesDependOnRequestAndPosition(t *testing.T) {
	same := 0
	for j := 0; j < 100; j++ {
		for i := 0; i < 64; i++ {
			if RequestByte(j, i) == RequestByte(j+1, i) {
				same++
			}
		}
	}
	// Bytes of neighbouring requests agree by chance about 1 time in 256.
	if same > 100 {
		t.Errorf("%d of 6400 bytes equal their neighbour request's: the content does not tell requests apart", same)
	}
}

func TestPinProcessAndRestore(t *testing.T) {
	server, client, ok := PinCPUs()
	if !ok {
		t.Skip("fewer than two cores allowed: nothing to pin")
	}
	if server == client {
		t.Fatalf("PinCPUs gave the same core %d twice", server)
	}
	before, err := affinities()
	if err != nil {
		t.Fatal(err)
	}
	restore, err := PinProcess(client)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := affinities()
	if err != nil {
		t.Fatal(errors.Join(err, restore()))
	}
	for tid, set := range pinned {
		if set.Count() != 1 || !set.IsSet(client) {
			t.Errorf("thread %d: affinity %v after pinning to %d", tid, set, client)
		}
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	after, err := affinities()
	if err != nil {
		t.Fatal(err)
	}
	for tid, set := range after {
		if old, ok := before[tid]; ok && old != set {
			t.Errorf("thread %d: affinity %v after restore, was %v", tid, set, old)
		}
	}
}
