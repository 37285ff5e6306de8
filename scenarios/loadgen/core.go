package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The echo server's cost per request on its core (the echo scenario's
// cpu-ns/req metric, and the trivial server's in a -self-echo Report).
//
// Below its knee a row is not what limits the load, so its achieved rate
// says nothing about how much more it could take; what it spends per
// request does. An echo cell pins its server's process to one core, and on
// loopback that core also runs the kernel's TCP path for every reply the
// server sends (the sender pays the receiver's softirq), so the measure is
// the core's busy time (everything but idle and iowait, softirq included)
// over the timed window, divided by the requests served in it. 1e9 over it
// is a lower bound on the rate one such core sustains (the cost per request
// falls as the load rises: wake-ups and system calls are shared by more
// requests); the report ranks rows by it, at one common rate, where the
// generator's ceiling caps the measured knee. See docs/design.md §6
// (Measurement).
//
// Why the core's idle time and not the server thread's own CPU time: on
// the reference VM the thread's scheduler runtime (getrusage RUSAGE_THREAD,
// schedstat) read 85% where perf's samples on that core gave the server's
// thread 93% and the core 95% busy, and /proc/stat 96% busy (trivial
// server at 200k req/s): work done on the core outside the thread's
// accounted runtime (softirq run from the idle task, wake-up IPIs) is the
// server's cost too, since nothing else of ours runs there. (Other tenants
// of the core are counted too: that is the measure's noise on a shared
// machine, which the report's ties allow for.)
//
// Sources, most precise first: the cpuidle driver's per-state residency
// (/sys/devices/system/cpu/cpuN/cpuidle/state*/time, µs; POLL included:
// polling for work is idle), else /proc/stat's idle + iowait for the core
// (USER_HZ = 10 ms units: coarse over a 0.2 s window, so only a fallback).
// Without a pinned core (one allowed CPU) there is no core of the
// server's own: the process's CPU time (getrusage RUSAGE_SELF) stands in.
//
// A sample taken from another core (the -self-echo generator reads its
// server's) misses that core's idle period in progress, since cpuidle
// counts a period when it ends: the busy time can read high by the idle
// period in progress at the window's start (the server waiting for the
// first request) and low by the one at its end. An echo cell reads its own
// core, which is busy while it reads.
//
// The reads are plain pread system calls on descriptors opened before the
// window, into a buffer allocated then: safe on a coroutine's own stack
// (no goroutine park) and nothing allocated inside the window.

// CoreSource names where a CoreMeter's idle time comes from.
type CoreSource int

const (
	CoreCPUIdle  CoreSource = iota // cpuidle state residency, µs
	CoreProcStat                   // /proc/stat idle + iowait, USER_HZ
	CoreProcess                    // no core: the process's CPU time
)

// The counters' paths (variables for the tests, which point them at files
// of their own).
var (
	cpuSysRoot   = "/sys/devices/system/cpu"
	procStatPath = "/proc/stat"
)

// userHZ is the unit of /proc/stat's times: fixed at 100 by the kernel's
// ABI, whatever the kernel's tick rate.
const userHZ = 100

// CoreMeter measures one core's busy time, or the process's CPU time when
// cpu < 0.
type CoreMeter struct {
	cpu    int
	source CoreSource
	fds    []int  // the files read per sample; closed by Close
	buf    []byte // read buffer, sized when opened
	// start is the sample at the window's start and err what taking it
	// said; valid after Begin.
	start coreSample
	err   error
}

// coreSample is one reading: monotonic time and, for a core, its
// cumulative idle time; for the process, its cumulative CPU time.
type coreSample struct {
	at, idle, proc int64 // ns
}

