package loadgen

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Generator threads. One generator thread offers what one core can send
// and receive; on a machine with more cores than the server's and one, the
// generator can run several (Config.Threads), each a whole generator for a
// share of the connections: thread t of T owns connections t, t+T, …, so
// that request j (due at j/rate on connection j mod c) is thread t's when
// j ≡ t (mod T) (T divides c). The threads share the schedule's start (t0)
// and nothing else: each has its own ring or epoll instance, its own
// buffers and its own part of the Report, merged at the end, and writes
// only its own requests' latencies. The server still sees the same
// requests at the same times; only the number of cores offering them
// changes. With -cpu C, thread t is pinned to core C+t.

// part is one thread's share of a run.
type part struct {
	first, stride int          // its requests: first, first+stride, …
	t0            time.Time    // the schedule's start, common to every thread
	stop          *atomic.Bool // set when a thread failed: the others give up
}

// requests is how many of n requests are the part's.
func (p part) requests(n int) int {
	if p.first >= n {
		return 0
	}
	return (n-p.first-1)/p.stride + 1
}

// owns says whether connection k is the part's.
func (p part) owns(k int) bool { return k%p.stride == p.first }

// errStopped is what a part's loop returns when another part failed.
var errStopped = errors.New("stopped: another generator thread failed")

// stopped is errStopped once another part failed, else nil.
func (p part) stopped() error {
	if p.stop != nil && p.stop.Load() {
		return errStopped
	}
	return nil
}

// threadCount is how many threads cfg runs: the largest divisor of Conns
// not above Threads (at least one), so that every thread owns as many
// connections as every other.
func (cfg Config) threadCount() int {
	for t := min(max(cfg.Threads, 1), cfg.Conns); t > 1; t-- {
		if cfg.Conns%t == 0 {
			return t
		}
	}
	return 1
}

// thread is one generator thread's run: its engine, its part, its report.
type thread struct {
	part
	ring *ring
	epfd int // its own epoll instance when it has no ring, else -1
	rep  Report
}

// setup gives th its engine on the calling thread (which must be locked:
// a ring belongs to the thread that made it): a ring, or an epoll instance
// with the thread's connections, per engine (io_uring or epoll, decided).
func (th *thread) setup(engine string, conns []*conn) error {
	th.epfd = -1
	if engine == EngineIOUring {
		r, err := newRing(uint32(2 * len(conns) / th.stride))
		if err != nil {
			return err
		}
		th.ring = r
		th.rep.Engine, th.rep.EngineNote = EngineIOUring, "ring setup flags "+r.flags
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	th.epfd = epfd
	for k, c := range conns {
		if !th.owns(k) {
			continue
		}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(k)}); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	th.rep.Engine = EngineEpoll
	return nil
}

// load runs th's part of the schedule and releases its engine.
func (th *thread) load(cfg Config, conns []*conn, deadline time.Time) error {
	if th.ring != nil {
		return loadRing(cfg, conns, th.ring, th.part, deadline, &th.rep)
	}
	defer unix.Close(th.epfd)
	return load(cfg, conns, th.epfd, th.part, deadline, &th.rep)
}

