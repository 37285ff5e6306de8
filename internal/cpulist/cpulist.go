// Package cpulist reads and writes CPU lists in the kernel's format, as
// /sys/devices/system/cpu/online, cpuset files and taskset -c write them:
// CPU numbers and inclusive ranges, comma-separated ("0-3,6").
package cpulist

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Parse reads a CPU list. Every part must be a CPU number or a range lo-hi
// with lo <= hi, and no CPU may be listed twice; the CPUs come back in the
// order written.
func Parse(s string) ([]int, error) {
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not a CPU number or a range lo-hi", part)
		}
		for cpu := a; cpu <= b; cpu++ {
			if seen[cpu] {
				return nil, fmt.Errorf("CPU %d is listed twice", cpu)
			}
			seen[cpu] = true
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// Format writes cpus as Parse reads them, one number each.
func Format(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, cpu := range cpus {
		parts[i] = strconv.Itoa(cpu)
	}
	return strings.Join(parts, ",")
}

// Of lists the CPUs in set, ascending.
func Of(set *unix.CPUSet) []int {
	var cpus []int
	for cpu := 0; cpu < len(set)*64; cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}
