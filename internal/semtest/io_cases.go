package semtest

import (
	"time"

	"github.com/corobench/corobench/internal/dnsserver"
)

// ioCases are the cases on the reactor's awaitables (io.go). Each runs on a
// runtime only if its driver is an IODriver with the features listed.
func ioCases() []Case {
	return []Case{
		ioWork(),
		ioWorkTimeout(),
		ioWorkQueueFull(),
		ioWorkCancel(),
		ioFile(),
		ioExec(),
		ioExecKill(),
		ioWatch(),
		ioDNS(),
	}
}

// ioWork: a job runs on a pool thread and its value comes back to the
// task; a second one on the same task after it.
func ioWork() Case {
	return Case{
		Program: &Program{Name: "io/work", IO: &IOConfig{Needs: []Feature{FeatWork}}, Tasks: []Task{
			{"main", []Op{Work(5, 0), Work(6, 0)}},
		}},
		Want: []string{"main: work 5 = 25", "main: work 6 = 36", "main: exit"},
	}
}

// ioWorkTimeout: a job held at its gate past the wait's timeout ends the
// wait with a timeout (the job is withdrawn, not awaited); once the gate
// opens, the pool's one thread is free again and the next job runs.
func ioWorkTimeout() Case {
	return Case{
		Program: &Program{Name: "io/work-timeout", IO: &IOConfig{Needs: []Feature{FeatWork}, PoolThreads: 1}, Tasks: []Task{
			{"main", []Op{Continuing(GatedWork(1, 0, 20*time.Millisecond)), OpenGate(0), Work(2, 0)}},
		}},
		Want: []string{"main: work 1 gated g0 timeout 20ms ! timeout", "main: work 2 = 4", "main: exit"},
	}
}

// ioWorkQueueFull: one thread, a queue of one. A's job holds the thread
// (main waits until it does), B's fills the queue, main's is refused at
// once with the pool's error (no suspend: main goes on). Opening the gate
// lets A's job and then B's run, in that order on the one thread.
func ioWorkQueueFull() Case {
	return Case{
		Program: &Program{Name: "io/work-queue-full", IO: &IOConfig{Needs: []Feature{FeatWork}, PoolThreads: 1, PoolQueue: 1}, Tasks: []Task{
			{"main", []Op{
				Spawn(1, Normal), Yield(), WaitStarted(0),
				Spawn(2, Normal), Yield(),
				Continuing(Work(3, 0)), Log("refused"), OpenGate(0),
			}},
			{"A", []Op{GatedWork(1, 0, 0)}},
			{"B", []Op{Work(2, 0)}},
		}},
		Want: []string{
			"main: work 3 ! queue full", "main: refused", "main: exit",
			"A: work 1 gated g0 = 1", "A: exit", "B: work 2 = 4", "B: exit",
		},
	}
}

// ioWorkCancel: cancelling a task waiting for its job wakes it with
// Cancelled; the job is withdrawn (its gate opened afterwards).
func ioWorkCancel() Case {
	return Case{
		Program: &Program{Name: "io/work-cancel", IO: &IOConfig{Needs: []Feature{FeatWork}, PoolThreads: 1}, Tasks: []Task{
			{"main", []Op{Spawn(1, Normal), Yield(), Cancel(1), Yield(), OpenGate(0), Work(4, 0)}},
			{"A", []Op{GatedWork(1, 0, 0), Log("not reached")}},
		}},
		Want: []string{"A: work 1 gated g0 ! cancelled", "A: exit ! cancelled", "main: work 4 = 16", "main: exit"},
	}
}

