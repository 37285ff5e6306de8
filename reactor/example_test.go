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
