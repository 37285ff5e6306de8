package stackful

import "unsafe"

// Event is a one-shot future: it is pending until Resolve or Reject fires it
// once; later calls are ignored. Reset makes a fired event pending again so
// that it can be reused without allocation (a reusable signal).
//
// Firing an event runs its subscribers in subscription order, in the current
// context and without switching: a coroutine awaiting it is enqueued, not run.
// The zero value is a pending event.
type Event struct {
	fired bool
	gen   uint32 // firings so far: a firing reaches only subscriptions linked before it
	value any
	err   error
	// one is the event's only subscriber, kept here instead of in the
	// list: the common wait (one coroutine awaiting one event, as in every
	// hand-off) then costs a store to link and one to unlink, not the
	// list's links. Invariant: one != nil implies head == tail == nil (the
	// list is empty), so one is always the first subscriber in
	// subscription order; a second subscriber moves it into the list
	// first (linkList). While it is set, no firing has happened since it
	// was linked (a firing takes it out), so its generation is e.gen and
	// is written only when it moves to the list.
	one  *subscription
	head *subscription // subscribers, in subscription order (empty while one is set)
	tail *subscription
}

// callbackKind selects the standard waker callback of a subscription
// (docs/design.md §1, the waker: zend_async_waker_callback_resolve/cancel).
type callbackKind uint8

const (
	cbFunc    callbackKind = iota // run fn (a generic subscriber)
	cbResolve                     // wake the coroutine with the event's outcome
	// cbResolvePlain is cbResolve for a plain wait: Await (or AwaitWith
	// with no cancel event and no timeout) made it as subs[0], the wait's
	// only subscription, with mode modePlain and no timeout. Its kind
	// says all that, so that the hand-off's firing (Event.fire's fast
	// path, fireAll's case) tests one byte instead of nsubs, the
	// subscription's address, mode and timeout; those cannot change while
	// the subscription is linked (only the wait that made it, or the wake
	// that unlinks it, writes them).
	cbResolvePlain
	cbCancel // wake the coroutine with a cancellation
	// A general wait's subscriptions (ResumeWhen): the same callbacks, or a
	// custom one, and the event is recorded in the triggered set.
	cbGenResolve
	cbGenCancel
	cbCustom
)

// subscription links one subscriber into an event's list. The waker embeds
// its subscriptions, so awaiting never allocates.
type subscription struct {
	ev         *Event
	co         *coroutine // the waiting coroutine (every kind but cbFunc)
	prev, next *subscription
	// gen and kind share the last word (40 bytes, not 48: two are
	// embedded in every coroutine record's waker).
	gen  uint32 // ev.gen when linked
	kind callbackKind
}

// funcSub is a cbFunc subscription (Event.Subscribe): the function lives
// beside the links, not in every subscription, so the two a waker embeds
// are 8 bytes smaller each. subscription is its first field, so a
// *subscription of kind cbFunc is a *funcSub (Event.fire converts back).
type funcSub struct {
	subscription
	fn func(any, error)
}

// NewEvent returns a pending event.
func NewEvent() *Event { return &Event{} }

// Fired reports whether the event was resolved or rejected.
func (e *Event) Fired() bool { return e.fired }

// Outcome returns the value and error the event fired with (nil, nil while
// pending).
func (e *Event) Outcome() (any, error) { return e.value, e.err }

// Resolve fires the event with value. It reports false, doing nothing, if the
// event had already fired.
func (e *Event) Resolve(value any) bool { return e.fire(value, nil) }

// Reject fires the event with err (which must not be nil). It reports false,
// doing nothing, if the event had already fired.
func (e *Event) Reject(err error) bool {
	if err == nil {
		panic("stackful: Event.Reject(nil): pass the error the awaiting coroutines should get")
	}
	return e.fire(nil, err)
}

// Reset makes a fired event pending again, forgetting its outcome. Reset on
// a pending event does nothing; its subscribers stay subscribed.
func (e *Event) Reset() {
	if e.fired {
		e.fired, e.value, e.err = false, nil, nil
	}
}

// Subscribe registers fn to run when the event fires (at once if it already
// has). fn runs in the firing context and must not block.
func (e *Event) Subscribe(fn func(value any, err error)) {
	if e.fired {
		fn(e.value, e.err)
		return
	}
	fs := &funcSub{subscription: subscription{kind: cbFunc}, fn: fn}
	e.link(&fs.subscription)
}

