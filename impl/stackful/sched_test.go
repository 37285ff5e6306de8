package stackful

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/internal/selfexec"
)

// newSched returns a scheduler on d's backend, closed at the end of the test.
func newSched(t testing.TB, b Backend, opts ...func(*Options)) *Scheduler {
	t.Helper()
	o := Options{Backend: b}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachBackend runs f as a subtest per available backend.
func eachBackend(t *testing.T, f func(t *testing.T, b Backend)) {
	for _, d := range backends(t) {
		t.Run(d.backend.String(), func(t *testing.T) { f(t, d.backend) })
	}
}

// pingPong runs n round trips between main and a partner through two
// reusable events and returns how many handoffs the partner saw.
func pingPong(s *Scheduler, n int) (int, error) {
	ping, pong := NewEvent(), NewEvent()
	seen := 0
	err := s.Run(func() {
		Go(func() {
			for i := 0; i < n; i++ {
				if _, err := Await(ping); err != nil {
					return
				}
				ping.Reset()
				seen++
				pong.Resolve(nil)
			}
		})
		for i := 0; i < n; i++ {
			ping.Resolve(nil)
			if _, err := Await(pong); err != nil {
				return
			}
			pong.Reset()
		}
	})
	return seen, err
}

// mallocs returns the number of heap allocations f makes.
func mallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// TestHotPathsDoNotAllocate: the allocations of a run do not grow with the
// number of yields, awaits, resolves, timed waits and switches in it.
func TestHotPathsDoNotAllocate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		loops := map[string]func(n int) error{
			"pingpong": func(n int) error { _, err := pingPong(s, n); return err },
			"yield": func(n int) error {
				return s.Run(func() {
					Go(func() {
						for i := 0; i < n; i++ {
							Yield()
						}
					})
					for i := 0; i < n; i++ {
						Yield()
					}
				})
			},
			"sleepers": func(n int) error {
				// n coroutines, each one timed wait through the timer
				// node inline in its record: no timer object, no closure.
				return s.Run(func() {
					body := func() { Sleep(time.Microsecond) }
					for i := 0; i < n; i++ {
						Go(body)
					}
				})
			},
			"await-timeout": func(n int) error {
				return s.Run(func() {
					ev := NewEvent()
					ev.Resolve(1)
					for i := 0; i < n; i++ {
						AwaitTimeout(ev, time.Hour) // fast path
						ev.Reset()
						Go(func() { ev.Resolve(nil) })
						AwaitTimeout(ev, time.Hour) // suspends, timer started and stopped
						ev.Resolve(1)
					}
				})
			},
		}
		for name, loop := range loops {
			// Warm up: pools, queues and the reactor's timer heap reach
			// their size; then n and 2n iterations must allocate alike.
			if err := loop(1000); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Allocations by the runtime itself (other goroutines count in
			// MemStats too) only add: take the least of three tries.
			var err error
			small, large := ^uint64(0), ^uint64(0)
			for try := 0; try < 3; try++ {
				small = min(small, mallocs(func() { err = errors.Join(err, loop(1000)) }))
				large = min(large, mallocs(func() { err = errors.Join(err, loop(2000)) }))
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// "await-timeout" and "sleepers" spawn a coroutine per
			// iteration (its record is reused: TestWarmSpawnDoesNotAllocate;
			// await-timeout's body is a closure, one allocation): that is
			// spawn, not the hot path, so allow exactly those; a timer
			// object or closure per sleep would exceed it.
			allowed := uint64(0)
			switch name {
			case "await-timeout":
				allowed = 1000
			case "sleepers":
				// Plus 10%: coro's goroutines make the runtime allocate
				// now and then (1% was exceeded by 14 in one run of
				// three, without the race detector); a timer object or
				// closure per sleep would be 1000 or more.
				allowed = spawnMallocs(t, s, 1000) + 100
			}
			if large > small+allowed {
				t.Errorf("%s: 1000 more iterations made %d more allocations (allowed %d)", name, large-small, allowed)
			}
		}
	})
}

