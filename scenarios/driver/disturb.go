package driver

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
)

// What a timed run was exposed to. On a shared machine a run can lose its
// CPU to another task for a while (a runqueue wait) or share its caches
// and memory bandwidth with a busy neighbour; either makes that run slower
// for reasons that are not the row's. The driver takes, around each run's
// body, figures that show such a disturbance without depending on the
// figure it measures, so that a disturbed run can be told from a slow one
// (see docs/design.md §6 (Measurement)):
//
//   - RunDelay: how long the thread that ran most during the run (the
//     body's) waited on a runqueue, runnable but not running
//     (schedstat's run_delay, ns resolution). A thread that blocks by
//     design (a timer sleep, a read on a socket) is not runnable while it
//     waits, so this stays ~0 for an undisturbed single-threaded run
//     whatever it blocks on. AllDelay sums every thread's, for the
//     record: the runtime's helpers (sysmon) wait for the body's thread
//     on one CPU, and a multi-P cell's threads wait for each other.
//   - CPU: the CPU time the process's threads got (schedstat's
//     sum_exec_runtime), for the record; Own: the part of it the threads
//     other than the body's got. On the one CPU a judged cell is pinned
//     to, the body's thread waits for those too (sysmon, a thread the
//     runtime starts), and that wait is the row's own, so the mark judges
//     RunDelay less Own (Signal.Wait).
//   - Nivcsw: involuntary context switches of the process (getrusage),
//     for the record: it counts preemptions of any length, so it ranks
//     disturbances less well than the time they took.
//
// The mark (Disturbed) is the share of the wall time the body's thread
// waited for other tasks alone (Signal.DelayShare). Measured on the
// shared 2-core VM this was built on, over ~1260 timed runs of single-P
// cells (README, "Measurement: noise and pinning"), a run whose threads'
// summed runqueue wait was over 10% of its wall time was slower than its
// cell's undisturbed level by more than 10% in 89% of cases, and 94% of
// the runs that were that much slower were over it. The mark is on the
// body's thread alone, at 15%: on a quiet CPU the body's thread of Spawn
// pool=cold on stackful-asm (fresh stacks mapped per spawn) waited 8–12%
// of the wall time, and all threads' summed 25–35%. A fixed memory walk timed in thread CPU time
// after each run (a canary for cache and memory-bandwidth contention,
// which a runqueue wait does not show) was tried and dropped: its
// undisturbed level moved 2× between processes with their memory layout,
// so it marked layouts, not neighbours. Its successor, the memory probe
// (memprobe.go: a dependent chain over twice the last-level cache, before
// and after each run), has a steadier level but did not tell slow runs
// apart either; it is recorded on request (Options.MemProbe), not judged.
// The core probe (coreprobe.go: a throughput-bound register loop over a
// latency-bound one, before and after each run) does tell them apart for
// the pure-CPU cells, whose slow mode is another tenant on the core's
// sibling hyperthread; on request (Options.CoreMark) a run it finds on a
// shared core is disturbed too (CoreShared).
//
// The mark applies to a cell on one P only (runtime.GOMAXPROCS(0) == 1,
// every single-P row's cells) whose scenario does not declare itself not
// judged (Scenario.NotJudged: a helper beside its body, or a headline that
// is not a time): there the body's threads are one runnable thread by
// design, so a runqueue wait the process's own threads do not account for
// is another task's doing. A multi-P cell's own threads wait for each other (goroutine-multi's
// spinning Ms on two CPUs: 100–190% of wall time in undisturbed runs whose
// figure was at its cell's median), so the same figure says nothing there
// and those cells are not judged.

