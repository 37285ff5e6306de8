package harness

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/futex"
	"github.com/corobench/corobench/scenarios/bodies"
)

// The machine's thread hand-off floor: what one round trip between two OS
// threads through a futex costs here, each waking the other from a sleep,
// with nothing of ours in the way. It is what every hand-off to a thread
// pool and back stands on: the stackful and stackless rows run the work of
// the pool scenarios (offload, fileio, dns; Scenario.UsesPool) on the
// reactor's pool, whose workers are goroutines locked to their threads
// sleeping in the same futex wait (internal/futex) when idle, so each
// operation wakes a sleeping thread on another CPU and is woken back; the goroutine rows compute inline or
// block their own thread and never pay it. On a KVM guest waking a thread
// on another vCPU is slow (an IPI, and a halted vCPU the host has to
// resume): bare futex ping-pong between two C threads read 33–58 µs per
// round trip on the 2-vCPU VM these notes come from, against 1.5 µs with
// both threads on one CPU. The report sets the pool rows' figures against
// it, so that a reader can tell the machine's cost from the rows'. See
// docs/design.md §6 (Measurement).
//
// Measured as a pool's submitter and worker hand off, with the bare
// primitive (FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE on one word, as glibc's
// condition variables and Go's notesleep use): thread A, on the cells'
// CPU, sets the word to "yours" and wakes B, then sleeps until B sets it
// back; B, on another allowed CPU, sleeps until the word is "yours", sets
// it to "mine" and wakes A. A round trip is timed on A, from before its
// store to after its wake. Neither thread spins, so every hand-off is a
// wake from sleep, as in a pool that is idle between operations.

// The futex word's states.
const (
	wakeMine  uint32 = iota // A's turn: B sleeps
	wakeYours               // B's turn: A sleeps
	wakeStop                // B returns
)

// wakeFutexTimeout bounds each futex wait: a thread that is not woken
// within it ends the measurement with an error instead of hanging the run.
const wakeFutexTimeout = 2 * time.Second

// threadWakeFloor is the distribution of the round trips.
type threadWakeFloor struct {
	cpuA, cpuB int  // CPUs of A (the cells') and B; -1 for unpinned
	oneCPU     bool // only one CPU was allowed: A and B share it
	warmup     int
	samples    []int64 // ns per round trip
	p50, p99   int64   // ns
}

// wakeCPUs chooses the CPUs of A and B from the allowed set: A on cellCPU
// (the cells' CPU) when it is allowed, else on the last allowed CPU (where
// newPinPlan would put the cells); B on the lowest allowed CPU other than
// A's. With one CPU allowed both go on it and oneCPU says so; with none
// (an empty set, which the kernel never gives) both are -1 (unpinned).
func wakeCPUs(allowed *unix.CPUSet, cellCPU int) (a, b int, oneCPU bool) {
	a, b = -1, -1
	n := len(allowed) * 64
	if cellCPU >= 0 && cellCPU < n && allowed.IsSet(cellCPU) {
		a = cellCPU
	} else {
		for cpu := 0; cpu < n; cpu++ {
			if allowed.IsSet(cpu) {
				a = cpu
			}
		}
	}
	if a < 0 {
		return -1, -1, false
	}
	for cpu := 0; cpu < n; cpu++ {
		if cpu != a && allowed.IsSet(cpu) {
			return a, cpu, false
		}
	}
	return a, a, true
}

// measureThreadWakeFloor times rounds round trips between two locked
// threads, after warmup untimed ones, on the CPUs wakeCPUs chooses from
// allowed. The threads end with their goroutines (they stay locked), so
// their affinity is not left to any other goroutine.
func measureThreadWakeFloor(rounds, warmup int, allowed *unix.CPUSet, cellCPU int) (*threadWakeFloor, error) {
	if rounds < 1 || warmup < 0 {
		return nil, fmt.Errorf("thread wake floor: want at least one round trip and no negative warm-up, got %d and %d", rounds, warmup)
	}
	tf := &threadWakeFloor{warmup: warmup, samples: make([]int64, 0, rounds)}
	tf.cpuA, tf.cpuB, tf.oneCPU = wakeCPUs(allowed, cellCPU)
	var word atomic.Uint32
	bErr := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the thread exits with the
		// goroutine, taking its pinned affinity along.
		runtime.LockOSThread()
		bErr <- wakeWorker(&word, tf.cpuB)
	}()
	aDone := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, as B's
		aDone <- wakeSubmitter(&word, tf)
	}()
	aerr := <-aDone
	berr := <-bErr
	if err := errors.Join(aerr, berr); err != nil {
		return nil, err
	}
	tf.p50, tf.p99 = bodies.LatencyPercentiles(tf.samples)
	return tf, nil
}