// spawnMallocs returns how many more allocations spawning 2n coroutines
// that each suspend once (a Yield, no timer) makes than spawning n (least
// of three tries): the allowance of a loop that spawns one coroutine per
// iteration that suspends (coro starts a goroutine only for one that does).
func spawnMallocs(t *testing.T, s *Scheduler, n int) uint64 {
	t.Helper()
	spawn := func(n int) error {
		return s.Run(func() {
			body := func() { Yield() }
			for i := 0; i < n; i++ {
				Go(body)
			}
		})
	}
	var err error
	small, large := ^uint64(0), ^uint64(0)
	for try := 0; try < 3; try++ {
		small = min(small, mallocs(func() { err = errors.Join(err, spawn(n)) }))
		large = min(large, mallocs(func() { err = errors.Join(err, spawn(2*n)) }))
	}
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	return large - small
}

// TestTakeover: a finished coroutine's context runs the next unstarted one
// with no switch, so K short coroutines cost the same switches as one.
func TestTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		const k = 10
		s := newSched(t, b)
		ran := 0
		err := s.Run(func() {
			for i := 0; i < k; i++ {
				Go(func() { ran++ })
			}
			Yield()
		})
		if err != nil || ran != k {
			t.Fatalf("Run = %v, %d of %d coroutines ran", err, ran, k)
		}
		st := s.Stats()
		if st.Takeovers != k-1 || st.ContextsCreated != 2 {
			t.Errorf("Takeovers = %d, ContextsCreated = %d; want %d and 2 (main, and one context for all %d)", st.Takeovers, st.ContextsCreated, k-1, k)
		}
		// Run start, main→first, last→main, main's end: 4 switches; the
		// coro backend doubles the two between coroutines (via the scheduler).
		want, wantSched := uint64(4), uint64(2)
		if b == Coro {
			want, wantSched = 6, 6
		}
		if st.Switches != want || st.SchedulerSwitches != wantSched {
			t.Errorf("Switches = %d (%d via scheduler), want %d (%d)", st.Switches, st.SchedulerSwitches, want, wantSched)
		}
	})
}

// TestPanicFailsRun: a panic in a coroutine becomes Run's *PanicError naming
// it, and the others are cancelled with their defers run.
func TestPanicFailsRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		cleaned := false
		err := s.Run(func() {
			GoWith("sleeper", Normal, func() {
				defer func() { cleaned = true }()
				Sleep(time.Hour)
			})
			GoWith("bad", Normal, func() { panic("boom") })
			Yield()
		})
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "boom" || !strings.HasPrefix(pe.Coroutine, "bad#") {
			t.Fatalf("Run = %v, want a *PanicError for bad#N with value boom", err)
		}
		if !cleaned {
			t.Error("the sleeping coroutine's defer did not run")
		}
	})
}

// TestPanicAfterTakeover: a panic in a coroutine that took over a finished
// one's context (contextMain's takeover) is recovered, and that coroutine,
// not the context's first, is finished once: contextMain is entered again
// for the coroutine its context holds then.
func TestPanicAfterTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		finishes := map[string]int{}
		count := func(name string) SwitchHandler {
			return func(_ Coroutine, k SwitchKind) bool {
				if k == Finish {
					finishes[name]++
				}
				return true
			}
		}
		var first, bad Coroutine
		err := s.Run(func() {
			first = GoWith("first", Normal, func() {})
			bad = GoWith("bad", Normal, func() { panic("boom") })
			first.AddSwitchHandler(count("first"))
			bad.AddSwitchHandler(count("bad"))
			Yield()
		})
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "boom" || !strings.HasPrefix(pe.Coroutine, "bad#") {
			t.Fatalf("Run = %v, want a *PanicError for bad#N with value boom", err)
		}
		if !first.Finished() || !bad.Finished() || finishes["first"] != 1 || finishes["bad"] != 1 {
			t.Errorf("finished: first %v bad %v; Finish handler calls %v, want one each", first.Finished(), bad.Finished(), finishes)
		}
		if st := s.Stats(); b == Asm && st.Takeovers != 1 {
			t.Errorf("Takeovers = %d, want 1 (bad starts on first's context)", st.Takeovers)
		}
	})
}

