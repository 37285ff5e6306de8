package stackful

import (
	"testing"

	"github.com/corobench/corobench/impl/stackful/fiber"
)

// BenchmarkSpawnLifecycleSplit splits the alive=1 pool=warm lifecycle
// (BenchmarkSpawnLifecycle) into what the fiber layer costs and what the
// scheduler adds, in one binary, each part timed from inside a running
// scheduler's main coroutine (so every part starts and ends on a fiber
// stack, as the real lifecycle does):
//
//   - part=fiber: the floor of the switch machinery: the main coroutine
//     restarts one finished context on a pooled stack (fiber.Restart, as
//     the spare is restarted) and switches to it; the fresh fiber runs its
//     entry (a checksum add) through fiber's trampoline, fiberMain and
//     runEntry, and finishes back into main. No record, no queue, no
//     waker, no event. Boost.Context's pooled lifecycle
//     (peers/boostcontext) does about this much, plus its pool's get/put.
//   - part=lean: the same lifecycle on the scheduler's own structures
//     with only what moves it (leanLife): the record from the free list
//     and the live list, the run queue's slot, the waker's subscription
//     to the event and its WAITING/QUEUED states, the spare context
//     restarted and bound, the switch in, the body, the event fired
//     (leanFire), the record retired onto the free list, the pick of the
//     waiter, the switch back. None of the checks (foreign goroutine,
//     microtask, cancellation and kill, handlers, priorities, shutdown,
//     IGNORED heads, the reactor tick), no statistics, no handle, no
//     runBody (so no panic recovery) and no contextMain.
//   - part=sched: Go + Await + Reset, the body resolving the event
//     (BenchmarkSpawnLifecycle's loop).
//
// The difference between them is the scheduler's share: spawn (record
// from the free list, live list, queue), the join through an event and
// the waker, the pick, the context's bind, runBody and contextMain,
// retire. The scenario's cell adds the row adapter's interface calls
// (scenarios/rows) on top of part=sched.
func BenchmarkSpawnLifecycleSplit(b *testing.B) {
	for _, part := range []string{"fiber", "fiberctx", "fiberdeep", "fiberspare", "lean", "lean-nolive", "lean-noevent", "lean-norecord", "sched"} {
		b.Run("part="+part, func(b *testing.B) {
			s, done := lockedAsmScheduler(b)
			defer done()
			var cpu0, cpu1 int64
			var sum uint64
			err := s.Run(func() {
				var loop func(n int)
				switch part {
				case "fiber", "fiberctx", "fiberdeep":
					root := running.current.fc
					st, err := s.asm.stacks.Get()
					if err != nil {
						b.Fatal(err)
					}
					defer s.asm.stacks.Put(st)
					var fib fiber.Context
					entry := func() *fiber.Context { sum++; return root }
					if part == "fiberdeep" {
						entry = func() *fiber.Context { deep4(&sum); return root }
					}
					top := st.Hi() - 64
					if part == "fiberctx" {
						top = st.Hi() - ctxReserve
					}
					if err := fib.Init(st.Lo(), top, entry); err != nil {
						b.Fatal(err)
					}
					fiber.Switch(root, &fib) // warm: fib is finished
					loop = func(n int) {
						for i := 0; i < n; i++ {
							if err := fib.Restart(entry); err != nil {
								panic(err)
							}
							fiber.Switch(root, &fib)
						}
					}
				case "fiberspare":
					root := running.current.fc
					ev := NewEvent()
					Go(func() { ev.Resolve(nil) })
					if _, err := Await(ev); err != nil {
						panic(err)
					}
					fib := &s.asm.spare.fiber.fc // the real spare context, at its stack's top
					entry := func() *fiber.Context { sum++; return root }
					loop = func(n int) {
						for i := 0; i < n; i++ {
							if err := fib.Restart(entry); err != nil {
								panic(err)
							}
							fiber.Switch(root, fib)
						}
					}
				case "lean", "lean-nolive", "lean-noevent", "lean-norecord":
					ev := NewEvent()
					body := func() { sum++; leanFire(ev) }
					l := &leanLife{s: s, noLive: part == "lean-nolive", noEvent: part == "lean-noevent", noRecord: part == "lean-norecord"}
					if l.noEvent {
						body = func() { sum++; s.queue.first = l.waiter }
					}
					l.entry = l.run
					// Warm the way the real lifecycle does (a free record,
					// a spare context), so that loop(1) finds both.
					Go(func() { ev.Resolve(nil) })
					if _, err := Await(ev); err != nil {
						panic(err)
					}
					ev.Reset()
					loop = func(n int) {
						for i := 0; i < n; i++ {
							l.spawnAwait(body, ev)
							ev.Reset()
						}
					}
				case "sched":
					ev := NewEvent()
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
				loop(1) // warm: a record on the free list, a spare context
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
	// itself); no record reuse (the same record every time, untouched).
	noLive, noEvent, noRecord bool
	waiter                    *coroutine
	rec                       *coroutine
}

// spawnAwait spawns fn (Go's record reuse, live list and queue slot) and
// waits for ev (Await's subscription and the start of the unstarted head
// on the spare context), then switches to it.
func (l *leanLife) spawnAwait(fn func(), ev *Event) {
	s := l.s
	co := s.free
	if l.noRecord {
		if l.rec == nil {
			l.rec = co
			s.free, s.nfree = co.liveNext, s.nfree-1
			co.liveNext = nil
		}
		co = l.rec
	}
	if co == nil || co == s.current || s.queue.Len() != 0 || s.asm.spare == nil || ev.fired {
		panic("leanLife: not the warm lifecycle")
	}
	if !l.noRecord {
		s.free, s.nfree = co.liveNext, s.nfree-1
		co.liveNext = nil
		s.nextID++
		co.id, co.fn, co.state = s.nextID, fn, coNew
		co.waker.status = WakerQueued
	} else {
		co.fn = fn
	}
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
// as the spare).
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
	if !l.noRecord {
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

// deep4 and the three below it are four frames of a body: sum++ at the
// bottom, none inlined.
//
//go:noinline
func deep4(sum *uint64) { deep3(sum) }

//go:noinline
func deep3(sum *uint64) { deep2(sum) }

//go:noinline
func deep2(sum *uint64) { deep1(sum) }

//go:noinline
func deep1(sum *uint64) { *sum++ }

// BenchmarkSpawnLeanBisect: what the lean lifecycle adds to the fiber
// floor, one step at a time (step=0 is the floor through the spare).
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
// frame of its own, as Go's.
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
