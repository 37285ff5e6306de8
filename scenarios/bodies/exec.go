package bodies

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// Exec: c coroutines each spawn short-lived children, read their output and
// await their exit.
var Exec = register(&scenarios.Scenario{
	Name:    "exec",
	Bench:   "Exec",
	Summary: "Coroutines spawning short-lived children (benchrun's trivial exec-child mode), reading their output and awaiting their exit; cost per child.",
	Doc: "c coroutines each run children, N children in all: start it with its stdout a pipe, read the output to EOF, await the exit and reap it. " +
		"The child is benchrun itself in a trivial mode (its hidden " + scenarios.ExecChildSubcommand + " subcommand: write its one argument and a newline, exit 0), " +
		"so the figure is a Go binary's start-up, output and exit that anyone with benchrun can reproduce, not whatever echo the system ships. " +
		"The path is the running program's (os.Executable; scenarios.ServeHelpers declares it: benchrun does, a test binary that serves the subcommand itself does); " +
		"a program that declares none, or whose path is gone, fails with an error naming scenarios.ServeHelpers. " +
		"The stackful and stackless rows use the reactor (Spawn: fork/exec on the loop goroutine, " +
		"the pipe registered with the loop, the exit a pidfd event); the goroutine rows use os/exec. ns/child is the wall time per child.",
	Claim: "Exec as a reactor event (docs/design.md §4): process start and exit through the loop against os/exec in goroutines.",
	Params: []scenarios.Param{
		{Key: "c", Full: []string{"1", "8"}, Quick: []string{"2"}, Doc: "spawning coroutines", Min: 1, Max: 256, BytesPer: scenarios.CoroutineBytes},
	},
	NotJudged: "its children are processes of their own, running beside it",
	Metrics: []scenarios.Metric{
		{Unit: "ns/child", Kind: scenarios.TimePerOp, Headline: "spawn, read and reap a child"},
	},
	Blocking:     execBlocking,
	StateMachine: execStateMachine,
	Want:         execWant,
})

// execMix folds child i's verified output length into the sum by addition
// (children finish in varying order).
func execMix(i, outLen int) uint64 { return mix(0, uint64(i)<<8|uint64(outLen)) }

func execWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.N; i++ {
		sum += execMix(i, len(strconv.Itoa(i))+1)
	}
	return sum
}

// execCheck verifies child i's output and exit code.
func execCheck(i int, out []byte, code int) (uint64, error) {
	if want := strconv.Itoa(i) + "\n"; string(out) != want || code != 0 {
		return 0, fmt.Errorf("exec: child %d printed %q and exited %d, want %q and 0", i, out, code, want)
	}
	return execMix(i, len(out)), nil
}

// execCommand is the child's argv before its argument: the running
// program in its trivial mode (scenarios.HelperCommand).
func execCommand() ([]string, error) {
	argv, err := scenarios.HelperCommand(scenarios.ExecChildSubcommand)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return argv, nil
}

// execArgv is child i's argv: prefix (from execCommand) and i.
func execArgv(prefix []string, i int) []string {
	return append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i))
}

// execBlocking is the blocking body: spawner w runs children w, w+c, ...
func execBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	ex, ok := rt.(scenarios.Execs)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Execs", "the row cannot await a child process without blocking the other coroutines")
	}
	prefix, err := execCommand()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	n, c := env.N, env.Int("c")
	sums := make([]uint64, c)
	errs := make([]error, c)
	done := make([]scenarios.Signal, c)
	for w := range done {
		done[w] = rt.NewSignal()
	}
	env.ResetTimer()
	for w := 0; w < c; w++ {
		rt.Go(func() {
			defer done[w].Fire()
			out := make([]byte, 0, 32)
			for i := w; i < n; i += c {
				ch, err := ex.StartChild(prefix[0], execArgv(prefix, i))
				if err != nil {
					errs[w] = fmt.Errorf("exec: child %d: %w", i, err)
					return
				}
				out = out[:0]
				for err == nil {
					var k int
					k, err = ch.Stdout().Read(out[len(out):cap(out)])
					out = out[:len(out)+k]
					if len(out) == cap(out) {
						err = errors.New("more output than expected")
					}
				}
				code := -1
				if errors.Is(err, io.EOF) {
					code, err = ch.Wait()
				}
				ch.Close()
				if err != nil {
					errs[w] = fmt.Errorf("exec: child %d: %w", i, err)
					return
				}
				v, err := execCheck(i, out, code)
				if err != nil {
					errs[w] = err
					return
				}
				sums[w] += v
			}
		})
	}
	waitAll(done)
	env.StopTimer()
	sum, err := sumWorkers(errs, sums)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return scenarios.Outcome{Ops: int64(n), Checksum: sum}, nil
}

