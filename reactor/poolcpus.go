package reactor

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Pool thread placement (Options.PoolCPUs).
//
// Why the loop's owner may want it: a hand-off to the pool and back costs
// what waking a sleeping thread costs, and that depends on where the two
// threads run. On the 2-vCPU KVM guest this suite was built on, two threads
// ping-ponging through a futex on one CPU paid ~2 µs a round trip, on two
// CPUs ~40–60 µs (an idle vCPU has to be woken by the host). Left to the
// kernel, a loop and its pool thread sometimes shared a CPU (the scheduler
// places a wakee near its waker when that looks cheap) and sometimes not,
// and the choice stuck for a while: the same FileIO c=1 cell read ~4 µs
// per read in some runs and ~55 µs in others, CV 31–62% over a full run's
// repetitions. A loop that keeps its own thread on one CPU and names the
// others here makes every hand-off cross CPUs, as it does for a libuv pool
// thread on another core of a machine whose loop keeps its core busy.

// checkPoolCPUs refuses a PoolCPUs set that names an impossible CPU, or one
// that no thread of this process may run on (the kernel's EINVAL: none of
// them is in the process's cpuset). It tries the set on a thread of its
// own, so the caller's thread keeps its affinity.
func checkPoolCPUs(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	set, err := poolCPUSet(cpus)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread exits with this goroutine, so the
		// affinity it tried leaves with it and no other goroutine runs
		// on a thread moved here.
		runtime.LockOSThread()
		errc <- unix.SchedSetaffinity(0, &set)
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("reactor: Options.PoolCPUs %v: no thread of this process may run there (sched_setaffinity: %w); name CPUs this process is allowed (taskset -p <pid> lists them)", cpus, err)
	}
	return nil
}

// poolCPUSet is cpus as a CPU set, or an error naming a CPU number no set
// can hold.
func poolCPUSet(cpus []int) (unix.CPUSet, error) {
	var set unix.CPUSet
	limit := len(set) * 64 // bits in unix.CPUSet: the kernel's CPU_SETSIZE
	for _, cpu := range cpus {
		if cpu < 0 || cpu >= limit {
			return set, fmt.Errorf("reactor: Options.PoolCPUs names CPU %d; CPUs are numbered from 0 to %d", cpu, limit-1)
		}
		set.Set(cpu)
	}
	return set, nil
}

// placeThread moves the calling pool thread onto the pool's CPUs, if it
// has any. The set passed checkPoolCPUs when the loop was made, so a
// refusal now means the process's cpuset shrank under it: the pool cannot
// keep the placement it was asked for, and says so rather than run
// elsewhere.
func (p *threadPool) placeThread() {
	if p.cpus.Count() == 0 {
		return
	}
	if err := unix.SchedSetaffinity(0, &p.cpus); err != nil {
		panic(fmt.Sprintf("reactor: a pool thread cannot move to Options.PoolCPUs %v: sched_setaffinity: %v (the set was allowed when the loop was made; has the process's cpuset changed?)", p.loop.opts.PoolCPUs, err))
	}
}
