package stackful

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/corobench/corobench/impl/stackful/stackpool"
)

// suspendAll runs n coroutines that all wait on one event at once (n+1
// fibers in use, main included), then releases them.
func suspendAll(s *Scheduler, n int) (inUse int, err error) {
	err = s.Run(func() {
		ev := NewEvent()
		for i := 0; i < n; i++ {
			Go(func() { Await(ev) })
		}
		Yield() // every coroutine starts and suspends
		inUse = s.PoolStats().InUse
		ev.Resolve(nil)
	})
	return inUse, err
}

// TestPoolReuseAndTrim: a second run reuses the first run's stacks (hits, no
// new slab); trimming keeps the window's peak, then releases the rest.
func TestPoolReuseAndTrim(t *testing.T) {
	needAsm(t)
	const n = 100
	s := newSched(t, Asm, func(o *Options) { o.Stacks.DecayOps = -1 }) // trim only when asked
	if inUse, err := suspendAll(s, n); err != nil || inUse != n+1 {
		t.Fatalf("first run: %v, %d stacks in use at the peak, want %d", err, inUse, n+1)
	}
	first := s.PoolStats()
	if _, err := suspendAll(s, n); err != nil {
		t.Fatal(err)
	}
	second := s.PoolStats()
	if hits := second.Hits - first.Hits; hits != n+1 || second.Misses != first.Misses || second.SlabsMapped != first.SlabsMapped {
		t.Errorf("second run: %d hits (want %d), %d new misses and %d new slabs (want 0)",
			hits, n+1, second.Misses-first.Misses, second.SlabsMapped-first.SlabsMapped)
	}
	if released := s.TrimStacks(); released != 0 {
		t.Errorf("first trim released %d stacks; the window's peak was %d, so it should keep them all", released, n+1)
	}
	if released := s.TrimStacks(); released != n+1 {
		t.Errorf("second trim released %d stacks, want all %d (nothing used in the window)", released, n+1)
	}
	if st := s.PoolStats(); st.Trims == 0 || st.StacksReleased != n+1 || st.Warm != 0 {
		t.Errorf("after trimming: Trims %d, StacksReleased %d (want %d), Warm %d (want 0)", st.Trims, st.StacksReleased, n+1, st.Warm)
	}
	// Trimmed stacks are misses when used again.
	before := s.PoolStats()
	if _, err := suspendAll(s, n); err != nil {
		t.Fatal(err)
	}
	if st := s.PoolStats(); st.Misses-before.Misses != n+1 {
		t.Errorf("after a trim: %d misses, want %d", st.Misses-before.Misses, n+1)
	}
}