// wakeSubmitter is thread A: it hands the word to B and sleeps until B
// hands it back, warmup + len(samples) times, then tells B to stop. It
// tells B to stop on an error too, so that B does not wait out its
// timeout.
func wakeSubmitter(word *atomic.Uint32, tf *threadWakeFloor) (err error) {
	defer func() {
		word.Store(wakeStop)
		if werr := floorWake(word); werr != nil && err == nil {
			err = werr
		}
	}()
	restore, err := pinThread(tf.cpuA)
	if err != nil {
		return err
	}
	defer restore()
	// The round trips to time are the buffer's capacity
	// (measureThreadWakeFloor sizes it): no append allocates inside
	// the loop.
	for i := range tf.warmup + cap(tf.samples) {
		start := nanotime()
		word.Store(wakeYours)
		if err := floorWake(word); err != nil {
			return err
		}
		for word.Load() == wakeYours {
			if err := floorWait(word, wakeYours); err != nil {
				return err
			}
		}
		rt := nanotime() - start
		if i >= tf.warmup {
			tf.samples = append(tf.samples, rt)
		}
	}
	return nil
}

// wakeWorker is thread B: it sleeps until the word is wakeYours, hands it
// back and wakes A, until the word is wakeStop.
func wakeWorker(word *atomic.Uint32, cpu int) error {
	restore, err := pinThread(cpu)
	if err != nil {
		return err
	}
	defer restore()
	for {
		v := word.Load()
		switch v {
		case wakeStop:
			return nil
		case wakeMine:
			if err := floorWait(word, wakeMine); err != nil {
				return err
			}
			continue
		}
		// A store, not a compare-and-swap: only A moves the word away
		// from wakeMine, and A sleeps until this store.
		word.Store(wakeMine)
		if err := floorWake(word); err != nil {
			return err
		}
	}
}

// pinThread pins the calling (locked) thread to cpu (-1 leaves it where
// it may run) and returns what gives it its former CPUs back. The threads
// are meant to die with their goroutines, still locked, but a thread ends
// some time after its goroutine has sent its result: given back first,
// no thread of the process is ever seen pinned after the floor.
func pinThread(cpu int) (restore func(), err error) {
	if cpu < 0 {
		return func() {}, nil
	}
	var prev, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &prev); err != nil {
		return nil, fmt.Errorf("thread wake floor: reading the thread's CPUs: %w", err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return nil, fmt.Errorf("thread wake floor: pinning to cpu %d: %w", cpu, err)
	}
	return func() { _ = unix.SchedSetaffinity(0, &prev) }, nil
}

// floorWait is futex.Wait with wakeFutexTimeout, its errors named for
// the floor.
func floorWait(word *atomic.Uint32, val uint32) error {
	switch err := futex.Wait(word, val, wakeFutexTimeout); {
	case errors.Is(err, futex.ErrTimeout):
		return fmt.Errorf("thread wake floor: the other thread did not hand the futex word back within %v", wakeFutexTimeout)
	case err != nil:
		return fmt.Errorf("thread wake floor: %w", err)
	}
	return nil
}

// floorWake wakes the other thread if it sleeps on word.
func floorWake(word *atomic.Uint32) error {
	if err := futex.Wake(word, 1); err != nil {
		return fmt.Errorf("thread wake floor: %w", err)
	}
	return nil
}

// config is the thread-wake-floor-os config value. It starts "p50=…ns
// p99=…ns", which the report parses as it parses timer-floor-os; the rest
// says what was measured.
func (tf *threadWakeFloor) config() string {
	var where string
	switch {
	case tf.cpuA < 0:
		where = "unpinned"
	case tf.oneCPU:
		where = fmt.Sprintf("cpu%d<->cpu%d: one CPU allowed, both threads share it, so no cross-CPU wake is measured", tf.cpuA, tf.cpuB)
	default:
		where = fmt.Sprintf("cpu%d<->cpu%d", tf.cpuA, tf.cpuB)
	}
	var sum int64
	for _, s := range tf.samples {
		sum += s
	}
	mean := time.Duration(sum / int64(max(1, len(tf.samples))))
	return fmt.Sprintf("p50=%dns p99=%dns (%d round trips of two OS threads through a futex, %s, FUTEX_WAIT_PRIVATE/FUTEX_WAKE_PRIVATE, no spinning, after %d warm-up, mean %v)",
		tf.p50, tf.p99, len(tf.samples), where, tf.warmup, mean.Round(100*time.Nanosecond))
}

// threadWakeFloorConfig is the config value of a floor that could not be
// measured: why, in place of the figures (the report reads no p50 from it
// and says so).
func threadWakeFloorConfig(tf *threadWakeFloor, err error) string {
	if err != nil {
		return "not measured: " + err.Error()
	}
	return tf.config()
}
