package loadgen

import "golang.org/x/sys/unix"

// affinities returns every thread's CPU set.
func affinities() (map[int]unix.CPUSet, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	sets := make(map[int]unix.CPUSet, len(tids))
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err == nil {
			sets[tid] = set
		}
	}
	return sets, nil
}