// TestMillionSuspendedFibers: a million coroutines suspended at once fit
// (slab allocation stays far under vm.max_map_count) and their memory is
// given back by trimming. About 4 GiB of stack pages are touched (a peak
// RSS of 4.9 GB), so it runs only when asked: COROBENCH_BIG_TESTS=1,
// without -short and -race.
func TestMillionSuspendedFibers(t *testing.T) {
	needAsm(t)
	if testing.Short() || raceEnabled || os.Getenv("COROBENCH_BIG_TESTS") != "1" {
		t.Skip("touches ~4.5 GiB and takes ~20 s; runs with COROBENCH_BIG_TESTS=1, without -short and -race")
	}
	const n = 1_000_000
	s := newSched(t, Asm, func(o *Options) {
		o.Stacks = stackpool.Config{StackSize: 8 << 10, Guard: stackpool.GuardOff, DecayOps: -1}
	})
	rssBefore := rssBytes()
	var peak stackpool.Stats
	var rssPeak int64
	err := s.Run(func() {
		ev := NewEvent()
		for i := 0; i < n; i++ {
			Go(func() { Await(ev) })
		}
		Yield()
		peak = s.PoolStats()
		rssPeak = rssBytes()
		ev.Resolve(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if peak.InUse != n+1 || peak.Maps >= peak.MapLimit/2 {
		t.Fatalf("at the peak: %d stacks in use (want %d) in %d mappings (limit %d)", peak.InUse, n+1, peak.Maps, peak.MapLimit)
	}
	s.TrimStacks()
	s.TrimStacks()
	after := s.PoolStats()
	rssAfter := rssBytes()
	t.Logf("peak: %d fibers in %d slabs (%d mappings, limit %d); RSS %d MiB before, %d MiB at the peak (%.1f KiB per fiber incl. its Coroutine), %d MiB after trimming",
		peak.InUse, peak.Slabs, peak.Maps, peak.MapLimit, rssBefore>>20, rssPeak>>20, float64(rssPeak-rssBefore)/n/1024, rssAfter>>20)
	if after.InUse != 0 || after.Slabs != 0 || after.StacksReleased < n+1 {
		t.Errorf("after trimming: %d in use, %d slabs still mapped, %d stacks released; want 0, 0, >= %d", after.InUse, after.Slabs, after.StacksReleased, n+1)
	}
}

// rssBytes returns the process's resident set size (0 if unknown).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestStackExhaustionFailsRun: when the pool cannot map a stack (guard pages
// forced on under a tiny map budget) the coroutine cannot start: the switch
// falls back to the scheduler, Run fails naming the coroutine and the
// pool's error, and the coroutines already running are cancelled.
func TestStackExhaustionFailsRun(t *testing.T) {
	needAsm(t)
	// The pool plans against the limit less the process's current mappings
	// and a reserve of 256: leave it room for about 20 guarded stacks.
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	limit := strings.Count(string(maps), "\n") + 256 + 60
	s := newSched(t, Asm, func(o *Options) {
		o.Stacks = stackpool.Config{Guard: stackpool.GuardOn, MaxMapCount: limit, SlabStacks: 1}
	})
	started, cancelled := 0, 0
	err = s.Run(func() {
		ev := NewEvent()
		for i := 0; i < 200; i++ {
			Go(func() {
				started++
				if _, err := Await(ev); errors.Is(err, ErrCancelled) {
					cancelled++
				}
			})
		}
		Await(ev)
	})
	var mle *stackpool.MapLimitError
	if !errors.As(err, &mle) || !strings.Contains(err.Error(), "starting coroutine #") {
		t.Fatalf("Run = %v, want an error starting a coroutine wrapping *stackpool.MapLimitError", err)
	}
	if started == 0 || started >= 200 || cancelled != started {
		t.Errorf("%d coroutines started, %d of them cancelled; want some but not all started, all of those cancelled", started, cancelled)
	}
	if st := s.PoolStats(); st.InUse != 0 {
		t.Errorf("%d stacks still in use after Run", st.InUse)
	}
	t.Logf("%d of 200 coroutines started before the pool ran out; Run: %v", started, err)
}

// TestLifecycleSkipsThePool: coroutines spawned and finished one at a time
// reuse the last finished one's stack without a pool operation, and Run
// gives that stack back when it returns.
func TestLifecycleSkipsThePool(t *testing.T) {
	needAsm(t)
	s := newSched(t, Asm)
	const n = 1000
	var mid stackpool.Stats
	err := s.Run(func() {
		done := NewEvent()
		body := func() { done.Resolve(nil) }
		for i := 0; i < n; i++ {
			Go(body)
			Await(done)
			done.Reset()
		}
		mid = s.PoolStats()
	})
	if err != nil {
		t.Fatal(err)
	}
	// main's stack and the first coroutine's: two Gets for the whole run.
	if gets := mid.Hits + mid.Misses; gets != 2 || mid.InUse != 2 {
		t.Errorf("%d lifecycles made %d pool Gets with %d stacks in use, want 2 and 2 (main's, and one kept for the next start)", n, gets, mid.InUse)
	}
	if st := s.PoolStats(); st.InUse != 0 {
		t.Errorf("after Run: %d stacks in use, want 0 (the kept one given back)", st.InUse)
	}
}

// TestFinishedContextsBeyondTheSpareGoBack: when many coroutines finish
// one after another with no start in between, the first finished context
// becomes the spare (contextMain) and every later one goes back to the pool
// as it dies (asmBackend.putDying), none leaked or lost.
func TestFinishedContextsBeyondTheSpareGoBack(t *testing.T) {
	needAsm(t)
	s := newSched(t, Asm)
	const n = 50
	var mid stackpool.Stats
	err := s.Run(func() {
		done := NewEvent()
		finished := 0
		body := func() {
			_ = Yield() // all n alive at once, each on its own stack
			if finished++; finished == n {
				done.Resolve(nil)
			}
		}
		for i := 0; i < n; i++ {
			Go(body)
		}
		Await(done)
		mid = s.PoolStats()
	})
	if err != nil {
		t.Fatal(err)
	}
	if mid.InUse != 2 {
		t.Errorf("after %d coroutines finished: %d stacks in use, want 2 (main's and the spare)", n, mid.InUse)
	}
	if st := s.PoolStats(); st.InUse != 0 {
		t.Errorf("after Run: %d stacks in use, want 0", st.InUse)
	}
}

// TestColdStartFaultsOnce: a coroutine started on a never-touched stack
// faults its stack's top page in once (its context, which lives there, is
// first written, not read: a read would map the zero page and the first
// write fault again). 1000 coroutines of a fresh scheduler, each on its own
// fresh stack, with a small allowance for the records' heap pages.
func TestColdStartFaultsOnce(t *testing.T) {
	needAsm(t)
	if raceEnabled {
		t.Skip("the race detector's shadow memory of the stack tops faults too (about one page more per start)")
	}
	const n = 1000
	s := newSched(t, Asm)
	var f0, f1 int64
	err := s.Run(func() {
		Yield()
		f0 = minorFaults()
		for i := 0; i < n; i++ {
			Go(func() { Yield() })
		}
		Yield() // all n start (n fresh stacks) and yield
		f1 = minorFaults()
	})
	if err != nil {
		t.Fatal(err)
	}
	const allowed = 1.5
	if per := float64(f1-f0) / n; per > allowed {
		t.Errorf("%.2f minor faults per cold coroutine start, want at most %.1f (one stack page each)", per, allowed)
	}
}

// minorFaults returns the process's minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// TestPooledStacksRestarted: a stack given back by a finished fiber keeps
// that fiber's context in its top, and the next start on it restarts that
// context instead of making a new one (newPooledContext); a stack whose
// memory was trimmed (zeroed) or that came back cleared (the spare at the
// end of Run) gets a new context. Either way every coroutine runs its
// body, its deferred calls and a recovered panic on a fiber of its own.
func TestPooledStacksRestarted(t *testing.T) {
	needAsm(t)
	const n = 64
	s := newSched(t, Asm, func(o *Options) { o.Stacks.DecayOps = -1 }) // trim only when asked
	round := func(name string) {
		t.Helper()
		recovered := 0
		tops := map[uintptr]bool{}
		err := s.Run(func() {
			for i := 0; i < n; i++ {
				Go(func() {
					defer func() {
						if recover() == "unwind" {
							recovered++
						}
					}()
					co := Current().r
					tops[co.stackLo+co.stackSpan] = true
					_ = Yield() // all n alive at once, each on a stack of its own
					panic("unwind")
				})
			}
		})
		if err != nil || recovered != n || len(tops) != n {
			t.Fatalf("%s: Run = %v, %d of %d panics recovered, %d distinct stacks", name, err, recovered, n, len(tops))
		}
	}
	round("first run (fresh stacks)")
	round("second run (stacks given back by finished fibers)")
	s.TrimStacks()
	if released := s.TrimStacks(); released == 0 {
		t.Fatal("the second trim released no stack")
	}
	round("after a trim (zeroed stacks)")
}
