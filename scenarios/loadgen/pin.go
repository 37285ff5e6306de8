package loadgen

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// PinCPUs picks two different cores of the calling thread's allowed set,
// one for the echo server and one for the generator, in ascending order.
// ok is false when fewer than two cores are allowed: then nothing is
// pinned, since server and generator would have to share a core anyway.
func PinCPUs() (server, client int, ok bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return -1, -1, false
	}
	server, client = -1, -1
	for cpu := 0; cpu < len(set)*64; cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		if server < 0 {
			server = cpu
		} else {
			return server, cpu, true
		}
	}
	return -1, -1, false
}

// PinProcess pins every thread of this process to cpu and returns a
// function that undoes it.
//
// sched_setaffinity applies to one thread, and a Go process has several:
// so every thread listed in /proc/self/task is pinned. Threads the runtime
// creates later are cloned from a pinned one and inherit the pin, so restore
// lists the threads again and gives every one the affinity it had, or, for
// a thread born while pinned, the calling thread's former affinity.
func PinProcess(cpu int) (restore func() error, err error) {
	var pinned, orig unix.CPUSet
	pinned.Set(cpu)
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	olds := make(map[int]unix.CPUSet, len(tids))
	restore = func() error {
		tids, err := threads()
		if err != nil {
			return err
		}
		var errs []error
		for _, tid := range tids {
			set, ok := olds[tid]
			if !ok {
				set = orig
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				errs = append(errs, fmt.Errorf("restoring thread %d's affinity: %w", tid, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, tid := range tids {
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &old); err != nil {
			if err == unix.ESRCH {
				continue // the thread exited meanwhile
			}
			return nil, errors.Join(fmt.Errorf("sched_getaffinity of thread %d: %w", tid, err), restore())
		}
		olds[tid] = old
		if err := unix.SchedSetaffinity(tid, &pinned); err != nil && err != unix.ESRCH {
			return nil, errors.Join(fmt.Errorf("pinning thread %d to cpu %d: %w", tid, cpu, err), restore())
		}
	}
	return restore, nil
}

// threads lists this process's thread ids.
func threads() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing this process's threads: %w", err)
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
