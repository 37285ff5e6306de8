package bodies

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/reactor"
	"github.com/corobench/corobench/scenarios"
)

// FSWatch: the latency from a write to a watched file to the waiting
// coroutine's wake.
var FSWatch = register(&scenarios.Scenario{
	Name:    "fswatch",
	Bench:   "FSWatch",
	Summary: "A write to a watched file and the waiting coroutine's wake through inotify; cost per write-to-wake round.",
	Latency: true,
	Doc: "A writer coroutine writes 8 bytes at offset 0 of a file the scenario creates (pwrite, a short blocking call on every row) " +
		"and waits for the watcher's acknowledgement; the watcher coroutine waits for the file's IN_MODIFY and acknowledges, N rounds. " +
		"The stackful and stackless rows watch through the reactor's inotify watch; the goroutine rows through github.com/fsnotify/fsnotify " +
		"(its goroutine reads inotify and sends on a channel). ns/write is a whole round (write, inotify, wake, acknowledgement); " +
		"p50/p99-ns/wake the time from just before the write to the watcher's wake.",
	Claim: "Filesystem events as a reactor event (docs/design.md §4): wake-up latency through the loop against a library goroutine and a channel.",
	Metrics: []scenarios.Metric{
		{Unit: "ns/write", Kind: scenarios.TimePerOp, Headline: "file write to watcher wake"},
		{Unit: "p50-ns/wake", Kind: scenarios.BodyMeasured},
		{Unit: "p99-ns/wake", Kind: scenarios.BodyMeasured},
	},
	NotJudged:    "a blocking file write hands the P to another thread, and the inotify wake-up comes from the kernel's side",
	Blocking:     fsWatchBlocking,
	StateMachine: fsWatchStateMachine,
	Want:         fsWatchWant,
})

func fsWatchWant(env *scenarios.Env) uint64 { return mixSequence(env.N) }

// fsWatchFile creates the watched file; the writer writes to it through w.
func fsWatchFile() (*os.File, error) {
	return os.CreateTemp("", "corobench-fswatch-*")
}

func fsWatchOutcome(n int, sum uint64, samples []int64) (scenarios.Outcome, error) {
	lat := summarizeLatencies(samples)
	return scenarios.Outcome{Ops: int64(n), Checksum: sum, Values: map[string]float64{"p50-ns/wake": lat.P50, "p99-ns/wake": lat.P99}}, nil
}

// fsWatchBlocking is the blocking body. The main coroutine writes round i
// (the word i) and waits for the ack; the watcher's wake time minus the
// write's start is the sample. The watcher mixes i after each wake: a wake
// per write, or the sum is wrong.
func fsWatchBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	ws, ok := rt.(scenarios.Watches)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Watches", "the row cannot wait for filesystem events without blocking the other coroutines")
	}
	f, err := fsWatchFile()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w, err := ws.WatchWrites(f.Name())
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer w.Close()
	n := env.N
	samples := make([]int64, n)
	ack := rt.NewSignal()
	var t0 int64
	var sum uint64
	var werr error
	rt.Go(func() {
		for i := 0; i < n; i++ {
			if err := w.Wait(); err != nil {
				werr = err
				ack.Fire()
				return
			}
			samples[i] = monoNow() - t0
			sum = mix(sum, uint64(i))
			ack.Fire()
		}
	})
	var buf [8]byte
	env.ResetTimer()
	for i := 0; i < n && werr == nil; i++ {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		t0 = monoNow()
		if _, err := f.WriteAt(buf[:], 0); err != nil {
			return scenarios.Outcome{}, fmt.Errorf("fswatch: write %d: %w", i, err)
		}
		ack.Wait()
	}
	env.StopTimer()
	if werr != nil {
		return scenarios.Outcome{}, fmt.Errorf("fswatch: watch: %w", werr)
	}
	return fsWatchOutcome(n, sum, samples)
}

// fsWatchStateMachine is the state-machine twin: a writer task and a
// watcher task on a stackless Watch, acknowledging through an Event.
func fsWatchStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	f, err := fsWatchFile()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	s := stackless.New()
	defer s.Close()
	w, err := s.NewWatch(f.Name(), unix.IN_MODIFY)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer w.Close()
	var ack stackless.Event
	sh := &fsWatchShared{n: env.N, samples: make([]int64, env.N), f: f, w: w, ack: &ack}
	if err := s.Spawn(&fsWatcher{sh: sh}); err != nil {
		return scenarios.Outcome{}, err
	}
	if err := s.Spawn(&fsWriter{sh: sh}); err != nil {
		return scenarios.Outcome{}, err
	}
	env.ResetTimer()
	err = s.Run()
	env.StopTimer()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return fsWatchOutcome(env.N, sh.sum, sh.samples)
}

type fsWatchShared struct {
	n       int
	t0      int64
	sum     uint64
	samples []int64
	f       *os.File
	w       *stackless.Watch
	ack     *stackless.Event
}

// fsWatcher waits for the file's events; each wake is one round.
type fsWatcher struct {
	stackless.Coro
	sh      *fsWatchShared
	i       int
	waiting bool
}

func (t *fsWatcher) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		if err := c.Err(); err != nil {
			return c.Fail(fmt.Errorf("fswatch: watch: %w", err))
		}
		if evs, _ := c.Result().([]reactor.FSEvent); len(evs) == 0 {
			return c.Fail(errors.New("fswatch: a wake without events"))
		}
		t.sh.samples[t.i] = monoNow() - t.sh.t0
		t.sh.sum = mix(t.sh.sum, uint64(t.i))
		t.sh.ack.Resolve(nil)
		t.i++
	}
	if t.i == t.sh.n {
		return c.Done()
	}
	t.waiting = true
	return c.AwaitSource(&t.sh.w.Source, 0)
}

// fsWriter writes round i and awaits the watcher's ack.
type fsWriter struct {
	stackless.Coro
	sh      *fsWatchShared
	i       int
	buf     [8]byte
	waiting bool
}

func (t *fsWriter) Resume(c *stackless.Context) stackless.Step {
	if t.waiting {
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
		t.sh.ack.Reset()
		t.i++
	}
	if t.i == t.sh.n {
		return c.Done()
	}
	binary.LittleEndian.PutUint64(t.buf[:], uint64(t.i))
	t.sh.t0 = monoNow()
	if _, err := t.sh.f.WriteAt(t.buf[:], 0); err != nil {
		return c.Fail(fmt.Errorf("fswatch: write %d: %w", t.i, err))
	}
	t.waiting = true
	return c.Await(t.sh.ack)
}
