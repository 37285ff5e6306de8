package stackless_test

import (
	"fmt"
	"time"

	"github.com/corobench/corobench/impl/stackless"
)

// fetcher waits for a value with a timeout, then always runs its cleanup
// state, whether the wait succeeded, timed out or was cancelled.
type fetcher struct {
	stackless.Coro
	state int
	ready *stackless.Event
}

func (f *fetcher) Resume(c *stackless.Context) stackless.Step {
	for {
		switch f.state {
		case 0: // start waiting
			f.state = 1
			return c.AwaitTimeout(f.ready, time.Second)
		case 1: // woken: report the outcome
			if err := c.Err(); err != nil {
				fmt.Println("fetcher: wait ended:", err)
			} else {
				fmt.Println("fetcher: got", c.Result())
			}
			f.state = 2
		case 2: // cleanup
			fmt.Println("fetcher: cleanup")
			return c.Done()
		}
	}
}

// producer sleeps, then resolves the event.
type producer struct {
	stackless.Coro
	state int
	ready *stackless.Event
}

func (p *producer) Resume(c *stackless.Context) stackless.Step {
	switch p.state {
	case 0:
		p.state = 1
		return c.Sleep(200 * time.Microsecond)
	default:
		fmt.Println("producer: resolving")
		_ = p.ready.Resolve(42)
		return c.Done()
	}
}

// Two hand-written state machines: one awaits an event with a timeout, the
// other sleeps on the reactor's timer and resolves it.
func Example() {
	s := stackless.New()
	defer s.Close()
	ready := new(stackless.Event)
	_ = s.Spawn(&fetcher{ready: ready})
	_ = s.Spawn(&producer{ready: ready})
	if err := s.Run(); err != nil {
		fmt.Println("run:", err)
	}
	fmt.Println("stats:", s.Stats().Spawns, "tasks,", s.Live(), "live")
	// Output:
	// producer: resolving
	// fetcher: got 42
	// fetcher: cleanup
	// stats: 2 tasks, 0 live
}

// stopper shuts the scheduler down.
type stopper struct{ stackless.Coro }

func (t *stopper) Resume(c *stackless.Context) stackless.Step {
	fmt.Println("stopper: shutting down")
	c.Shutdown()
	return c.Done()
}

// A graceful shutdown delivers the cancellation into the waiting state
// machine, so its cleanup state runs.
func ExampleScheduler_Shutdown() {
	s := stackless.New()
	defer s.Close()
	_ = s.Spawn(&fetcher{ready: new(stackless.Event)}) // waits up to 1s
	_ = s.Spawn(&stopper{})
	fmt.Println("run error:", s.Run())
	// Output:
	// stopper: shutting down
	// fetcher: wait ended: stackless: task cancelled
	// fetcher: cleanup
	// run error: <nil>
}

// A deadlock is reported with the names of the waiting tasks; their cleanup
// still runs.
func ExampleDeadlockError() {
	s := stackless.New()
	_ = s.Spawn(&forever{})
	fmt.Println(s.Run())
	// Output:
	// forever: cleanup after stackless: task cancelled
	// stackless: deadlock: 1 task(s) waiting with nothing runnable and no active reactor event: forever
}

type forever struct {
	stackless.Coro
	state int
	never stackless.Event
}

func (t *forever) Name() string { return "forever" }

func (t *forever) Resume(c *stackless.Context) stackless.Step {
	if t.state == 0 {
		t.state = 1
		return c.Await(&t.never)
	}
	fmt.Println("forever: cleanup after", c.Err())
	return c.Done()
}