// Signal is one run's exposure to the rest of the machine, taken around
// its body (its untimed set-up included: a disturbance of the set-up
// shows up on the machine the timed region ran on as well).
type Signal struct {
	Wall     time.Duration // the window RunDelay covers: the body, set-up included, between two readings of its thread
	RunDelay time.Duration // runqueue wait of the thread that ran most
	AllDelay time.Duration // Σ over the process's threads of runqueue wait
	CPU      time.Duration // Σ over the process's threads of CPU time
	// Own is the CPU time the process's other threads (all but the one
	// that ran most: sysmon, a timer or reactor thread, a thread the
	// runtime started) got over the run. On the one CPU a single-P cell is
	// pinned to, that is time the body's thread waited for the row's own
	// threads, which is the row's behaviour and not a disturbance; Wait
	// takes it off RunDelay.
	Own time.Duration
	// OneCPU says the reading thread was allowed one CPU only (the
	// harness pins a single-P cell's process there, and its threads
	// inherit it): the premise of taking Own off. Unpinned (benchrun
	// --pin=false, benchrun profile, a test), the other threads can run
	// beside the body on another CPU, and Wait takes nothing off.
	OneCPU bool
	Nivcsw int64 // involuntary context switches of the process
	// Segments counts the run's timed segments and those in which the
	// thread that timed them was preempted (scenarios.SegmentCounts),
	// for the record: a preempted segment counts (runFresh says why).
	Segments scenarios.SegmentCounts
	// MemBefore and MemAfter are the memory probe's readings (memprobe.go:
	// ns per dependent load from memory) just before the run's body and
	// just after it, on the body's CPU; 0 when the probe was off
	// (Options.MemProbe).
	MemBefore, MemAfter float64
	// CoreBefore and CoreAfter are the core probe's readings
	// (coreprobe.go) just before the run's body and just after it, on
	// the body's CPU; zero when the probe was off (Options.CoreProbe).
	CoreBefore, CoreAfter CoreReading
	// CoreShared is the core mark's verdict on those readings against the
	// measurement's limit (CoreShared, Options.CoreLimit), whether or not
	// the mark judges the run (Options.CoreMark).
	CoreShared bool
}

// DisturbedShare is the mark: a timed run whose body's thread waited on a
// runqueue for other tasks (Signal.Wait) for more than this share of the
// run's wall time is disturbed.
// Blocking by design does not count (a blocked thread is not runnable);
// an undisturbed blocking cell's wake-ups wait ~3–4% of its wall time
// (FDWake), the body's thread of Spawn pool=cold on stackful-asm 8–12%, so
// the mark sits above that.
const DisturbedShare = 0.15

// Disturbed is the default mark: the body's thread waited for other
// tasks (Wait, the process's own threads' time taken off) more than
// DisturbedShare of the run's wall time.
func Disturbed(s Signal) bool { return s.DelayShare() > DisturbedShare }

// judgedByDefault reports whether the default mark applies to a cell of s
// measured in this process: one P, and a scenario that does not say why
// it is not judged (Scenario.NotJudged: a helper process beside the body,
// wake-ups on an idle CPU, a headline that is a byte count). There the
// process's threads are one runnable thread and the runtime's helpers,
// whose time Signal.Wait takes off, so a wait that is left is another
// task's doing. The declarations' measured grounds: with the mark on,
// goroutine-single's Offload and FSWatch runs waited 40–125% of their wall
// time (summed over the process's threads, before Own was taken off);
// Timer's n=300–3000 cells waited 13–20% (stackless, stackful-coro) in a
// full run on a quiet machine in which nothing else ran beside them (the
// rest of the machine's CPU over their processes: 0 ticks): a thread
// woken on an idle vCPU waits for the VM to resume that CPU, and schedstat
// counts the wait as runqueue wait.
func judgedByDefault(s *scenarios.Scenario) bool {
	return runtime.GOMAXPROCS(0) == 1 && len(s.Metrics) > 0 && s.NotJudged == ""
}

// coreJudged reports whether the core mark alone judges a cell of s
// measured in this process, whose scenario the default mark does not
// judge (Scenario.NotJudged): one P, and a scenario that does not say why
// the core mark should not (Scenario.CoreMarkOff). Its verdict is
// coreSharedOnOneCPU's.
//
// Why: the core probe is a signal of its own, and what makes a runqueue
// wait unreliable in those scenarios (a helper process, a thread that
// blocks in the kernel) does not make a shared core harmless. In the
// full run of 2026-12-07 16:32 (the limit 2% over the base), the runs of
// such cells re-read with the ones over the limit left out (the driver
// re-takes them instead) gave Exec on stackful-coro c=1 a CV of 4.0%
// instead of 23.8%, stackless c=1 6.0% instead of 23.7%, FSWatch on the
// three stackful and stackless rows 3.6–4.8% instead of 8.1–9.9%, DNS on
// goroutine-single c=64 9.2% instead of 23.5%, FileIO on goroutine-single
// c=16 9.3% instead of 20.7%, with 5–10 of the 11 processes keeping a
// clean majority.
func coreJudged(s *scenarios.Scenario) bool {
	return runtime.GOMAXPROCS(0) == 1 && len(s.Metrics) > 0 && s.CoreMarkOff == ""
}

// coreSharedOnOneCPU is the core mark for a cell that coreJudged: the
// run read a shared core, and its whole process was on one CPU, the one
// the probe read (an unpinned process's threads run where they like, and
// the probe sees only its body's core).
func coreSharedOnOneCPU(sig Signal) bool { return sig.OneCPU && sig.CoreShared }

