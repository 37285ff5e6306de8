package stackful

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// BenchmarkSpawnLifecycleSplit splits the alive=1 pool=warm lifecycle
// (BenchmarkSpawnLifecycle, the Spawn scenario's cell without the row
// adapter) into what the fiber layer costs and what the scheduler adds,
// in one binary, each part timed (thread CPU time per lifecycle) from
// inside a running scheduler's main coroutine, so every part starts and
// ends on a fiber stack as the real lifecycle does:
//
//   - part=fiber: the floor of the switch machinery: the main coroutine
//     restarts the scheduler's spare context (fiber.Restart, at its
//     stack's top, as a pooled start does) and switches to it; the fresh
//     fiber runs its entry (a checksum add) through fiber's trampoline
//     and fiberMain and finishes back into main. No record, no queue, no
//     waker, no event. The spare is a scheduler's context, so fiberMain
//     defers no Goexit check for it (fiber.Context.EntryReportsGoexit,
//     session 18), as for every pooled start. Boost.Context's pooled lifecycle
//     (peers/boostcontext) does this much, plus its pool's get and put
//     and its fiber's record.
//   - part=lean: the same lifecycle on the scheduler's own structures
//     with only what moves it (leanLife): the record from the free list
//     and onto the live list, the run queue's slot, the waker's
//     subscription to the event and its states, the spare context
//     restarted and bound, the switch in, the body, the event fired
//     (leanFire), the record unlinked and back on the free list, the
//     pick of the waiter, the switch back. None of the checks (foreign
//     goroutine, microtask, cancellation and kill, handlers, priorities,
//     shutdown, IGNORED heads, the reactor tick), no statistics, no
//     handle, no panic recovery (contextMain's deferred call), one
//     frame for the entry.
//     lean-noevent: without the event (the body queues the waiter
//     itself); lean-nolive: without the live list.
//   - part=sched: Go + Await + Reset, the body resolving the event.
//
// Measured with -ldflags=-funcalign=64, taskset -c 1 (session 16, notes
// s16/spawn.md; `go test -run '^$' -bench SpawnLifecycleSplit
// -benchtime 400000x ./impl/stackful`): fiber ~19 ns, lean ~38.5,
// lean-noevent ~35, lean-nolive ~37, sched ~54 (~57 before that
// session's changes); Boost.Context's pooled lifecycle ~37.5 on the same
// core. So the design's lifecycle, none of its checks included, costs
// about what Boost's whole one does; BenchmarkSpawnLeanBisect splits
// lean's share further. Session 18 (notes s18/lifecycle.md; same flags,
// 12 pairs alternated with the previous tree over four binary path
// lengths, min of 3 per process): sched 52.1 -> 44.4, fiber 16.8 ->
// 15.8 (one deferred call per start; the lifecycle's wait starting the
// spare itself; spawn's and retire's stores in one write-barrier block
// each).
func BenchmarkSpawnLifecycleSplit(b *testing.B) {
	for _, part := range []string{"fiber", "lean", "lean-noevent", "lean-nolive", "sched"} {
		b.Run("part="+part, func(b *testing.B) {
			s, done := lockedAsmScheduler(b)
			defer done()
			var cpu0, cpu1 int64
			var sum uint64
			err := s.Run(func() {
				// Warm the way the real lifecycle does: a record on the
				// free list, a spare context.
				ev := NewEvent()
				Go(func() { ev.Resolve(nil) })
				if _, err := Await(ev); err != nil {
					panic(err)
				}
				ev.Reset()
				var loop func(n int)
				switch part {
				case "fiber":
					root := running.current.fc
					spare := s.asm.spare
					s.asm.spare = nil // this part's own until the end
					defer func() { s.asm.spare = spare }()
					fib := &spare.fiber.fc
					entry := func() *fiber.Context { sum++; return root }
					loop = func(n int) {
						for i := 0; i < n; i++ {
							if err := fib.Restart(entry); err != nil {
								panic(err)
							}
							fiber.Switch(root, fib)
						}
					}
				case "lean", "lean-noevent", "lean-nolive":
					body := func() { sum++; leanFire(ev) }
					l := &leanLife{s: s, noLive: part == "lean-nolive", noEvent: part == "lean-noevent"}
					if l.noEvent {
						body = func() { sum++; s.queue.first = l.waiter }
					}
					l.entry = l.run
					loop = func(n int) {
						for i := 0; i < n; i++ {
							l.spawnAwait(body, ev)
							ev.Reset()
						}
					}
				case "sched":
					body := func() { sum++; ev.Resolve(nil) }
					loop = func(n int) {
						for i := 0; i < n; i++ {
							Go(body)
							if _, err := Await(ev); err != nil {
								panic(err)
							}
							ev.Reset()
						}
					}
				}
				loop(1)
				b.ResetTimer()
				cpu0 = threadCPU()
				loop(b.N)
				cpu1 = threadCPU()
				b.StopTimer()
			})
			if err != nil {
				b.Fatal(err)
			}
			if sum < uint64(b.N) {
				b.Fatalf("%d bodies ran, want at least %d", sum, b.N)
			}
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/spawn")
		})
	}
}