// runThreads runs the load on cfg.threadCount() threads: thread 0 on the
// calling goroutine (which decides the engine: -engine auto falls back to
// epoll when its ring is refused), the others on goroutines locked to
// threads of their own, pinned to cores cfg.CPU+t when cfg.CPU >= 0. Every
// thread sets up before the schedule starts.
func runThreads(cfg Config, conns []*conn, deadline time.Time, rep *Report, onStart func()) error {
	n := cfg.threadCount()
	var stop atomic.Bool
	ths := make([]*thread, n)
	for t := range ths {
		ths[t] = &thread{part: part{first: t, stride: n, stop: &stop}, rep: Report{LatencyNs: rep.LatencyNs}}
	}
	// Thread 0 is this one; a ring's single issuer is the thread that made it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	engine := cmp.Or(cfg.Engine, EngineAuto)
	note := ""
	if engine == EngineAuto {
		engine = EngineIOUring
	}
	if err := ths[0].setup(engine, conns); err != nil {
		ths[0].release()
		if cfg.Engine == EngineIOUring || engine == EngineEpoll {
			return err
		}
		note = fmt.Sprintf("io_uring refused (%v), so epoll", err)
		engine = EngineEpoll
		if err := ths[0].setup(engine, conns); err != nil {
			ths[0].release()
			return err
		}
		ths[0].rep.EngineNote = note
	}
	// The others: set up, say so, wait for the start.
	start := make(chan time.Time)
	ready := make(chan error, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for t := 1; t < n; t++ {
		wg.Add(1)
		go func(th *thread) {
			defer wg.Done()
			// The thread is the generator's alone and ends with it (no
			// unlock), so its pinning does not leak into the runtime.
			runtime.LockOSThread()
			if cfg.CPU >= 0 {
				var one unix.CPUSet
				one.Set(cfg.CPU + th.first)
				if err := unix.SchedSetaffinity(0, &one); err != nil {
					ready <- fmt.Errorf("pinning generator thread %d to cpu %d: %w", th.first, cfg.CPU+th.first, err)
					return
				}
			}
			if err := th.setup(engine, conns); err != nil {
				th.release()
				ready <- fmt.Errorf("generator thread %d: %w", th.first, err)
				return
			}
			ready <- nil
			t0, ok := <-start
			if !ok {
				th.release()
				return
			}
			th.t0 = t0
			if err := th.load(cfg, conns, deadline); err != nil {
				errs[th.first] = err
				stop.Store(true)
			}
		}(ths[t])
	}
	var setupErr error
	for t := 1; t < n; t++ {
		setupErr = errors.Join(setupErr, <-ready)
	}
	if setupErr != nil {
		close(start)
		wg.Wait()
		ths[0].release()
		return setupErr
	}
	if onStart != nil {
		onStart()
	}
	t0 := time.Now()
	for t := 1; t < n; t++ {
		start <- t0
	}
	ths[0].t0 = t0
	if err := ths[0].load(cfg, conns, deadline); err != nil {
		errs[0] = err
		stop.Store(true)
	}
	wg.Wait()
	// The first failure, not the others' "stopped".
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStopped) {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rep.Threads = n
	rep.Engine, rep.EngineNote = ths[0].rep.Engine, ths[0].rep.EngineNote
	for _, th := range ths {
		r := &th.rep
		rep.Requests += r.Requests
		rep.Bytes += r.Bytes
		rep.ElapsedNs = max(rep.ElapsedNs, r.ElapsedNs)
		rep.MaxSendLagNs = max(rep.MaxSendLagNs, r.MaxSendLagNs)
		rep.Syscalls += r.Syscalls
		rep.Queued += r.Queued
		rep.Sends += r.Sends
		rep.IdleNs += r.IdleNs
	}
	return nil
}

// release frees a thread's engine when its load never ran.
func (th *thread) release() {
	if th.ring != nil {
		th.ring.close()
	}
	if th.epfd >= 0 {
		unix.Close(th.epfd)
	}
}

// MaxAutoThreads caps AutoThreads: four cores offering load to one
// server core is headroom enough, and more would only spin idle.
const MaxAutoThreads = 4

// AutoThreads is the number of generator threads for a generator pinned to
// core client (as PinCPUs picks it): one per core client, client+1, … that
// the calling thread may run on, consecutively (thread t runs on client+t),
// at most MaxAutoThreads; 1 on a 2-core machine, where the server has the
// other core.
func AutoThreads(client int) int {
	var set unix.CPUSet
	if client < 0 || unix.SchedGetaffinity(0, &set) != nil {
		return 1
	}
	return autoThreads(&set, client)
}

func autoThreads(set *unix.CPUSet, client int) int {
	n := 0
	for n < MaxAutoThreads && set.IsSet(client+n) {
		n++
	}
	return max(n, 1)
}
