package reactor

import "time"

// Timer fires its callback once when the monotonic clock reaches its
// deadline. Deadlines are nanoseconds on the loop's clock (see Loop.Now).
// Timers with equal deadlines fire in the order they were started.
type Timer struct {
	event
	deadline int64
	index    int // position in loop.timers, -1 when not in the heap
}

// NewTimer creates an idle timer that will run cb when it fires.
func (l *Loop) NewTimer(cb func()) *Timer {
	return &Timer{event: newEvent(l, cb, "Timer"), index: -1}
}

// Start arms the timer to fire d after Now() (the cached loop time; call
// UpdateTime first for a fresh base). A negative d counts as zero. Starting
// an active timer re-arms it: it moves behind timers already due at the new
// deadline.
func (t *Timer) Start(d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.StartAt(t.loop.now + int64(d))
}

// StartAt arms the timer for an absolute deadline on the loop's clock. A
// deadline before Now() is treated as Now(): the timer fires in the next timer
// phase, after the timers that were already due.
func (t *Timer) StartAt(deadline int64) {
	l := t.loop
	if !t.activate("Timer") {
		l.timers.remove(t.index)
	}
	if deadline < l.now {
		deadline = l.now
	}
	t.deadline = deadline
	l.seq++
	l.timers.push(timerEntry{deadline: deadline, seq: l.seq, t: t})
}

// Stop disarms the timer; it is a no-op on an idle timer. Safe inside any
// callback, including the callback of another timer due at the same time.
func (t *Timer) Stop() {
	if t.state == stateActive {
		t.loop.timers.remove(t.index)
		t.deactivate()
	}
}

// Close stops the timer and releases it; it must not be started again.
func (t *Timer) Close() {
	t.Stop()
	t.release()
}

// Deadline returns the deadline of the last Start.
func (t *Timer) Deadline() int64 { return t.deadline }

// runTimers fires the timers due at the cached time, in (deadline, seq)
// order. Only timers started before the phase began may fire: a callback
// that starts a timer with a zero delay gets it in the next tick, not in an
// endless loop here. Such a timer's deadline is >= now and its seq is above
// the limit, while every older due timer sorts before it (earlier deadline,
// or equal deadline and smaller seq), so stopping at the first new one skips
// no old one.
func (l *Loop) runTimers() {
	limit := l.seq
	for l.timers.len() > 0 {
		top := l.timers.min()
		if top.deadline > l.now || top.seq > limit {
			return
		}
		t := top.t
		l.timers.remove(0)
		t.fire()
	}
}

// timerEntry is one heap slot. The key (deadline, seq) lives in the slot, so
// sifting compares without touching the Timer.
type timerEntry struct {
	deadline int64
	seq      uint64
	t        *Timer
}

func (a *timerEntry) less(b *timerEntry) bool {
	return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq)
}

// timerHeap is a 4-ary min-heap: half the depth of a binary heap, and the
// four children of a node share one or two cache lines. Every Timer in it
// knows its index, so removal of any timer is O(log n).
type timerHeap struct{ a []timerEntry }

func (h *timerHeap) len() int         { return len(h.a) }
func (h *timerHeap) min() *timerEntry { return &h.a[0] }
func (h *timerHeap) set(i int, e timerEntry) {
	h.a[i] = e
	e.t.index = i
}

func (h *timerHeap) push(e timerEntry) {
	h.a = append(h.a, e)
	h.up(len(h.a)-1, e)
}

// remove deletes slot i, moving the last entry into the hole.
func (h *timerHeap) remove(i int) {
	h.a[i].t.index = -1
	last := len(h.a) - 1
	e := h.a[last]
	h.a[last] = timerEntry{} // drop the pointer for the GC
	h.a = h.a[:last]
	if i == last {
		return
	}
	if i > 0 && e.less(&h.a[(i-1)/4]) {
		h.up(i, e)
	} else {
		h.down(i, e)
	}
}

// up places e at slot i or above.
func (h *timerHeap) up(i int, e timerEntry) {
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h.a[p]) {
			break
		}
		h.set(i, h.a[p])
		i = p
	}
	h.set(i, e)
}

// down places e at slot i or below.
func (h *timerHeap) down(i int, e timerEntry) {
	n := len(h.a)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h.a[j].less(&h.a[m]) {
				m = j
			}
		}
		if !h.a[m].less(&e) {
			break
		}
		h.set(i, h.a[m])
		i = m
	}
	h.set(i, e)
}