func (e *Event) fire(value any, err error) bool {
	if e.fired {
		return false
	}
	// The common firing, a hand-off: the only subscriber is a plain wait
	// (cbResolvePlain: one event, no timer) of a Normal coroutine, and the
	// run queue has room. It is woken here, with no call: waker.onResolve
	// with waker.wake's common case spelled out (twin of fireAll's
	// cbResolvePlain case and of wake's first branch), the subscription
	// taken off the event as fireAll would. Kept apart from fireAll so
	// that this path keeps its arguments in registers: fireAll's callbacks
	// make it save them on every firing. The queue is reached through
	// running, checked against co.s, rather than through co.s: the load
	// of co.s then only feeds a compare the CPU predicts, and the queue's
	// loads no longer wait for it behind e.one and sub.co (a chain of
	// dependent loads every firing paid; see BenchmarkSpawnLifecycleSplit).
	// A waiter of another scheduler, or a firing outside Run (running
	// nil), takes fireAll, as any case this path does not handle.
	//
	// The checks come first and every store of the firing after them, in
	// one block per queue case (the slot, coQueue.first, where a hand-off's
	// one queued coroutine goes; else the ring): the compiler then tests
	// the write barrier once for all of the block's pointer stores (the
	// event's outcome and links, the waker's outcome, the queue's slot),
	// not once per statement group (three tests and branches per firing
	// before; see BenchmarkPingPongCallSite).
	if sub := e.one; sub != nil && sub.kind == cbResolvePlain {
		co := sub.co
		w := &co.waker
		if s := running; w.status == WakerWaiting && co.priority != High && co.s == s {
			q := &s.queue
			if q.first == nil && q.n == 0 { // tryPushBack's slot case, its twin
				e.fired, e.gen = true, e.gen+1
				e.value, e.err = value, err
				e.one, sub.ev = nil, nil
				w.result, w.err, w.triggered = value, err, e
				q.first = co
				w.nsubs = 0
				w.status = WakerQueued
				return true
			}
			if q.tryPushBackRing(co) {
				e.fired, e.gen = true, e.gen+1
				e.value, e.err = value, err
				e.one, sub.ev = nil, nil
				w.result, w.err, w.triggered = value, err, e
				w.nsubs = 0
				w.status = WakerQueued
				return true
			}
		}
	}
	e.fired, e.value, e.err = true, value, err
	e.fireAll()
	return true
}

// fireAll runs the subscribers of the firing fire has just recorded. It
// reads the outcome back from the event (as fire left it: nothing ran
// since), so that fire has no argument to keep for the call.
func (e *Event) fireAll() {
	value, err := e.value, e.err
	gen := e.gen
	e.gen++
	// The first subscriber: the inline one (and then the list is empty:
	// see Event.one), or the list's head if it was linked before this
	// firing.
	sub := e.one
	if sub != nil {
		e.one, sub.ev = nil, nil
	} else if sub = e.head; sub == nil || sub.gen != gen {
		return
	} else {
		e.unlink(sub)
	}
	// Take one subscriber at a time off the event before running it: a
	// callback may unlink others (a waker unsubscribes all its events when
	// it wakes), or Reset the event and subscribe anew; such new
	// subscriptions (inline or in the list, with the new generation) wait
	// for the next firing.
	for {
		switch sub.kind {
		case cbFunc: // made by Subscribe as a funcSub, whose first field sub is
			(*funcSub)(unsafe.Pointer(sub)).fn(value, err)
		case cbResolvePlain:
			// waker.onResolve with waker.wake's common case spelled out
			// (twin of fire's fast path and of wake's first branch):
			// this costs no call where onResolve would call wake. The
			// fired subscription is the wait's only one (its kind says
			// so) and is off the event.
			co := sub.co
			w := &co.waker
			if w.status == WakerWaiting && co.priority != High && co.s.queue.tryPushBack(co) {
				w.result, w.err, w.triggered = value, err, e
				w.nsubs = 0
				w.status = WakerQueued
			} else {
				w.onResolve(value, err, e)
			}
		case cbResolve: // a wait with a cancel event or a timeout: wake stops the rest
			sub.co.waker.onResolve(value, err, e)
		case cbCancel:
			sub.co.waker.onCancel(err, e)
		default:
			sub.co.waker.onGeneral(sub, e, value, err)
		}
		if sub = e.head; sub == nil || sub.gen != gen {
			return
		}
		e.unlink(sub)
	}
}

// link subscribes sub: inline (Event.one) if it is the only subscriber,
// else at the list's tail. sub.ev != nil marks a linked subscription (the
// waker's stop and wake test it).
func (e *Event) link(sub *subscription) {
	sub.ev = e
	if e.one == nil && e.head == nil {
		e.one = sub
		return
	}
	e.linkList(sub)
}

// linkList appends sub to the list, first moving the inline subscriber
// there (it was subscribed first). Out of line: link stays small enough
// to inline for the single-waiter case.
func (e *Event) linkList(sub *subscription) {
	if o := e.one; o != nil {
		e.one = nil
		e.append(o) // e.gen is its generation: see Event.one
	}
	e.append(sub)
}

// remove unsubscribes sub, which is linked to e (inline or in the list).
func (e *Event) remove(sub *subscription) {
	if e.one == sub {
		e.one, sub.ev = nil, nil
		return
	}
	e.unlink(sub)
}

// append and unlink are an intrusive doubly linked list, as are
// impl/stackless's Event waiters and both runtimes' live lists. They are
// not shared: the events differ (here any subscriber, with a callback kind
// and a firing generation; there only waiting tasks, woken inline when
// they wait on one event), and a generic list would reach each node's
// links through a dictionary method call (Go compiles all pointer type
// arguments to one shape): an indirect call on the await/resolve path of
// every handoff.
func (e *Event) append(sub *subscription) {
	sub.ev, sub.gen = e, e.gen
	sub.prev, sub.next = e.tail, nil
	if e.tail != nil {
		e.tail.next = sub
	} else {
		e.head = sub
	}
	e.tail = sub
}

// unlink takes sub, which is in e's list, out of it.
func (e *Event) unlink(sub *subscription) {
	if sub.prev != nil {
		sub.prev.next = sub.next
	} else {
		e.head = sub.next
	}
	if sub.next != nil {
		sub.next.prev = sub.prev
	} else {
		e.tail = sub.prev
	}
	sub.ev, sub.prev, sub.next = nil, nil, nil
}