// TestRunErrors: bad use gets clear errors.
func TestRunErrors(t *testing.T) {
	if _, err := New(Options{Backend: 7}); err == nil || !strings.Contains(err.Error(), "stackful.Asm or stackful.Coro") {
		t.Errorf("New with a bad backend: %v", err)
	}
	if _, err := New(Options{Backend: Coro, TickInterval: time.Second}); err == nil || !strings.Contains(err.Error(), "TickInterval") {
		t.Errorf("New with a bad TickInterval: %v", err)
	}
	s := newSched(t, Coro)
	var nested error
	if err := s.Run(func() { nested = s.Run(func() {}) }); err != nil {
		t.Fatal(err)
	}
	if nested == nil || !strings.Contains(nested.Error(), "in progress") {
		t.Errorf("nested Run: %v", nested)
	}
	if err := s.Run(nil); err == nil {
		t.Error("Run(nil) succeeded")
	}
}

// TestDoneJoin: Coroutine.Done lets one coroutine wait for another.
func TestDoneJoin(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var order []string
		err := s.Run(func() {
			co := Go(func() {
				Sleep(time.Millisecond)
				order = append(order, "child")
			})
			Await(co.Done())
			order = append(order, "joined")
		})
		if err != nil || strings.Join(order, ",") != "child,joined" {
			t.Fatalf("Run = %v, order %v", err, order)
		}
	})
}

