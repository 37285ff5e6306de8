package loadgen

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forEachEngine runs f once per engine, as a subtest named after it. The
// io_uring one is skipped, saying why, on a kernel that refuses a ring.
func forEachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range []string{EngineEpoll, EngineIOUring} {
		t.Run(e, func(t *testing.T) {
			if e == EngineIOUring {
				r, err := newRing(2)
				if err != nil {
					t.Skipf("this kernel makes no io_uring: %v", err)
				}
				r.close()
			}
			f(t, e)
		})
	}
}

// ringAndSocketPair returns a ring of the given size and a connected
// socket pair, all closed when the test ends; it skips the test on a
// kernel that makes no ring.
func ringAndSocketPair(t *testing.T, entries uint32) (*ring, [2]int) {
	t.Helper()
	r, err := newRing(entries)
	if err != nil {
		t.Skipf("this kernel makes no io_uring: %v", err)
	}
	t.Cleanup(r.close)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return r, [2]int(fds)
}

// TestRingSendsAndReceives drives the ring alone over a socket pair: a
// SEND on one end and a RECV on the other complete with the byte counts
// and user data they were queued with, and the bytes arrive.
func TestRingSendsAndReceives(t *testing.T) {
	r, fds := ringAndSocketPair(t, 4)
	out, in := []byte("hello, ring"), make([]byte, 64)
	if err := r.queue(uringOpRecv, fds[1], in, 0, 7); err != nil {
		t.Fatal(err)
	}
	if err := r.queue(uringOpSend, fds[0], out, unix.MSG_WAITALL, 9); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]int32{}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		if err := r.enter(); err != nil {
			t.Fatal(err)
		}
		r.reap(func(e uringCQE) error { got[e.userData] = e.res; return nil })
	}
	if got[9] != int32(len(out)) || got[7] != int32(len(out)) || len(got) != 2 {
		t.Fatalf("completions %v, want user data 9 (send) and 7 (recv) with %d bytes each", got, len(out))
	}
	if string(in[:len(out)]) != string(out) {
		t.Fatalf("received %q, want %q", in[:len(out)], out)
	}
}

// TestRingRefusesWhenFull: queue says so when every slot holds an entry
// the kernel has not consumed, and accepts again after an enter.
func TestRingRefusesWhenFull(t *testing.T) {
	r, fds := ringAndSocketPair(t, 2)
	b := []byte{1}
	for i := range r.sqEntries {
		if err := r.queue(uringOpSend, fds[0], b, 0, uint64(i)); err != nil {
			t.Fatalf("entry %d of %d: %v", i, r.sqEntries, err)
		}
	}
	if err := r.queue(uringOpSend, fds[0], b, 0, 99); !errors.Is(err, errRingFull) {
		t.Fatalf("queue on a full ring = %v, want errRingFull", err)
	}
	if err := r.enter(); err != nil {
		t.Fatal(err)
	}
	if err := r.queue(uringOpSend, fds[0], b, 0, 99); err != nil {
		t.Fatalf("queue after enter = %v, want a free slot", err)
	}
}

// refuseIOUring makes io_uring_setup fail with errno for the test.
func refuseIOUring(t *testing.T, errno unix.Errno) {
	old := uringSetup
	uringSetup = func(uint32, *uringParams) (int, error) { return -1, errno }
	t.Cleanup(func() { uringSetup = old })
}

// TestRefusedRingFallsBackToEpoll: with the kernel refusing io_uring (as
// with kernel.io_uring_disabled=2, EPERM), the default engine runs on
// epoll and says why; asking for io_uring by name is an error naming it.
func TestRefusedRingFallsBackToEpoll(t *testing.T) {
	refuseIOUring(t, unix.EPERM)
	cfg := testConfig(echoServer(t, echo))
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Engine != EngineEpoll || !strings.Contains(rep.EngineNote, "io_uring refused") || !strings.Contains(rep.EngineNote, unix.EPERM.Error()) {
		t.Fatalf("engine %q, note %q; want epoll, with a note naming io_uring's refusal and its error", rep.Engine, rep.EngineNote)
	}
	if rep.Requests != cfg.Requests || rep.Bytes != int64(cfg.Requests*cfg.Size) {
		t.Fatalf("fallback run: %d requests, %d bytes; want %d, %d", rep.Requests, rep.Bytes, cfg.Requests, cfg.Requests*cfg.Size)
	}
	cfg.Engine = EngineIOUring
	if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), "io_uring_setup") {
		t.Fatalf("Run with -engine io_uring on a refusing kernel = %v, want an error naming io_uring_setup", err)
	}
}

// TestRingFallsBackThroughSetupFlags: a kernel that does not know
// DEFER_TASKRUN (EINVAL) still gets a ring, and the report names the
// flags it got.
func TestRingFallsBackThroughSetupFlags(t *testing.T) {
	if r, err := newRing(2); err != nil {
		t.Skipf("this kernel makes no io_uring: %v", err)
	} else {
		r.close()
	}
	old := uringSetup
	var asked []uint32
	uringSetup = func(n uint32, p *uringParams) (int, error) {
		asked = append(asked, p.Flags)
		if p.Flags&uringSetupDeferTaskrun != 0 {
			return -1, unix.EINVAL
		}
		return old(n, p)
	}
	t.Cleanup(func() { uringSetup = old })
	cfg := testConfig(echoServer(t, echo))
	cfg.Engine = EngineIOUring
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Engine != EngineIOUring || !strings.Contains(rep.EngineNote, "COOP_TASKRUN") || len(asked) != 2 {
		t.Fatalf("engine %q, note %q after setups with flags %#x; want io_uring on the second try, COOP_TASKRUN named", rep.Engine, rep.EngineNote, asked)
	}
}