// leanLife is a measurement prototype, not an API: BenchmarkSpawnLifecycleSplit's
// part=lean. Whatever it does not handle (no free record, a queued
// coroutine, no spare context) panics: the benchmark never gets there.
type leanLife struct {
	s     *Scheduler
	entry func() *fiber.Context
	// Ablations: no live list; no event (the body queues the waiter
	// itself).
	noLive, noEvent bool
	waiter          *coroutine
}

// spawnAwait spawns fn (Go's record reuse, live list and queue slot) and
// waits for ev (Await's subscription and the start of the unstarted head
// on the spare context), then switches to it.
func (l *leanLife) spawnAwait(fn func(), ev *Event) {
	s := l.s
	co := s.free
	if co == nil || co == s.current || s.queue.Len() != 0 || s.asm.spare == nil || ev.fired {
		panic("leanLife: not the warm lifecycle")
	}
	s.free, s.nfree = co.liveNext, s.nfree-1
	co.liveNext = nil
	s.nextID++
	co.id, co.fn, co.state = s.nextID, fn, coNew
	co.waker.status = WakerQueued
	if !l.noLive {
		s.linkLive(co)
	}
	s.queue.first = co
	// The wait: Await's subscription and WAITING.
	me := s.current
	w := &me.waker
	if l.noEvent {
		l.waiter = me
	} else {
		w.subs[0].kind, w.subs[0].co = cbResolvePlain, me
		ev.link(&w.subs[0])
		w.nsubs, w.mode, w.timeout = 1, modePlain, -1
		w.status = WakerWaiting
	}
	// The pick and the start: the head, the spare restarted and bound.
	next := s.queue.first
	s.queue.first = nil
	c := s.asm.spare
	s.asm.spare = nil
	if err := c.fiber.fc.Restart(l.entry); err != nil {
		panic(err)
	}
	c.co = next
	next.bind(c)
	s.current = next
	fiber.Switch(me.fc, next.fc)
	w.status = WakerResult
}

// run is the lean fiber entry: the body, the retire onto the free list,
// the pick of the woken waiter and the finish into it (the context kept
// as the spare). Its twin is BenchmarkSpawnLeanBisect's entry for steps
// 4-7, which builds the same steps up one at a time; they are kept apart
// on purpose, so that neither measures flag tests the other lacks.
func (l *leanLife) run() *fiber.Context {
	s := l.s
	co := s.current
	ctx := co.ctx
	co.state = coRunning
	co.waker.status = WakerNoStatus
	co.fn()
	co.unbind()
	if !l.noLive {
		s.unlinkLive(co)
	}
	co.state = coFinished
	co.fn = nil
	co.liveNext = s.free
	s.free = co
	s.nfree++
	next := s.queue.first
	s.queue.first = nil
	ctx.co = nil
	s.current = next
	s.asm.spare = ctx
	return next.fc
}

