package reactor

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Trigger wakes the loop from another goroutine or thread, like libuv's
// uv_async_t. Signal is the only method in this package that may be called
// off the loop goroutine. Signals coalesce: any number of Signal calls
// between two firings fire the callback once. A Signal while the trigger is
// idle is remembered and fires after the next Start.
//
// All triggers of a loop share one eventfd; a Signal writes to it only when
// no earlier wakeup is still unconsumed, so a burst of signals costs one
// write and one read.
type Trigger struct {
	event
	pending atomic.Uint32 // 1 between Signal and the firing that covers it
	index   int           // position in loop.triggers
}

// NewTrigger creates an idle trigger that runs cb on the loop goroutine.
func (l *Loop) NewTrigger(cb func()) *Trigger {
	t := &Trigger{event: newEvent(l, cb, "Trigger"), index: len(l.triggers)}
	l.triggers = append(l.triggers, t)
	return t
}

// Signal marks the trigger pending and wakes the loop. Safe from any
// goroutine, at any time, also during and after Loop.Close (then a no-op).
func (t *Trigger) Signal() {
	if t.pending.Load() != 0 || !t.pending.CompareAndSwap(0, 1) {
		return // an earlier Signal has not been delivered yet
	}
	t.loop.wakeUp()
}

// wakeUp makes a blocking epoll wait return. Ordering argument (Go atomics
// are sequentially consistent): the caller set its pending flag before
// loading wakePending; the loop clears wakePending before loading the
// pending flags (onWake). So either we see 0 and write, or the loop's scan
// runs after our flag store and sees it.
func (l *Loop) wakeUp() {
	if l.wakePending.Load() != 0 || !l.wakePending.CompareAndSwap(0, 1) {
		return
	}
	// signalling brackets the write so that Close can wait for it: the
	// eventfd number must not be closed, and reused, under our feet.
	l.signalling.Add(1)
	if !l.closedShared.Load() {
		one := [8]byte{1}
		for {
			_, err := unix.Write(l.wake.fd, one[:])
			if err != unix.EINTR {
				break // EAGAIN would need 2^64-1 unread signals
			}
		}
		l.wakeups.Add(1)
	}
	l.signalling.Add(-1)
}

// Start lets the trigger fire; if it was signalled while idle it fires in
// the next Tick.
func (t *Trigger) Start() {
	if t.activate("Trigger") && t.pending.Load() != 0 {
		t.loop.enqueue(t, &t.queued)
	}
}

// Stop stops firing; signals still accumulate (coalesced) until Start.
func (t *Trigger) Stop() { t.deactivate() }

// Close releases the trigger. Signal on a closed trigger is harmless.
func (t *Trigger) Close() {
	if t.state == stateClosed {
		return
	}
	t.release()
	l := t.loop
	if l.closed {
		return
	}
	last := l.triggers[len(l.triggers)-1]
	l.triggers[t.index] = last
	last.index = t.index
	l.triggers[len(l.triggers)-1] = nil
	l.triggers = l.triggers[:len(l.triggers)-1]
}

// fireQueued consumes the pending flag and fires.
func (t *Trigger) fireQueued() {
	t.queued = false
	if t.state == stateActive && t.pending.Swap(0) != 0 {
		t.fire()
	}
}
