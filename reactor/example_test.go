package reactor_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/corobench/corobench/reactor"
)

// A coroutine runtime drives the reactor like this: try the operation; on
// ErrWouldBlock start the events to wait for (here: readability with a
// timeout), suspend, and when one fires, stop the other and retry. Here a
// plain loop stands in for "suspend" and the scheduler's Tick.
func Example() {
	loop, err := reactor.New()
	if err != nil {
		panic(err)
	}
	defer loop.Close()

	r, w, err := loop.Pipe()
	if err != nil {
		panic(err)
	}
	woken := false
	readable := r.NewPoll(reactor.Readable, func() { woken = true })
	timeout := loop.NewTimer(func() { woken = true })

	// Another party writes later; a trigger could equally come from another
	// goroutine via Trigger.Signal.
	writer := loop.NewTimer(func() { w.TryWrite([]byte("hello")) })
	writer.Start(200 * time.Microsecond)

	buf := make([]byte, 16)
	wakeups := 0
	for {
		n, err := r.TryRead(buf)
		if err == nil {
			fmt.Printf("read %q after %d wakeup(s)\n", buf[:n], wakeups)
			break
		}
		if !errors.Is(err, reactor.ErrWouldBlock) {
			panic(err)
		}
		// Suspend: start the waker's events, then let the loop run.
		readable.Start()
		timeout.Start(time.Second)
		for woken = false; !woken; {
			if _, err := loop.Tick(false); err != nil {
				panic(err)
			}
		}
		// Resume: stop whatever did not fire.
		readable.Stop()
		timeout.Stop()
		wakeups++
	}
	fmt.Println("active events:", loop.Active())
	// Output:
	// read "hello" after 1 wakeup(s)
	// active events: 0
}

// waker is a runtime's per-coroutine wait record, reduced to what a sleep
// needs: the timer node lives inside it, so arming a timeout allocates
// nothing and firing lands on memory the resumed coroutine touches anyway.
type waker struct {
	timer reactor.TimerNode // Init once, when the record is created
	name  string
	woken bool // stands for "make the coroutine runnable"
}

// OnTimer is the waker's reactor.TimerHandler: it runs inside Tick when the
// deadline passes. A runtime would queue the coroutine here.
func (w *waker) OnTimer() {
	w.woken = true
	fmt.Println(w.name, "timed out")
}

// A runtime embeds a TimerNode in its waker and implements TimerHandler on
// it. Sleeping is Start (relative to the loop's cached time) or StartAt (an
// absolute deadline); a wake by something else Stops the node. Equal
// deadlines fire in start order.
func ExampleTimerNode() {
	loop, err := reactor.New()
	if err != nil {
		panic(err)
	}
	defer loop.Close()

	ws := []*waker{{name: "a"}, {name: "b"}, {name: "c"}}
	for _, w := range ws {
		w.timer.Init(loop, w)
	}
	// Suspend all three: b and c share a deadline, so b (started first)
	// fires first; a is woken by something else before its deadline.
	loop.UpdateTime() // one fresh reading for the batch, not one per timer
	deadline := loop.Now() + int64(300*time.Microsecond)
	ws[0].timer.Start(time.Second)
	ws[1].timer.StartAt(deadline)
	ws[2].timer.StartAt(deadline)
	ws[0].timer.Stop() // "a" was resumed by its event: cancel its timeout

	for !ws[1].woken || !ws[2].woken {
		if _, err := loop.Tick(false); err != nil {
			panic(err)
		}
	}
	fmt.Println("a active:", ws[0].timer.Active(), "loop active:", loop.Active())
	// Output:
	// b timed out
	// c timed out
	// a active: false loop active: 0
}

// ExampleWork offloads a checksum to the thread pool; a runtime's waker
// would Start at suspend and resume the coroutine from the callback.
func ExampleWork() {
	l, err := reactor.New()
	if err != nil {
		panic(err)
	}
	defer l.Close()
	data := []byte("computed off the loop")
	var sum uint32
	done := false
	w := l.NewWork(func() { done = true })
	if err := w.Start(reactor.JobFunc(func() {
		for _, b := range data {
			sum = sum*31 + uint32(b)
		}
	})); err != nil {
		panic(err) // e.g. ErrPoolQueueFull
	}
	for !done {
		l.Tick(false)
	}
	w.Close()
	fmt.Println(sum != 0, l.Stats().WorkCompleted)
	// Output: true 1
}