// BenchmarkSpawnLeanBisect: what the lean lifecycle adds to the fiber
// floor (BenchmarkSpawnLifecycleSplit part=fiber), one step at a time,
// each step the one before plus: 0 the floor through the spare context;
// 1 the body a func value the entry calls; 2 the entry reads s.current
// and calls its fn; 3 it takes the waiter from the run queue's slot and
// finishes into it; 4 bind and unbind and the spare's hand-back; 5 the
// record from the free list and back, with its fields; 6 the live list;
// 7 the spawn in a frame of its own. Measured (session 16, taskset -c 1,
// cpu-ns/spawn, min of 4): 22.6, 22.6, 23.0, 23.2, 26.1, 28.9, 31.2,
// 32.0. So no step is a stall: steps 1-3 add 0.6 ns together, and each
// group of stores and dependent loads (steps 4, 5, 6: 6-10 memory
// operations each) ~2.5 ns, about a cycle per operation; the event's
// join (subscription, firing, Reset) and the waker's states make the
// rest of part=lean.
func BenchmarkSpawnLeanBisect(b *testing.B) {
	for step := 0; step <= 7; step++ {
		b.Run("step="+string(rune('0'+step)), func(b *testing.B) {
			s, done := lockedAsmScheduler(b)
			defer done()
			var cpu0, cpu1 int64
			var sum uint64
			err := s.Run(func() {
				me := running.current
				root := me.fc
				ev := NewEvent()
				Go(func() { ev.Resolve(nil) })
				if _, err := Await(ev); err != nil {
					panic(err)
				}
				c := s.asm.spare
				fib := &c.fiber.fc
				rec := s.free
				body := func() { sum++ }
				var entry func() *fiber.Context
				switch step {
				case 0: // the floor: a closure entry returning root
					entry = func() *fiber.Context { sum++; return root }
				case 1: // + the body as a func value called by the entry
					entry = func() *fiber.Context { body(); return root }
				case 2: // + the entry reads s.current and calls co.fn
					entry = func() *fiber.Context { co := s.current; co.fn(); return root }
				case 3: // + the entry picks the waiter from s.current's successor and returns its fc
					entry = func() *fiber.Context {
						co := s.current
						co.fn()
						next := s.queue.first
						s.queue.first = nil
						s.current = next
						return next.fc
					}
				case 4, 5, 6, 7: // + bind/unbind and the spare's hand-back
					entry = func() *fiber.Context {
						co := s.current
						ctx := co.ctx
						if step >= 5 {
							co.state = coRunning
							co.waker.status = WakerNoStatus
						}
						co.fn()
						co.unbind()
						if step >= 6 {
							s.unlinkLive(co)
						}
						if step >= 5 {
							co.state = coFinished
							co.fn = nil
							co.liveNext = s.free
							s.free = co
							s.nfree++
						}
						next := s.queue.first
						s.queue.first = nil
						ctx.co = nil
						s.current = next
						s.asm.spare = ctx
						return next.fc
					}
				}
				rec.fn = body
				if step >= 5 {
					rec.liveNext = s.free
					s.free = rec
				}
				start := func() {
					if step >= 5 {
						co := s.free
						s.free, s.nfree = co.liveNext, s.nfree-1
						co.liveNext = nil
						s.nextID++
						co.id, co.fn, co.state = s.nextID, body, coNew
						co.waker.status = WakerQueued
						if step >= 6 {
							s.linkLive(co)
						}
					}
				}
				if step >= 7 {
					start = func() { leanStart(s, body, step) }
				}
				loop := func(n int) {
					for i := 0; i < n; i++ {
						start()
						if step >= 4 {
							s.asm.spare = nil
							c.co = rec
							rec.bind(c)
						}
						if err := fib.Restart(entry); err != nil {
							panic(err)
						}
						s.current = rec
						s.queue.first = me
						fiber.Switch(root, fib)
						s.current = me
					}
				}
				loop(1)
				b.ResetTimer()
				cpu0 = threadCPU()
				loop(b.N)
				cpu1 = threadCPU()
				b.StopTimer()
				s.queue.first = nil
				s.asm.spare = c
				if step >= 5 {
					s.free = rec.liveNext
					rec.liveNext = nil
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/spawn")
		})
	}
}

// leanStart is BenchmarkSpawnLeanBisect's step 7: step 6's spawn in a
// frame of its own, as Go's. Its twin is the spawn at the top of
// leanLife.spawnAwait (with live list), kept apart as run's twin is.
//
//go:noinline
func leanStart(s *Scheduler, body func(), step int) {
	co := s.free
	s.free, s.nfree = co.liveNext, s.nfree-1
	co.liveNext = nil
	s.nextID++
	co.id, co.fn, co.state = s.nextID, body, coNew
	co.waker.status = WakerQueued
	s.linkLive(co)
}
