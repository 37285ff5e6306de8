package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Steal time: on a virtual machine the hypervisor may run another guest on
// the physical core while one of ours wants it; the guest kernel counts
// that time as "steal" in /proc/stat. A cell that lost a noticeable share
// of its wall time to steal measured the neighbour as much as itself, so
// the run reads the counter before and after every cell and marks the cell
// when the share is above stealMark.

// stealMark is the share of a cell's wall time (per CPU it ran on) above
// which the cell is marked as taken under steal.
const stealMark = 0.01

// userHZ is the unit of /proc/stat's counters: the kernel exports them in
// USER_HZ ticks, which is 100 per second on every Linux architecture Go
// supports (sysconf(_SC_CLK_TCK)). So a reading moves in 10 ms steps: a
// cell shorter than a second is marked as soon as one tick of steal falls
// in it.
const userHZ = 100

// stealSample is the steal counter over a set of CPUs at one moment.
type stealSample struct {
	ticks uint64
	cpus  int // how many CPUs the counter sums
	// busy is the same CPUs' busy time in ticks (user, nice, system,
	// irq, softirq): with a child's own CPU time taken off, what the
	// rest of the machine ran beside it (othersOver).
	busy uint64
}

// readSteal reads the steal column of /proc/stat for cpu, or for the whole
// machine (the "cpu" line, summing every CPU) when cpu < 0.
func readSteal(path string, cpu int) (stealSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return stealSample{}, err
	}
	defer f.Close()
	return parseSteal(bufio.NewScanner(f), cpu)
}

// readStealText is readSteal on /proc/stat's text.
func readStealText(text string, cpu int) (stealSample, error) {
	return parseSteal(bufio.NewScanner(strings.NewReader(text)), cpu)
}

func parseSteal(sc *bufio.Scanner, cpu int) (stealSample, error) {
	want := "cpu"
	if cpu >= 0 {
		want = "cpu" + strconv.Itoa(cpu)
	}
	var s stealSample
	found := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			s.cpus++ // a per-CPU line
		}
		if fields[0] != want {
			continue
		}
		// cpuN user nice system idle iowait irq softirq steal ...
		if len(fields) < 9 {
			return stealSample{}, fmt.Errorf("/proc/stat line %q has no steal column", sc.Text())
		}
		v, err := strconv.ParseUint(fields[8], 10, 64)
		if err != nil {
			return stealSample{}, fmt.Errorf("/proc/stat line %q: steal: %w", sc.Text(), err)
		}
		s.ticks, found = v, true
		s.busy = 0
		for _, i := range []int{1, 2, 3, 6, 7} {
			b, err := strconv.ParseUint(fields[i], 10, 64)
			if err != nil {
				return stealSample{}, fmt.Errorf("/proc/stat line %q: column %d: %w", sc.Text(), i, err)
			}
			s.busy += b
		}
	}
	if err := sc.Err(); err != nil {
		return stealSample{}, err
	}
	if !found {
		return stealSample{}, fmt.Errorf("/proc/stat has no %q line", want)
	}
	if cpu >= 0 {
		s.cpus = 1
	}
	return s, nil
}

// stealOver is the steal between two samples as time and as a share of
// wall × the CPUs the counter covers.
func stealOver(before, after stealSample, wall time.Duration) (stolen time.Duration, share float64) {
	if after.ticks < before.ticks || wall <= 0 || after.cpus == 0 {
		return 0, 0
	}
	stolen = time.Duration(after.ticks-before.ticks) * (time.Second / userHZ)
	return stolen, float64(stolen) / (float64(wall) * float64(after.cpus))
}

// othersOver is the CPU time the rest of the machine (every task but the
// child, benchrun's own threads included) ran on the sampled CPUs between
// two samples, given the child's own CPU time, as time and as a share of
// wall × the CPUs. The counters move in 10 ms ticks, so it is coarse: a
// figure for a whole child, not for one of its runs.
func othersOver(before, after stealSample, own, wall time.Duration) (others time.Duration, share float64) {
	if after.busy < before.busy || wall <= 0 || after.cpus == 0 {
		return 0, 0
	}
	others = max(0, time.Duration(after.busy-before.busy)*(time.Second/userHZ)-own)
	return others, float64(others) / (float64(wall) * float64(after.cpus))
}