// OpenCoreMeter opens the counters of cpu (cpu < 0: the process's CPU
// time). It never fails outright: a core whose counters cannot be read
// falls back to the next source, and the process's CPU time always reads.
func OpenCoreMeter(cpu int) *CoreMeter {
	m := &CoreMeter{cpu: cpu, source: CoreProcess}
	if cpu < 0 {
		return m
	}
	for state := 0; ; state++ {
		fd, err := unix.Open(fmt.Sprintf("%s/cpu%d/cpuidle/state%d/time", cpuSysRoot, cpu, state), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		m.fds = append(m.fds, fd)
	}
	if len(m.fds) > 0 {
		m.source, m.buf = CoreCPUIdle, make([]byte, 64)
		if _, err := m.sample(); err == nil {
			return m
		}
		m.Close()
	}
	if fd, err := unix.Open(procStatPath, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		m.fds, m.source, m.buf = []int{fd}, CoreProcStat, make([]byte, 256<<10)
		if _, err := m.sample(); err == nil {
			return m
		}
		m.Close()
	}
	m.source = CoreProcess
	return m
}

// sample reads the counters now .
func (m *CoreMeter) sample() (coreSample, error) {
	s := coreSample{at: monotonic()}
	switch m.source {
	case CoreCPUIdle:
		for _, fd := range m.fds {
			n, err := unix.Pread(fd, m.buf, 0)
			if err != nil {
				return s, fmt.Errorf("reading cpu%d's idle residency: %w", m.cpu, err)
			}
			us, err := strconv.ParseInt(string(bytes.TrimSpace(m.buf[:n])), 10, 64)
			if err != nil {
				return s, fmt.Errorf("cpu%d's idle residency %q: %w", m.cpu, m.buf[:n], err)
			}
			s.idle += us * 1000
		}
	case CoreProcStat:
		n, err := unix.Pread(m.fds[0], m.buf, 0)
		if err != nil {
			return s, fmt.Errorf("reading /proc/stat: %w", err)
		}
		ticks, err := procStatIdle(m.buf[:n], m.cpu)
		if err != nil {
			return s, err
		}
		s.idle = ticks * (int64(time.Second) / userHZ)
	case CoreProcess:
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			return s, fmt.Errorf("getrusage: %w", err)
		}
		s.proc = ru.Utime.Nano() + ru.Stime.Nano()
	}
	return s, nil
}

// Begin takes the window's first sample.
func (m *CoreMeter) Begin() {
	m.start, m.err = m.sample()
}

// End takes the window's last sample and returns the busy time per
// request over the window (ns).
func (m *CoreMeter) End(requests int) (float64, error) {
	if m.err != nil {
		return 0, m.err
	}
	s, err := m.sample()
	if err != nil {
		return 0, err
	}
	return costPerRequest(m.source, m.start, s, requests)
}

// costPerRequest is the busy time between samples a and b per request:
// wall time less idle time for a core, CPU time for the process.
func costPerRequest(src CoreSource, a, b coreSample, requests int) (float64, error) {
	if requests <= 0 {
		return 0, fmt.Errorf("echo: cost per request over %d requests", requests)
	}
	if b.at <= a.at {
		return 0, errors.New("echo: the server core's window is empty")
	}
	var busy int64
	if src == CoreProcess {
		busy = b.proc - a.proc
	} else {
		// Idle counters and the clock are read at slightly different
		// moments (and /proc/stat's in 10 ms steps), so busy may come out
		// a little below zero on an idle core: that is zero.
		busy = max((b.at-a.at)-(b.idle-a.idle), 0)
	}
	return float64(busy) / float64(requests), nil
}

// procStatIdle returns idle + iowait (USER_HZ ticks) of cpu's line of
// /proc/stat ("cpuN user nice system idle iowait irq softirq …").
func procStatIdle(stat []byte, cpu int) (int64, error) {
	prefix := []byte("cpu" + strconv.Itoa(cpu) + " ")
	for line := range bytes.SplitSeq(stat, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 5 {
			return 0, fmt.Errorf("/proc/stat: cpu%d's line has %d fields, want at least 5 (user nice system idle iowait)", cpu, len(f))
		}
		var sum int64
		for _, v := range f[3:5] {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat: cpu%d: %w", cpu, err)
			}
			sum += n
		}
		return sum, nil
	}
	return 0, fmt.Errorf("/proc/stat has no line for cpu%d", cpu)
}

func (m *CoreMeter) Close() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
	m.fds = nil
}

// Source names what the meter reads, for a reader of its figures.
func (m *CoreMeter) Source() string {
	switch m.source {
	case CoreCPUIdle:
		return fmt.Sprintf("cpu%d's busy time (cpuidle residency)", m.cpu)
	case CoreProcStat:
		return fmt.Sprintf("cpu%d's busy time (/proc/stat idle and iowait)", m.cpu)
	}
	return "the process's CPU time (no core of its own)"
}

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
