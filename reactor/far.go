package reactor

// farTimers holds the timers due from the next bucket boundary on, unsorted,
// in a ring of buckets of 1<<farShift ns; the heap and the sorted run
// (timerRun) hold the rest. A timer is appended to its bucket (no
// sifting), and a bucket moves out (farSync) once the loop's time reaches
// its start: sorted once onto the end of the run, so the heap holds only
// the timers started within a bucket's width of their deadline (and those
// past the ring's span). At the Timer scenario's 4M wakes/s about 500 of
// 10000 sleepers are in the current bucket. BenchmarkTimerChurn's loop at
// ~64 due per phase, before the ring: 1000 timers 49.6, 2000 54.1, 10000
// 74.5 cpu-ns per firing and re-arm. Deadlines past the ring's span go to
// the heap, as before.
//
// Invariants: every entry in the ring has deadline >= start (a multiple of
// the width) and < start + farBuckets widths, and sits in bucket
// (deadline/width) mod farBuckets, its node's index marking (bucket,
// position) (farMark). The heap and the run may hold any deadline; so the
// earlier of the heap's minimum and the run's head (nearest) is the
// earliest timer of all whenever the ring is empty or it is before start
// (farEnsureMin), and every timer due by t is in the heap or the run after
// farSync(t). Entries keep their seq, so the firing order is (deadline,
// start order) as before, and a node started in a timer phase still waits
// for a later one (runTimers moves buckets before it fires).
type farTimers struct {
	start int64
	n     int // entries in the ring
	b     [farBuckets][]timerEntry
}

// farShift sets the bucket width, 1<<farShift ns: 131 µs. cpu-ns per
// firing and re-arm (taskset -c 0, 5 runs, the loop of BenchmarkTimerChurn
// with the bucket width set): 10000 timers at ~64 due per phase 66.5 at
// 131 µs, 68.8 at 262 µs, 84.6 without the ring; 100000 timers at 100 µs
// phases 78.7, 123.2 and 104.6: wider buckets move more timers into the
// heap at once, which then sift through a bigger heap (measured when a
// bucket moved into the heap, before the sorted run; not re-measured
// since). A variable only so
// that tests can shrink the buckets to the nanosecond deadlines of a fake
// clock (FuzzTimers runs every input with the ring and without).
var farShift uint = 17

// farBuckets is the ring's size: 64 buckets of 131 µs span 8.4 ms, past
// the Timer scenario's longest sleep (5 ms).
const farBuckets = 64

const (
	// farBase marks a node in the ring: farBase + bucket<<32 + position,
	// between the pending marks (below pendingLimit) and the batch marks.
	farBase  = pendingLimit / 2
	farLimit = farBase / 2 // marks below it (and at or above pendingLimit) are ring marks
)

func farMark(k, pos int) int { return farBase + k<<32 + pos }

// insertTimer arms entry e: in the ring if its deadline falls in the ring's
// span, else in the heap.
func (l *Loop) insertTimer(e timerEntry) {
	f := &l.far
	if f.n == 0 {
		// An empty ring restarts at the next bucket boundary: the heap
		// keeps what is due before it.
		f.start = (l.now>>farShift + 1) << farShift
	}
	// A timer due within a bucket's width of the cached time goes to the
	// heap whatever start says: start lags behind the time between two
	// phases, and such a timer would move into the heap at the next one
	// anyway (BenchmarkTimerWake's 1 µs sleeps: +22% through the ring).
	if d := e.deadline; d >= f.start && d >= l.now+1<<farShift && uint64(d-f.start)>>farShift < farBuckets {
		k := int(d>>farShift) & (farBuckets - 1)
		e.t.index = farMark(k, len(f.b[k]))
		f.b[k] = append(f.b[k], e)
		f.n++
		return
	}
	l.timers.push(e)
}

// farRemove takes the node with ring mark idx out of the ring.
func (l *Loop) farRemove(idx int) {
	f := &l.far
	k, pos := (idx-farBase)>>32, (idx-farBase)&(1<<32-1)
	b := f.b[k]
	last := len(b) - 1
	if pos != last {
		b[pos] = b[last]
		b[pos].t.index = farMark(k, pos)
	}
	b[last] = timerEntry{} // drop the pointer for the GC
	f.b[k] = b[:last]
	f.n--
}

// farMove moves the ring's first bucket into the sorted run (timerrun.go) or,
// when the run's last deadline is not before the bucket's start (the ring
// restarted behind buckets already moved), into the heap, and advances
// start. Every entry of the bucket has deadline >= start, so a run whose
// last deadline is before start stays sorted with the bucket appended.
func (l *Loop) farMove() {
	f := &l.far
	k := int(f.start>>farShift) & (farBuckets - 1)
	b := f.b[k]
	if r := &l.run; len(b) > 0 && (r.h == len(r.a) || r.a[len(r.a)-1].deadline < f.start) {
		l.runAppend(b)
	} else {
		for i := range b {
			l.timers.push(b[i])
		}
	}
	clear(b)
	f.b[k] = b[:0]
	f.n -= len(b)
	f.start += 1 << farShift
}

// farSync moves every bucket that starts at or before t out of the ring:
// then every timer due by t is in the heap or the run.
func (l *Loop) farSync(t int64) {
	for l.far.n > 0 && l.far.start <= t {
		l.farMove()
	}
}

// farEnsureMin moves buckets out of the ring until the earliest of the
// heap's minimum and the run's head (nearest) is the earliest timer of all
// (before the ring's start) or the ring is empty.
func (l *Loop) farEnsureMin() {
	for l.far.n > 0 {
		if e := l.nearest(); e != nil && e.deadline < l.far.start {
			return
		}
		l.farMove()
	}
}

// farClose leaves every node of the ring idle (Loop.Close).
func (l *Loop) farClose() {
	f := &l.far
	for k := range f.b {
		for i := range f.b[k] {
			f.b[k][i].t.index = -1
		}
		f.b[k] = nil
	}
	f.n = 0
}