// Wait is the body's thread's runqueue wait that the process's own
// threads do not account for: RunDelay less the CPU time the other
// threads got over the run (Own), at least 0, when the process is on one
// CPU (OneCPU), else RunDelay whole. On the one CPU a judged
// cell is pinned to, every ns another thread of the process ran is a ns
// the body's thread, runnable, may have waited for it; what is left is
// another task's doing. It is an upper bound of the row's own share, not
// an exact one: a helper that ran while the body was blocked (not
// runnable) excuses a wait it did not cause. For the cells judged (one
// runnable thread by design) the body is runnable nearly all the time, so
// the two are close.
func (s Signal) Wait() time.Duration {
	if !s.OneCPU {
		return s.RunDelay
	}
	return max(0, s.RunDelay-s.Own)
}

// DelayShare is the share of the run's wall time the body's thread waited
// on a runqueue for other tasks (Wait): the figure the mark compares with
// DisturbedShare. It can exceed 1 only through clock granularity. 0 when
// no wall time was taken.
func (s Signal) DelayShare() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Wait()) / float64(s.Wall)
}

// schedTotals is the process's threads' schedstat figures, per thread,
// and whether the reading thread was allowed one CPU only.
type schedTotals struct {
	threads    map[string]threadSched // by thread id
	nivcsw     int64
	ok, oneCPU bool
}

// threadSched is one thread's schedstat figures, and when they were read
// (just after the read: each thread's figures cover the time between its
// own two readings, not the whole of either reading).
type threadSched struct {
	exec, delay time.Duration
	at          time.Time
}

// readSched reads /proc/self/task/*/schedstat ("exec_ns run_delay_ns
// timeslices"). A thread that ended between two readings takes its
// figures with it; a thread started between them counts from zero. A
// kernel without the file (or with scheduler statistics off: it reads
// zeros) gives ok=false or zeros, and the run's signal says nothing.
func readSched() schedTotals {
	t := schedTotals{threads: map[string]threadSched{}}
	var set unix.CPUSet
	t.oneCPU = unix.SchedGetaffinity(0, &set) == nil && set.Count() == 1
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.nivcsw = ru.Nivcsw
	}
	dir, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return t
	}
	for _, e := range dir {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		exec, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		delay, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		th := threadSched{time.Duration(exec), time.Duration(delay), time.Now()}
		t.threads[e.Name()] = th
		t.ok = true
	}
	return t
}

// since is the signal between t0, read at start, and a reading taken
// now. RunDelay is the wait of the thread that ran most in between (the
// body's: on one P the others are the runtime's helpers, sysmon above
// all, whose own waits for the body's thread are not a disturbance; a
// quiet Yield n=262144 on stackful-asm summed 15% of its wall time over
// every thread); Own is what the others ran; AllDelay sums every
// thread's wait. Wall is the window RunDelay covers: from just after the
// body's thread's file was read in t0 to just after it was read now.
// Reading the process's schedstat files takes tens of µs (a few per
// thread); the time from start (taken before t0's reading) to the end of
// this one would count both readings whole, which is nothing beside a
// long run but would more than double a Shutdown cycle's ~50 µs window
// (~17 µs timed) and dilute its wait. A thread started since t0 (no
// figures there) falls back to that whole window.
func (t0 schedTotals) since(start time.Time) Signal {
	return t0.to(readSched(), start, time.Now())
}

// to is the signal between readings t0 and t1, taken between start and
// end (since's arithmetic, apart for tests of hand-made readings).
func (t0 schedTotals) to(t1 schedTotals, start, end time.Time) Signal {
	s := Signal{Wall: end.Sub(start), Nivcsw: t1.nivcsw - t0.nivcsw}
	if !t0.ok || !t1.ok {
		return s
	}
	// Per thread, over the threads alive at t1: a thread that existed at
	// t0 and has exited since (a locked goroutine's thread ends with it)
	// took its figures with it, and subtracting totals took its whole
	// life's time off the window's (a test saw CPU 37.8 ms for a window
	// in which one thread alone ran 62.6 ms).
	var most time.Duration = -1
	for id, th := range t1.threads {
		before, seen := t0.threads[id] // zero for a thread started since
		s.CPU += max(0, th.exec-before.exec)
		s.AllDelay += max(0, th.delay-before.delay)
		if ran := th.exec - before.exec; ran > most {
			most, s.RunDelay = ran, max(0, th.delay-before.delay)
			if seen {
				s.Wall = th.at.Sub(before.at)
			} else {
				s.Wall = end.Sub(start)
			}
		}
	}
	s.Own = max(0, s.CPU-most)
	s.OneCPU = t0.oneCPU && t1.oneCPU
	return s
}