// TestDoneMadeOnDemand: the done event is made by the first Done call
// (not at spawn), so a Done asked for only after the coroutine finished
// must already be fired, one asked for before must fire at the finish, and
// every call returns the same event.
func TestDoneMadeOnDemand(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var late, early Coroutine
		var earlyDone *Event
		err := s.Run(func() {
			late = Go(func() {})
			early = Go(func() { Yield() })
			earlyDone = early.Done()
			if earlyDone.Fired() {
				t.Error("Done fired before the coroutine ran")
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := late.Done(); !d.Fired() || d != late.Done() {
			t.Errorf("Done after the finish: fired %v, same event %v; want both", d.Fired(), d == late.Done())
		}
		if v, e := late.Done().Outcome(); v != nil || e != nil {
			t.Errorf("Done after the finish: outcome (%v, %v), want (nil, nil)", v, e)
		}
		if !earlyDone.Fired() || early.Done() != earlyDone {
			t.Errorf("Done asked before the finish: fired %v, same event %v; want both", earlyDone.Fired(), early.Done() == earlyDone)
		}
	})
}

// Child-process tests: fatal conditions on asm fibers.

const childEnv = "STACKFUL_TEST_CHILD"

// runChild re-executes the test binary running only the named test with
// childEnv=mode and returns its combined output.
func runChild(t *testing.T, test, mode string) string {
	t.Helper()
	out, _ := selfexec.CombinedOutput([]string{"-test.run=^" + test + "$", "-test.v"}, childEnv+"="+mode, "GODEBUG="+fiber.GODEBUGShrinkOff)
	return out
}

func needAsm(t *testing.T) {
	if err := fiber.Supported(); err != nil {
		t.Skip(err)
	}
}

// TestGCDuringRunDetected: a collection forced during a run fails Run loudly.
// The collection is unsafe with fibers suspended, so it runs in a child.
func TestGCDuringRunDetected(t *testing.T) {
	needAsm(t)
	if os.Getenv(childEnv) == "gc" {
		s := newSched(t, Asm)
		err := s.Run(func() {
			Go(func() { Yield() })
			runtime.GC()
		})
		os.Stdout.WriteString("RUN ERROR: " + errString(err) + "\n")
		return
	}
	out := runChild(t, "TestGCDuringRunDetected", "gc")
	if !strings.Contains(out, "RUN ERROR: stackful-asm: the run is invalid") || !strings.Contains(out, "garbage-collection cycle") {
		t.Fatalf("child did not report the GC cycle:\n%s", out)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestFatalOnFibers: stack overflow and runtime.Goexit inside a coroutine
// die with errors that name the cause (fiber.ExplainCrash recognises them).
func TestFatalOnFibers(t *testing.T) {
	needAsm(t)
	switch os.Getenv(childEnv) {
	case "overflow":
		s := newSched(t, Asm, func(o *Options) { o.Stacks.StackSize = 16 << 10 })
		s.Run(func() { recurse(1 << 20) })
		return
	case "goexit":
		s := newSched(t, Asm)
		s.Run(func() { runtime.Goexit() })
		return
	case "goexit-finish":
		// Outside any body: a Finish handler runs in the context's loop
		// (contextMain), after the body returned; its deferred call, not
		// the body's recovery, must report the Goexit.
		s := newSched(t, Asm)
		s.Run(func() {
			co := Go(func() {})
			co.AddSwitchHandler(func(_ Coroutine, k SwitchKind) bool {
				if k == Finish {
					runtime.Goexit()
				}
				return true
			})
			_ = Yield()
		})
		return
	}
	for _, c := range []struct{ mode, want string }{
		{"overflow", fiber.StackSizeOption},
		{"goexit", fiber.GoexitMessage},
		{"goexit-finish", fiber.GoexitMessage},
	} {
		out := runChild(t, "TestFatalOnFibers", c.mode)
		explained := fiber.ExplainCrash(out)
		if !strings.Contains(out+explained, c.want) {
			t.Errorf("%s: the crash does not name %q\noutput:\n%s\nexplanation: %s", c.mode, c.want, tail(out, 2000), explained)
		}
	}
}

//go:noinline
func recurse(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return recurse(n-1) + int(pad[n%256])
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// BenchmarkPingPong: two coroutines hand control back and forth through
// reusable events. ns/switch is the time of one one-way handoff (a round
// trip is two); ctxswitches/handoff is how many context switches each took
// (1 direct on asm, 2 through the scheduler on coro).
func BenchmarkPingPong(b *testing.B) {
	for _, be := range []Backend{Asm, Coro} {
		b.Run("backend="+be.String(), func(b *testing.B) {
			s, err := New(Options{Backend: be})
			if err != nil {
				b.Skip(err)
			}
			defer s.Close()
			before := s.Stats()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := threadCPU()
			seen, err := pingPong(s, b.N)
			cpu1 := threadCPU()
			b.StopTimer()
			if err != nil || seen != b.N {
				b.Fatalf("pingpong: %v, %d of %d round trips", err, seen, b.N)
			}
			st := s.Stats()
			handoffs := float64(2 * b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/handoffs, "ns/switch")
			// The thread's CPU time: on a shared machine the wall clock also
			// counts the time other processes held the core (as in
			// BenchmarkSpawnCPU); on coro, the Pull goroutines run on the
			// same locked thread, so this is the whole hand-off there too.
			b.ReportMetric(float64(cpu1-cpu0)/handoffs, "cpu-ns/switch")
			b.ReportMetric(float64(st.Switches-before.Switches)/handoffs, "ctxswitches/handoff")
		})
	}
	// The goroutine-single reference, measured alongside: two goroutines
	// handing control back and forth over unbuffered channels, GOMAXPROCS=1.
	b.Run("ref=goroutines-gomaxprocs1", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		ping, pong := make(chan struct{}), make(chan struct{})
		seen := 0
		b.ReportAllocs()
		b.ResetTimer()
		go func() {
			for range ping {
				seen++
				pong <- struct{}{}
			}
		}()
		for i := 0; i < b.N; i++ {
			ping <- struct{}{}
			<-pong
		}
		close(ping)
		b.StopTimer()
		if seen != b.N {
			b.Fatalf("%d of %d round trips", seen, b.N)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/switch")
	})
}

// BenchmarkSpawn: one coroutine spawned, run to its end and destroyed per
// op, in batches of 100 spawned before main yields (so the takeover path
// runs them one after another on one context).
func BenchmarkSpawn(b *testing.B) {
	for _, be := range []Backend{Asm, Coro} {
		b.Run("backend="+be.String(), func(b *testing.B) {
			s, err := New(Options{Backend: be})
			if err != nil {
				b.Skip(err)
			}
			defer s.Close()
			ran := 0
			body := func() { ran++ }
			b.ReportAllocs()
			b.ResetTimer()
			err = s.Run(func() {
				for i := 0; i < b.N; i += 100 {
					for j := i; j < i+100 && j < b.N; j++ {
						Go(body)
					}
					Yield()
				}
			})
			b.StopTimer()
			if err != nil || ran != b.N {
				b.Fatalf("Run = %v, %d of %d ran", err, ran, b.N)
			}
		})
	}
}