// TestRequestsGoOutOneByOne: each request is a send of its own (on the
// ring exactly one SEND per request, whatever the timing), and the server
// reads only whole requests.
func TestRequestsGoOutOneByOne(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		const size = 64
		var mu sync.Mutex
		var sizes []int
		addr := echoServer(t, func(c net.Conn) {
			buf := make([]byte, 16*size)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				mu.Lock()
				sizes = append(sizes, n)
				mu.Unlock()
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
		})
		cfg := Config{Addr: addr, Conns: 2, Requests: 400, Rate: 20000, Size: size, CPU: -1, Timeout: 10 * time.Second, Engine: engine}
		rep, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if engine == EngineIOUring && rep.Sends != int64(cfg.Requests) {
			t.Errorf("%d SENDs for %d requests, want one each", rep.Sends, cfg.Requests)
		}
		if engine == EngineEpoll && rep.Sends < int64(cfg.Requests-rep.Queued) {
			t.Errorf("%d writes for %d requests of which %d queued behind unsent bytes, want at least one for each other", rep.Sends, cfg.Requests, rep.Queued)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, n := range sizes {
			if n%size != 0 {
				t.Errorf("the server read %d bytes: not whole requests", n)
			}
		}
	})
}

func TestThreadCountDividesTheConnections(t *testing.T) {
	for _, c := range []struct{ threads, conns, want int }{
		{0, 64, 1}, {1, 64, 1}, {2, 64, 2}, {3, 64, 2}, {4, 64, 4}, {3, 4, 2}, {5, 5, 5}, {8, 3, 3}, {4, 7, 1},
	} {
		if got := (Config{Threads: c.threads, Conns: c.conns}).threadCount(); got != c.want {
			t.Errorf("threads %d, conns %d: %d threads run, want %d", c.threads, c.conns, got, c.want)
		}
	}
	// Every request belongs to exactly one part, and it owns the request's
	// connection.
	const n, conns, stride = 103, 6, 3
	seen := make([]int, n)
	for first := range stride {
		p := part{first: first, stride: stride}
		got := 0
		for j := first; j < n; j += stride {
			seen[j]++
			got++
			if !p.owns(j % conns) {
				t.Errorf("part %d has request %d but not its connection %d", first, j, j%conns)
			}
		}
		if got != p.requests(n) {
			t.Errorf("part %d: %d requests, requests() says %d", first, got, p.requests(n))
		}
	}
	for j, k := range seen {
		if k != 1 {
			t.Errorf("request %d is in %d parts", j, k)
		}
	}
}

func TestAutoThreadsCountsConsecutiveCores(t *testing.T) {
	set := func(cpus ...int) *unix.CPUSet {
		var s unix.CPUSet
		for _, c := range cpus {
			s.Set(c)
		}
		return &s
	}
	for _, c := range []struct {
		set    *unix.CPUSet
		client int
		want   int
	}{
		{set(0, 1), 1, 1},
		{set(0, 1, 2, 3), 1, 3},
		{set(0, 1, 3), 1, 1},
		{set(0, 1, 2, 3, 4, 5, 6, 7, 8), 1, MaxAutoThreads},
		{set(0), 1, 1},
	} {
		if got := autoThreads(c.set, c.client); got != c.want {
			t.Errorf("autoThreads(%v, %d) = %d, want %d", c.set, c.client, got, c.want)
		}
	}
}

// TestThreadsShareTheLoad: with several generator threads every request is
// sent once, on its own connection, at its own time, and verified.
func TestThreadsShareTheLoad(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		cfg := Config{Addr: echoServer(t, echo), Conns: 6, Threads: 3, Requests: 600, Rate: 20000, Size: 32, CPU: -1, Timeout: 10 * time.Second, Engine: engine}
		rep, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Threads != 3 || rep.Requests != cfg.Requests || rep.Bytes != int64(cfg.Requests*cfg.Size) || rep.Engine != engine {
			t.Fatalf("report: %d threads, %d requests, %d bytes, engine %q; want 3, %d, %d, %q",
				rep.Threads, rep.Requests, rep.Bytes, rep.Engine, cfg.Requests, cfg.Requests*cfg.Size, engine)
		}
		if engine == EngineIOUring && rep.Sends != int64(cfg.Requests) {
			t.Errorf("%d SENDs for %d requests, want one each", rep.Sends, cfg.Requests)
		}
		for j, l := range rep.LatencyNs {
			if l <= 0 {
				t.Errorf("request %d: latency %d ns, want > 0 (every thread records its own)", j, l)
			}
		}
		if span := int64(float64(cfg.Requests-1) / cfg.Rate * 1e9); rep.ElapsedNs < span {
			t.Errorf("elapsed %d ns is shorter than the load's schedule, %d ns", rep.ElapsedNs, span)
		}
	})
}

// TestThreadsReportTheFailure: one thread's failure (a corrupt reply on
// one connection) ends the run with that error, not the others' "stopped".
func TestThreadsReportTheFailure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		var once sync.Once
		addr := echoServer(t, func(c net.Conn) {
			corrupt := false
			once.Do(func() { corrupt = true })
			if !corrupt {
				echo(c)
				return
			}
			buf := make([]byte, 4096)
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			buf[0] ^= 1
			c.Write(buf[:n])
			echo(c)
		})
		cfg := Config{Addr: addr, Conns: 4, Threads: 2, Requests: 400, Rate: 20000, Size: 32, CPU: -1, Timeout: 10 * time.Second, Engine: engine}
		_, err := Run(cfg)
		if err == nil || !strings.Contains(err.Error(), "differs at byte") || errors.Is(err, errStopped) {
			t.Fatalf("Run = %v, want the corrupt reply's error", err)
		}
	})
}
