package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Env is a body's view of one run: the iteration count, the parameters, and
// the timer that delimits the timed region. Bodies call ResetTimer after
// their set-up, as testing.B bodies do.
type Env struct {
	N      int
	Params map[string]string
	// Loadgen is Options.Loadgen, for the echo scenario.
	Loadgen LoadgenCommand
	// Iter is, for a cell with Scenario.FreshRuntime, the index (0..N-1) of
	// the iteration this call of the body runs; 0 otherwise.
	Iter int

	// hooks, when set (by the driver, on a profiled run only; SetHooks),
	// follow the timer: a normal run pays one nil check per timer call,
	// outside the clock reads.
	hooks *TimerHooks

	running    bool
	start      time.Time
	startAlloc uint64
	startFlt   int64
	elapsed    time.Duration
	allocs     uint64
	faults     int64

	// The timed segments (StartTimer to StopTimer) so far, and those of
	// them in which the thread that timed them was preempted (seg; see
	// Segments). startTid and startIvcsw are the open segment's thread
	// and that thread's involuntary switches at its start.
	seg        SegmentCounts
	startTid   int
	startIvcsw int64
}

// SegmentCounts counts an Env's timed segments (each StartTimer to its
// StopTimer; a body that times one stretch has one) and what happened to
// the thread that timed them, read with getrusage(RUSAGE_THREAD) just
// before the segment's first clock read and just after its last.
//
// A segment is preempted when that thread made an involuntary context
// switch inside it: it was runnable and another thread got its CPU (the
// process's own sysmon or a runtime thread woken by the untimed set-up,
// or another task), so the segment's wall time holds time the body did
// not run. A segment that blocks by design (a sleep, a read) switches
// voluntarily and is not counted. A segment that began on one thread and
// ended on another (a goroutine moved between Ms) cannot be told and is
// Moved, not Preempted. PreemptedTime is the timed time of the preempted
// segments, their preemptions included.
type SegmentCounts struct {
	Segments, Preempted, Moved int
	// Time is every segment's timed time (Env.Elapsed), PreemptedTime
	// the preempted segments'.
	Time, PreemptedTime time.Duration
}

// TimerHooks follow an Env's timer, so that something (the CPU profiler of
// benchrun profile, through driver.Options.FinalStart) runs exactly while
// the timed region does. Start is called as the timer starts, before the
// counters and the clock are read (the clock last), so what Start does,
// and what it allocates or faults, is outside the timed region and its
// counts; Stop once the timer has stopped, after the clock and the
// counters are read, for the same reason, with the segment's timed
// duration (clock to clock). Reset is called by ResetTimer,
// with no segment open: everything gathered since the run began is to be
// dropped, as the timer drops its elapsed time and counts. The hooks run
// on the body's stack (a fiber's, on the stackful rows) and may block.
type TimerHooks struct {
	Start, Reset func()
	Stop         func(timed time.Duration)
}

// SetHooks makes h follow the timer from now on (nil: none). The driver
// sets them on a profiled run, before the body starts.
func (e *Env) SetHooks(h *TimerHooks) { e.hooks = h }

// ResetTimer zeroes the elapsed time and allocation count and starts timing.
func (e *Env) ResetTimer() {
	if e.hooks != nil {
		if e.running {
			e.hooks.Stop(time.Since(e.start)) // what ran since the last start was set-up
		}
		e.hooks.Reset()
	}
	e.elapsed, e.allocs, e.faults = 0, 0, 0
	e.seg = SegmentCounts{}
	e.running = false
	e.StartTimer()
}

// StartTimer starts or resumes timing. The clock is read last, so the
// counters' own cost (ReadMemStats stops the world; getrusage is a system
// call) stays outside the timed region; StopTimer reads the clock first for
// the same reason. The hooks' Start comes first of all.
func (e *Env) StartTimer() {
	if e.running {
		return
	}
	if e.hooks != nil {
		e.hooks.Start()
	}
	e.startAlloc = mallocs()
	e.startFlt = MinorFaults()
	e.running = true
	// The thread's switches last before the clock, so a preemption of
	// the counters' reads above is not counted in the segment.
	e.startTid, e.startIvcsw = threadSwitches()
	e.start = time.Now()
}

// StopTimer pauses timing. The hooks' Stop comes last of all.
func (e *Env) StopTimer() {
	if !e.running {
		return
	}
	d := time.Since(e.start)
	tid, ivcsw := threadSwitches() // first after the clock: see StartTimer
	e.elapsed += d
	e.seg.Segments++
	e.seg.Time += d
	switch {
	case tid != e.startTid || tid == 0:
		e.seg.Moved++
	case ivcsw > e.startIvcsw:
		e.seg.Preempted++
		e.seg.PreemptedTime += d
	}
	e.faults += MinorFaults() - e.startFlt
	e.allocs += mallocs() - e.startAlloc
	e.running = false
	if e.hooks != nil {
		e.hooks.Stop(d)
	}
}

// MinorFaults is the process's minor page faults so far (getrusage
// RUSAGE_SELF, ru_minflt): every thread's, so a fault taken by the Go
// runtime on another thread during the timed region counts too. A minor
// fault is a first touch of a page the kernel must zero or map (fresh heap
// or stack memory); it costs ~0.1–1 µs, so a figure with faults per
// operation near one is largely the kernel's memory, not the runtime's
// code. -1 if getrusage fails.
func MinorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Minflt
}

// threadSwitches reads the calling thread's switches for the timer:
// threadIvcsw; tests script it.
var threadSwitches = threadIvcsw

// threadIvcsw is the calling thread's id and its involuntary context
// switches so far (getrusage RUSAGE_THREAD, ru_nivcsw); 0, 0 if either
// read fails.
func threadIvcsw() (tid int, ivcsw int64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0
	}
	return unix.Gettid(), ru.Nivcsw
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// Int returns the integer parameter key, panicking with a clear message if
// it is missing or not an integer: the harness validates parameters before
// a body runs, so this is a programming error.
func (e *Env) Int(key string) int {
	v, ok := e.Params[key]
	if !ok {
		panic(fmt.Sprintf("scenarios: parameter %q not set", key))
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("scenarios: parameter %s=%q is not an integer", key, v))
	}
	return n
}

// Timing reports whether the timed region is running (between StartTimer
// and StopTimer): for tests that check what a body leaves out of it.
func (e *Env) Timing() bool { return e.running }

// Elapsed is the timed region's wall time so far (stopped segments only).
func (e *Env) Elapsed() time.Duration { return e.elapsed }

// Allocs is the heap allocations in the timed region so far (stopped
// segments only).
func (e *Env) Allocs() uint64 { return e.allocs }

// Faults is the minor page faults in the timed region so far (stopped
// segments only; see MinorFaults).
func (e *Env) Faults() int64 { return e.faults }

// Segments is the count of the timed region's segments so far and of
// those preempted (stopped segments only; see SegmentCounts).
func (e *Env) Segments() SegmentCounts { return e.seg }

// LoadgenCommand returns the command that runs the echo scenario's load
// generator (loadgen.Main) in a process of its own, with args. benchrun
// passes one (driver.Options.Loadgen) that re-executes itself with its
// hidden loadgen subcommand; tests pass one that re-executes the test
// binary.
type LoadgenCommand func(ctx context.Context, args []string) *exec.Cmd

// ReexecLoadgen returns a LoadgenCommand that runs this program's own
// executable with subcommand followed by the generator's args.
func ReexecLoadgen(subcommand string) LoadgenCommand {
	return func(ctx context.Context, args []string) *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		return exec.CommandContext(ctx, exe, append([]string{subcommand}, args...)...)
	}
}