// ioFile: write, overwrite at an offset, read back at an offset, read past
// the end (0 bytes), close; then a missing file's open fails with the
// kernel's ENOENT.
func ioFile() Case {
	return Case{
		Program: &Program{Name: "io/file", IO: &IOConfig{Needs: []Feature{FeatFile}}, Tasks: []Task{
			{"main", []Op{
				FileOpen("f", true), FileWrite("hello world"), FileWriteAt("XY", 6),
				FileReadAt(5, 6), FileReadAt(4, 100), FileClose(),
				FileOpen("f", false), FileReadAt(11, 0), FileClose(),
				Continuing(FileOpen("missing", false)), Log("after"),
			}},
		}},
		Want: []string{
			`main: fileopen f = ok`, `main: filewrite "hello world" = 11`, `main: filewriteat 6 "XY" = 2`,
			`main: filereadat 6+5 = "XYrld"`, `main: filereadat 100+4 = ""`, `main: fileclose = ok`,
			`main: fileopen f = ok`, `main: filereadat 0+11 = "hello XYrld"`, `main: fileclose = ok`,
			`main: fileopen missing ! not exist`, `main: after`, `main: exit`,
		},
	}
}

// ioExec: a child's output read to end of file and its exit status, zero
// and not; a binary that does not exist fails at the start.
func ioExec() Case {
	return Case{
		Program: &Program{Name: "io/exec", IO: &IOConfig{Needs: []Feature{FeatExec}}, Tasks: []Task{
			{"main", []Op{ExecChild("hi", 0), ExecChild("bye", 3), Continuing(ExecMissing()), Log("after")}},
		}},
		Want: []string{
			`main: exec "hi" 0 = "hi" exit 0`, `main: exec "bye" 3 = "bye" exit 3`,
			`main: exec missing binary ! not exist`, `main: after`, `main: exit`,
		},
	}
}

// ioExecKill: waiting for a child that does not exit times out (the child
// runs on); killed, its exit is awaited and reaped as a SIGKILL.
func ioExecKill() Case {
	return Case{
		Program: &Program{Name: "io/exec-kill", IO: &IOConfig{Needs: []Feature{FeatExec}}, Tasks: []Task{
			{"main", []Op{ExecKill(20 * time.Millisecond)}},
		}},
		Want: []string{
			`main: execkill timeout 20ms ! timeout`, `main: execkill timeout 20ms = "" signal SIGKILL`, `main: exit`,
		},
	}
}

// ioWatch: a write by another task wakes the task waiting on the watch with
// IN_MODIFY; the events were released with that wake, so the next wait
// times out; a closed watch is gone (writes after it wake nobody, and the
// run ends); a missing path fails.
func ioWatch() Case {
	return Case{
		Program: &Program{Name: "io/watch", IO: &IOConfig{Needs: []Feature{FeatWatch}}, Tasks: []Task{
			{"main", []Op{
				Append("w"), Watch("w"), Spawn(1, Normal), WatchWait(0),
				Continuing(WatchWait(20 * time.Millisecond)), WatchClose(), Append("w"),
				Continuing(Watch("missing")),
			}},
			{"A", []Op{Append("w")}},
		}},
		Want: []string{
			"main: append = ok", "main: watch w = ok", "A: append = ok", "A: exit", "main: watchwait = modify",
			"main: watchwait timeout 20ms ! timeout", "main: watchclose = ok", "main: append = ok",
			"main: watch missing ! not exist", "main: exit",
		},
	}
}

// ioDNS: a name of the local responder's zone resolves to its address; an
// unknown one is not found; one the responder never answers times out.
func ioDNS() Case {
	return Case{
		Program: &Program{Name: "io/dns", IO: &IOConfig{Needs: []Feature{FeatDNS}}, Tasks: []Task{
			{"main", []Op{
				Lookup(dnsserver.Name(1), 0), Lookup(dnsserver.Name(300), 5*time.Second),
				Continuing(Lookup("nope."+dnsserver.Domain, 0)),
				Continuing(Lookup(dnsserver.Silent+"."+dnsserver.Domain, 50*time.Millisecond)),
			}},
		}},
		Want: []string{
			"main: lookup host-1.corobench.test. = 10.53.0.1",
			"main: lookup host-300.corobench.test. timeout 5s = 10.53.1.44",
			"main: lookup nope.corobench.test. ! not found",
			"main: lookup silent.corobench.test. timeout 50ms ! timeout",
			"main: exit",
		},
	}
}