// execStateMachine is the state-machine twin: c spawner tasks on
// stackless.StartProcess, reading with TryRead/AwaitReadable and awaiting
// the exit Source.
func execStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	prefix, err := execCommand()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	s := stackless.New()
	defer s.Close()
	c := env.Int("c")
	left := c
	tasks := make([]*execTask, c)
	for w := range tasks {
		tasks[w] = &execTask{prefix: prefix, i: w, n: env.N, c: c, out: make([]byte, 0, 32), left: &left, env: env}
	}
	env.ResetTimer()
	for _, t := range tasks {
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	var sum uint64
	for _, t := range tasks {
		sum += t.sum
	}
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum}, nil
}

// States of an exec task.
const (
	exStart uint8 = iota // spawn child i
	exRead               // read its output (resumed when readable)
	exExit               // its exit fired: reap, check, next
)

type execTask struct {
	stackless.Coro
	state   uint8
	prefix  []string // the child's argv before its argument (execCommand)
	i, n, c int
	ch      *stackless.Child
	out     []byte
	sum     uint64
	left    *int // tasks not finished; the last one stops the timer
	env     *scenarios.Env
}

func (t *execTask) Resume(c *stackless.Context) stackless.Step {
	if err := c.Err(); err != nil {
		if t.ch != nil {
			t.ch.Close()
		}
		return c.Fail(fmt.Errorf("exec: child %d: %w", t.i, err))
	}
	for {
		switch t.state {
		case exStart:
			if t.i >= t.n {
				if *t.left--; *t.left == 0 {
					t.env.StopTimer()
				}
				return c.Done()
			}
			ch, err := c.Scheduler().StartProcess(t.prefix[0], execArgv(t.prefix, t.i), reactor.ExecOptions{Stdout: true})
			if err != nil {
				return c.Fail(fmt.Errorf("exec: child %d: %w", t.i, err))
			}
			t.ch, t.out, t.state = ch, t.out[:0], exRead
		case exRead:
			k, err := t.ch.Stdout.TryRead(t.out[len(t.out):cap(t.out)])
			t.out = t.out[:len(t.out)+k]
			switch {
			case errors.Is(err, reactor.ErrWouldBlock):
				return c.AwaitReadable(t.ch.Stdout)
			case errors.Is(err, io.EOF):
				t.state = exExit
				return c.AwaitSource(&t.ch.Source, 0)
			case err != nil:
				t.ch.Close()
				return c.Fail(fmt.Errorf("exec: child %d: %w", t.i, err))
			case len(t.out) == cap(t.out):
				t.ch.Close()
				return c.Fail(fmt.Errorf("exec: child %d: more output than expected", t.i))
			}
		case exExit:
			st, err := t.ch.Wait()
			t.ch.Close()
			t.ch = nil
			if err != nil {
				return c.Fail(fmt.Errorf("exec: child %d: %w", t.i, err))
			}
			v, err := execCheck(t.i, t.out, st.ExitCode())
			if err != nil {
				return c.Fail(err)
			}
			t.sum += v
			t.i += t.c
			t.state = exStart
		}
	}
}
