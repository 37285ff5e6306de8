package stackful_test

import (
	"fmt"
	"time"

	"github.com/corobench/corobench/impl/stackful"
)

// Two coroutines hand control back and forth through reusable events, as
// straight-line code: no context is passed around.
func Example() {
	s, err := stackful.New(stackful.Options{Backend: stackful.Coro}) // or stackful.Asm
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	err = s.Run(func() {
		ping, pong := stackful.NewEvent(), stackful.NewEvent()
		stackful.GoWith("ponger", stackful.Normal, func() {
			for i := 0; i < 3; i++ {
				v, _ := stackful.Await(ping)
				ping.Reset()
				fmt.Println("pong", v)
				pong.Resolve(i)
			}
		})
		for i := 0; i < 3; i++ {
			ping.Resolve(i)
			stackful.Await(pong)
			pong.Reset()
		}
		if _, err := stackful.AwaitTimeout(stackful.NewEvent(), time.Millisecond); err != nil {
			fmt.Println(err)
		}
	})
	st := s.Stats()
	fmt.Println("run error:", err, "- switches through the scheduler:", st.SchedulerSwitches == st.Switches)
	// Output:
	// pong 0
	// pong 1
	// pong 2
	// stackful: await timed out
	// run error: <nil> - switches through the scheduler: true
}

// A deadlock is reported with the names of the coroutines left waiting.
func ExampleDeadlockError() {
	s, _ := stackful.New(stackful.Options{Backend: stackful.Coro})
	defer s.Close()
	err := s.Run(func() {
		stackful.GoWith("reader", stackful.Normal, func() { stackful.Await(stackful.NewEvent()) })
		stackful.Await(stackful.NewEvent())
	})
	fmt.Println(err)
	// Output:
	// stackful: deadlock: 2 coroutine(s) waiting with nothing runnable and no active reactor event: main, reader
}
