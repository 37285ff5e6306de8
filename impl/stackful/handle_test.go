package stackful

import (
	"errors"
	"strings"
	"testing"
)

// TestWarmSpawnDoesNotAllocate: once the free lists are warm, a spawn, its
// run and its finish allocate nothing (the record is reused), one at a time
// (the lifecycle) and many alive at once.
func TestWarmSpawnDoesNotAllocate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		loops := map[string]func(n int) error{
			"lifecycle": func(n int) error {
				return s.Run(func() {
					done := NewEvent()
					body := func() { done.Resolve(nil) }
					for i := 0; i < n; i++ {
						Go(body)
						Await(done)
						done.Reset()
					}
				})
			},
			"alive-together": func(n int) error {
				return s.Run(func() {
					body := func() { Yield() }
					for r := 0; r < n/100; r++ {
						for i := 0; i < 100; i++ {
							Go(body)
						}
						Yield()
						Yield()
					}
				})
			},
		}
		for name, loop := range loops {
			if err := loop(1000); err != nil { // warm: records, contexts, queue
				t.Fatalf("%s: %v", name, err)
			}
			var err error
			small, large := ^uint64(0), ^uint64(0)
			for try := 0; try < 3; try++ {
				small = min(small, mallocs(func() { err = errors.Join(err, loop(1000)) }))
				large = min(large, mallocs(func() { err = errors.Join(err, loop(2000)) }))
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Coro's goroutines make the runtime allocate now and then;
			// a record per spawn would be 1000 more.
			allowed := uint64(0)
			if b == Coro {
				allowed = 10
			}
			if large > small+allowed {
				t.Errorf("%s: 1000 more warm spawns made %d more allocations (allowed %d)", name, large-small, allowed)
			}
		}
	})
}

// TestStaleHandle: a handle whose coroutine finished and whose record a
// later spawn reused answers for its own, finished coroutine and never acts
// on the record's new coroutine.
func TestStaleHandle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		var old, cur Coroutine
		ran := false
		err := s.Run(func() {
			old = Go(func() {})
			oldWaker := old.Waker()
			Yield() // old runs and finishes
			cur = Go(func() { ran = true })
			if cur.r != old.r {
				t.Fatalf("the finished coroutine's record was not reused")
			}
			if old == cur || old.ID() == cur.ID() {
				t.Errorf("old %v and new %v compare equal", old, cur)
			}
			if !old.Finished() || cur.Finished() {
				t.Errorf("Finished: old %v, new %v; want true, false", old.Finished(), cur.Finished())
			}
			if st := old.WakerStatus(); st != WakerNoStatus {
				t.Errorf("old WakerStatus = %v, want NO_STATUS (the new coroutine's is %v)", st, cur.WakerStatus())
			}
			if st := oldWaker.Status(); st != WakerNoStatus {
				t.Errorf("old Waker().Status() = %v, want NO_STATUS", st)
			}
			if cur.WakerStatus() != WakerQueued {
				t.Errorf("new WakerStatus = %v, want QUEUED", cur.WakerStatus())
			}
			if !old.Done().Fired() || old.Err() != nil || old.Name() != "" || old.Priority() != Normal {
				t.Errorf("old: Done fired %v, Err %v, Name %q, Priority %v", old.Done().Fired(), old.Err(), old.Name(), old.Priority())
			}
			if cur.Done() == old.Done() {
				t.Errorf("old and new share a Done event")
			}
			// Acting on the stale handle must not reach the new coroutine.
			old.Cancel()
			old.Destroy()
			old.AddSwitchHandler(func(Coroutine, SwitchKind) bool {
				t.Errorf("a handler added through a stale handle ran")
				return false
			})
			if _, err := Await(cur.Done()); err != nil {
				t.Errorf("Await(new.Done()) = %v", err)
			}
		})
		if err != nil || !ran {
			t.Fatalf("Run = %v, new coroutine ran: %v (a stale Cancel or Destroy reached it)", err, ran)
		}
	})
}

// TestKeptRecords: the records whose coroutine a handle must still describe
// after the finish (named, High, panicked, Done asked for) are not reused.
func TestKeptRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b, func(o *Options) { o.OnMicrotaskError = func(error) {} })
		var named, high, done Coroutine
		err := s.Run(func() {
			named = GoWith("worker", Normal, func() {})
			high = GoWith("", High, func() {})
			done = Go(func() {})
			ev := done.Done()
			Yield()
			for i := 0; i < 10; i++ {
				Go(func() {})
			}
			Yield()
			if named.Name() != "worker" || named.String() != "worker#"+itoa(named.ID()) {
				t.Errorf("named: %q %q", named.Name(), named.String())
			}
			if high.Priority() != High {
				t.Errorf("high: Priority %v", high.Priority())
			}
			if done.Done() != ev || !ev.Fired() {
				t.Errorf("Done: a different or unfired event after the finish")
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		var panicked Coroutine
		err = s.Run(func() {
			panicked = Go(func() { panic("boom") })
			Yield()
			for i := 0; i < 10; i++ {
				Go(func() {})
			}
			Yield()
		})
		var pe *PanicError
		if !errors.As(err, &pe) || !errors.As(panicked.Err(), &pe) {
			t.Fatalf("Run = %v, Err = %v: want the panic from both", err, panicked.Err())
		}
	})
}

// TestZeroHandleNamed: the zero Coroutine (Current outside a coroutine)
// panics naming the method and the cause.
func TestZeroHandleNamed(t *testing.T) {
	if !Current().IsZero() {
		t.Fatal("Current() outside a Run is not the zero Coroutine")
	}
	for name, f := range map[string]func(){
		"Cancel":   func() { Current().Cancel() },
		"Finished": func() { Current().Finished() },
		"Waker":    func() { Current().Waker() },
		"Status":   func() { Waker{}.Status() },
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "zero Coroutine") || !strings.Contains(msg, name) {
					t.Errorf("%s on the zero Coroutine: panic %q, want one naming the method and the zero Coroutine", name, msg)
				}
			}()
			f()
		}()
	}
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestMicrotaskSpawnAtFinish: a microtask run at a finishing coroutine's
// last suspend point (still current, on its stack) may spawn, and the spawn
// does not take the finishing coroutine's record.
func TestMicrotaskSpawnAtFinish(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		ran := 0
		var first, second Coroutine
		err := s.Run(func() {
			first = Go(func() {
				QueueMicrotask(func() error {
					second = Go(func() { ran++ })
					return nil
				})
			})
			Yield()
			Yield()
		})
		if err != nil || ran != 1 {
			t.Fatalf("Run = %v; the microtask's coroutine ran %d times, want 1", err, ran)
		}
		if first.r == second.r {
			t.Errorf("the spawn took the record of the coroutine still finishing")
		}
	})
}

// TestDoneAfterFinishNotCarried: Done asked for after the coroutine
// finished, while its record waits on the free list, does not leave a fired
// event in the record for its next coroutine.
func TestDoneAfterFinishNotCarried(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		err := s.Run(func() {
			old := Go(func() {})
			Yield() // old finishes; its record goes to the free list
			if !old.Done().Fired() {
				t.Errorf("Done of a finished coroutine is not fired")
			}
			next := Go(func() { Yield() })
			if next.r != old.r {
				t.Fatalf("the record was not reused")
			}
			if next.Done().Fired() {
				t.Errorf("a new coroutine's Done is fired before it ran (the old coroutine's event was carried over)")
			}
			if _, err := Await(next.Done()); err != nil || !next.Finished() {
				t.Errorf("Await(next.Done()) = %v, finished %v", err, next.Finished())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
