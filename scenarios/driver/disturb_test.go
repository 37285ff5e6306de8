package driver

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/scenarios"
)

// TestDisturbedMark checks the default mark on hand-made signals: above
// DisturbedShare of the wall time waiting on a runqueue for tasks other
// than the process's own threads, and only then.
func TestDisturbedMark(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	for _, c := range []struct {
		sig  Signal
		want bool
	}{
		{Signal{Wall: 100 * ms}, false},
		{Signal{Wall: 100 * ms, RunDelay: 4 * ms}, false},  // a blocking cell's wake-ups
		{Signal{Wall: 100 * ms, RunDelay: 12 * ms}, false}, // Spawn pool=cold's own level
		{Signal{Wall: 100 * ms, RunDelay: 15 * ms}, false}, // at the mark is not above it
		{Signal{Wall: 100 * ms, RunDelay: 15*ms + 1}, true},
		{Signal{Wall: 100 * ms, RunDelay: 5 * ms, AllDelay: 90 * ms}, false}, // helpers waiting for the body
		{Signal{Wall: 100 * ms, RunDelay: 150 * ms}, true},                   // several threads waiting
		{Signal{Wall: 100 * ms, CPU: 5 * ms, Nivcsw: 1000}, false},           // only the wait counts
		{Signal{RunDelay: ms}, false},                                        // no wall time: no verdict
		// Not on one CPU: the other threads may have run beside the
		// body on another, so nothing is taken off.
		{Signal{Wall: 100 * ms, RunDelay: 40 * ms, Own: 40 * ms}, true},
		// The process's own threads ran while the body waited: their
		// time comes off the wait, and only the rest is judged.
		{Signal{Wall: 100 * ms, RunDelay: 40 * ms, Own: 40 * ms, OneCPU: true}, false},  // sysmon, a reactor thread: the row's own
		{Signal{Wall: 100 * ms, RunDelay: 40 * ms, Own: 60 * ms, OneCPU: true}, false},  // more than the wait: 0, not negative
		{Signal{Wall: 100 * ms, RunDelay: 40 * ms, Own: 25 * ms, OneCPU: true}, false},  // 15 ms left: at the mark
		{Signal{Wall: 100 * ms, RunDelay: 40 * ms, Own: 25*ms - 1, OneCPU: true}, true}, // another task ran too
		{Signal{Wall: 100 * ms, RunDelay: 90 * ms, Own: 10 * ms, OneCPU: true}, true},   // mostly another task
		{Signal{Wall: 16 * us, RunDelay: 12 * us, Own: 12 * us, OneCPU: true}, false},   // a shutdown cycle: one wake of our own thread
		{Signal{Wall: 16 * us, RunDelay: 12 * us, Own: 3 * us, OneCPU: true}, true},     // … and of another task's
	} {
		if got := Disturbed(c.sig); got != c.want {
			t.Errorf("Disturbed(%+v) = %v (share %.3f), want %v", c.sig, got, c.sig.DelayShare(), c.want)
		}
	}
}

// TestSignalFromReadings: the signal's arithmetic on hand-made schedstat
// readings. The body's thread is the one that ran most; its wait less
// what the other threads ran is judged, over the time between its own
// two readings.
func TestSignalFromReadings(t *testing.T) {
	us := time.Microsecond
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	reading := func(ths map[string]threadSched) schedTotals {
		return schedTotals{threads: ths, ok: true, oneCPU: true}
	}
	// A shutdown cycle: the body's thread (1) ran 40 µs of a 60 µs
	// window and waited 20 µs, while sysmon (2) ran 12 µs and a thread
	// the runtime started during the run (3) ran 8 µs: all of the wait
	// is the process's own.
	before := reading(map[string]threadSched{
		"1": {exec: 1000 * us, delay: 100 * us, at: at(10 * us)},
		"2": {exec: 50 * us, delay: 5 * us, at: at(15 * us)},
	})
	after := reading(map[string]threadSched{
		"1": {exec: 1040 * us, delay: 120 * us, at: at(70 * us)},
		"2": {exec: 62 * us, delay: 9 * us, at: at(75 * us)},
		"3": {exec: 8 * us, delay: 1 * us, at: at(76 * us)},
	})
	sig := before.to(after, at(0), at(80*us))
	want := Signal{Wall: 60 * us, RunDelay: 20 * us, AllDelay: 25 * us, CPU: 60 * us, Own: 20 * us, OneCPU: true}
	if sig != want || sig.Wait() != 0 || Disturbed(sig) {
		t.Errorf("own threads only: %+v (wait %v), want %+v, wait 0, not disturbed", sig, sig.Wait(), want)
	}
	// The same run, but the body's thread waited 35 µs: 15 µs of it for
	// another task, 25% of its 60 µs window.
	after.threads["1"] = threadSched{exec: 1040 * us, delay: 135 * us, at: at(70 * us)}
	sig = before.to(after, at(0), at(80*us))
	if sig.RunDelay != 35*us || sig.Own != 20*us || sig.Wait() != 15*us || !Disturbed(sig) {
		t.Errorf("another task too: %+v (wait %v, share %.2f), want a wait of 15µs for others, disturbed", sig, sig.Wait(), sig.DelayShare())
	}
	// The same readings off one CPU: the other threads may have run
	// beside the body, so nothing is taken off its 35 µs.
	before.oneCPU = false
	if sig = before.to(after, at(0), at(80*us)); sig.OneCPU || sig.Wait() != 35*us {
		t.Errorf("not on one CPU: %+v (wait %v), want the whole 35µs", sig, sig.Wait())
	}
	before.oneCPU = true
	// A thread that ended during the run (a locked goroutine's thread
	// ends with it) is gone from the second reading: the window's figures
	// are the live threads' alone, not minus its whole life's.
	before.threads["4"] = threadSched{exec: 90000 * us, delay: 3000 * us, at: at(16 * us)}
	if sig = before.to(after, at(0), at(80*us)); sig.CPU != 60*us || sig.AllDelay != 40*us {
		t.Errorf("a thread ended since the first reading: CPU %v, all threads' delay %v, want 60µs and 40µs", sig.CPU, sig.AllDelay)
	}
	delete(before.threads, "4")
	// A body's thread started during the run has no first reading: its
	// window is the whole one.
	delete(before.threads, "1")
	if sig = before.to(after, at(0), at(80*us)); sig.Wall != 80*us {
		t.Errorf("a body thread started since the first reading: wall %v, want the whole 80µs", sig.Wall)
	}
	// No readings (no schedstat): only the wall time, and no verdict.
	sig = schedTotals{}.to(schedTotals{}, at(0), at(80*us))
	if sig != (Signal{Wall: 80 * us}) || Disturbed(sig) {
		t.Errorf("no readings: %+v, want the wall time alone", sig)
	}
}

// TestReadSchedSeesARunqueueWait: two threads that spin on one CPU wait
// for each other, and the process's summed run delay shows it.
func TestReadSchedSeesARunqueueWait(t *testing.T) {
	cpu, set := schedstatAndFirstCPU(t)
	const spin = 60 * time.Millisecond
	start := time.Now()
	t0 := readSched()
	var pinned, spun, wg sync.WaitGroup
	release, spinNow := make(chan struct{}), make(chan struct{})
	var ran [2]time.Duration // each spinner's CPU time, by its own thread's figures
	for i := range 2 {
		pinned.Add(1)
		spun.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread ends with the goroutine: its affinity goes with it
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Error(err)
				pinned.Done()
				spun.Done()
				return
			}
			// Both start from the same moment, so that they share the
			// CPU for the whole of the shorter spin: when a spinner
			// started alone (the other's thread still being made or
			// pinned, which a loaded machine stretches), the body's
			// thread read a 17.6 ms wait in CI once. The first spins
			// half as long again, alone at the end, so that it is
			// the one that ran most (the body's thread): with equal
			// spins the reading could take either for it.
			pinned.Done()
			<-spinNow
			exec0 := threadExec(t)
			d := spin
			if i == 0 {
				d += spin / 2
			}
			for end := time.Now().Add(d); time.Now().Before(end); {
			}
			ran[i] = threadExec(t) - exec0
			spun.Done()
			<-release // alive until read: an ended thread takes its figures with it
		}()
	}
	pinned.Wait()
	close(spinNow)
	spun.Wait()
	sig := t0.since(start)
	close(release)
	wg.Wait()
	// Both threads want all of one CPU for the same 60 ms: each waits for
	// the other about half of it, the one that ran most (it spins 30 ms
	// more, alone) included. Read loosely: a third of one spin. (They
	// spin for wall time, not CPU: on a busy machine each gets less, and
	// waits more.) The other spinner is a thread of
	// this process: what it ran is Own, and it is the wait's cause, so
	// the mark's Wait is that much less than RunDelay.
	if sig.RunDelay < spin/3 || sig.AllDelay < sig.RunDelay || sig.CPU <= 0 {
		t.Errorf("two threads spinning %v each on cpu%d: %+v, want a run delay of at least %v, all threads' at least that, some CPU", spin, cpu, sig, spin/3)
	}
	// Own holds the spinner that ran less (the other ran most: it is the
	// body's thread), by that spinner's own figures, taken inside the
	// window. The reading thread here is not pinned: nothing is taken off.
	other := min(ran[0], ran[1])
	if sig.Own < other || sig.Own > sig.CPU || sig.OneCPU == (set.Count() > 1) || (!sig.OneCPU && sig.Wait() != sig.RunDelay) {
		t.Errorf("two threads spinning %v each on cpu%d (CPU %v and %v): %+v, want the other spinner's CPU time (at least %v) in Own, OneCPU %v, and Wait = RunDelay unpinned (%v)", spin, cpu, ran[0], ran[1], sig, other, set.Count() == 1, sig.Wait())
	}
}

// threadExec is the calling thread's CPU time (its schedstat exec ns).
func threadExec(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		t.Error(err)
		return 0
	}
	var exec int64
	if _, err := fmt.Sscan(string(b), &exec); err != nil {
		t.Error(err)
	}
	return time.Duration(exec)
}

// TestReadSchedMarksAnotherTask: a thread of this process spinning on a
// CPU beside another process spinning there waits for that process, and
// that wait is not taken off as the process's own (Own stays small): the
// run is marked.
func TestReadSchedMarksAnotherTask(t *testing.T) {
	cpu, _ := schedstatAndFirstCPU(t)
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes(1) to spin beside the test")
	}
	var one unix.CPUSet
	one.Set(cpu)
	other := exec.Command(yes) // its output goes to /dev/null: it spins, never blocks
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	}()
	if err := unix.SchedSetaffinity(other.Process.Pid, &one); err != nil {
		t.Fatal(err)
	}
	const spin = 60 * time.Millisecond
	done := make(chan Signal)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: its affinity goes with it
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			t.Error(err)
			close(done)
			return
		}
		start := time.Now()
		t0 := readSched()
		for end := time.Now().Add(spin); time.Now().Before(end); {
		}
		done <- t0.since(start)
	}()
	sig, ok := <-done
	if !ok {
		return
	}
	// yes(1) and the spinner share the CPU: the spinner waits about half
	// of its 60 ms, for a task that is not this process's.
	if !sig.OneCPU || sig.Wait() < spin/4 || !Disturbed(sig) {
		t.Errorf("a spinner beside yes(1) on cpu%d: %+v (wait %v, share %.2f), want a wait for another task of at least %v, marked disturbed", cpu, sig, sig.Wait(), sig.DelayShare(), spin/4)
	}
}

// markScript returns a mark that gives the verdicts in order, one per
// timed run, and fails the test if asked more often.
func markScript(t *testing.T, verdicts ...bool) func(Signal) bool {
	i := 0
	return func(Signal) bool {
		if i >= len(verdicts) {
			t.Fatalf("mark asked for a verdict on timed run %d; the script has %d", i, len(verdicts))
		}
		i++
		return verdicts[i-1]
	}
}

// withTimedBudget sets the timed budget to b bench times for the test.
func withTimedBudget(t *testing.T, b int64) {
	old := timedBudget
	timedBudget = b
	t.Cleanup(func() { timedBudget = old })
}

// countingScenario reports as its value the index of the call (so a
// timed run's value names it), sleeping N ms in its timed region.
func countingScenario(calls *int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "counting", Bench: "Counting",
		Metrics: []scenarios.Metric{{Unit: "v", Kind: scenarios.BodyMeasured}},
		Blocking: func(_ scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
			i := *calls
			*calls++
			env.ResetTimer()
			time.Sleep(time.Duration(env.N) * time.Millisecond)
			env.StopTimer()
			return scenarios.Outcome{Ops: int64(env.N), Checksum: uint64(env.N), Values: map[string]float64{"v": float64(i)}}, nil
		},
		Want: func(env *scenarios.Env) uint64 { return uint64(env.N) },
	}
}

// TestDisturbedRunsAreRetakenAndLeftOut checks hand-computed cases of the
// re-takes and the median over clean runs: 5 planned runs need 3 clean;
// at most 2 re-takes, made only while they can still give a majority; an
// even count of runs in the median loses its earliest.
func TestDisturbedRunsAreRetakenAndLeftOut(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	withTimedBudget(t, 1000) // the scripted verdicts decide, not a loaded machine's set-up times
	const T, F = true, false
	for _, c := range []struct {
		name      string
		verdicts  []bool // per timed run, re-takes included
		disturbed bool
	}{
		{"two of five disturbed: no re-take", []bool{F, T, F, F, T}, false},
		{"one of five disturbed: four clean, the earliest left out", []bool{F, T, F, F, F}, false},
		{"three of five: a clean re-take ends it", []bool{T, T, T, F, F, F}, false},
		{"three of five: two re-takes", []bool{T, T, T, F, F, T, F}, false},
		{"four of five: two re-takes give the third clean run", []bool{T, T, T, T, F, F, F}, false},
		{"re-takes disturbed too", []bool{T, T, T, F, F, T, T}, true},
		{"first re-take disturbed: the second cannot reach three", []bool{T, T, T, T, F, T}, true},
		{"all five: no re-take can help", []bool{T, T, T, T, T}, true},
		{"none", []bool{F, F, F, F, F}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			// Five runs asked for (the budget does not decide how many),
			// each a ~40 ms sleep, in a budget of 1000 bench times: the
			// budget never cuts a re-take here (under -race on a loaded
			// machine, two bench times did: TestRetakesHoldTheBudget
			// tests the budget).
			sm, err := MeasureWith(countingScenario(&calls), scenarios.GoroutineSingle, nil,
				Options{Benchtime: 200 * time.Millisecond, Runs: DefaultRuns, Disturbed: markScript(t, c.verdicts...)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sm.DisturbedRuns, c.verdicts) || len(sm.Runs) != len(c.verdicts) || len(sm.Signals) != len(c.verdicts) {
				t.Fatalf("%d runs with verdicts %v, want %v", len(sm.Runs), sm.DisturbedRuns, c.verdicts)
			}
			var clean, all []float64
			for i, v := range sm.Runs {
				if i > 0 && v[0] != sm.Runs[i-1][0]+1 {
					t.Errorf("runs %v are not consecutive calls", sm.Runs)
				}
				all = append(all, v[0])
				if !c.verdicts[i] {
					clean = append(clean, v[0])
				}
			}
			use := clean
			if c.disturbed {
				use = all
			}
			if len(use)%2 == 0 {
				use = use[1:] // an even count: the earliest is left out, the median is one run's
			}
			if len(use)%2 != 1 {
				t.Fatalf("the expected median is over %v, an even count", use)
			}
			want := median(use)
			if sm.Disturbed != c.disturbed || !sm.Judged || sm.Values[0] != want {
				t.Errorf("value %v, judged %v, disturbed %v; want %v (median of %s), disturbed %v",
					sm.Values[0], sm.Judged, sm.Disturbed, want, map[bool]string{false: fmt.Sprint("clean ", clean), true: fmt.Sprint("all ", all)}[c.disturbed]+" (earliest left out if even)", c.disturbed)
			}
		})
	}
}

// TestRetakesHoldTheBudget: a run that takes the whole timed budget
// leaves no room for a re-take, however disturbed the runs.
func TestRetakesHoldTheBudget(t *testing.T) {
	withRowGOMAXPROCS(t, scenarios.GoroutineSingle)
	calls := 0
	// 1 ms bench time: a budget of 2 ms for the timed runs, which five
	// runs of one 1 ms iteration each already overrun.
	sm, err := MeasureWith(countingScenario(&calls), scenarios.GoroutineSingle, nil,
		Options{Benchtime: time.Millisecond, Runs: DefaultRuns, Disturbed: func(Signal) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if len(sm.Runs) != DefaultRuns || !sm.Disturbed {
		t.Errorf("%d runs, disturbed %v: want the %d planned, no re-take past the budget, and the process disturbed", len(sm.Runs), sm.Disturbed, DefaultRuns)
	}
}

// TestMarkAppliesOnOneP: the default mark judges a cell on one P only;
// NoMark turns any mark off; a FixedIters cell's one run is judged.
func TestMarkAppliesOnOneP(t *testing.T) {
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	timed := touchScenario(0)
	if judge(timed, Options{}) != nil {
		t.Error("a mark applies on 2 Ps by default")
	}
	runtime.GOMAXPROCS(1)
	if judge(timed, Options{}) == nil {
		t.Error("no mark on one P by default")
	}
	if judge(timed, Options{NoMark: true, Disturbed: Disturbed}) != nil {
		t.Error("NoMark left a mark")
	}
	for _, name := range []string{"memory", "burst", "exec", "offload", "timer"} {
		s, _ := scenarios.Lookup(name)
		if judge(s, Options{}) != nil {
			t.Errorf("%s is judged by default on one P", name)
		}
	}
	for _, name := range []string{"switch", "fdwake", "shutdown", "pingpong"} {
		s, _ := scenarios.Lookup(name)
		if judge(s, Options{}) == nil {
			t.Errorf("%s is not judged by default on one P", name)
		}
	}
	for _, bad := range []bool{false, true} {
		sm, err := MeasureWith(touchScenario(0), scenarios.GoroutineSingle, nil,
			Options{Benchtime: time.Millisecond, Disturbed: func(Signal) bool { return bad }})
		if err != nil {
			t.Fatal(err)
		}
		if len(sm.Runs) != 1 || sm.Disturbed != bad || !sm.Judged {
			t.Errorf("FixedIters with a disturbed run %v: %d runs, disturbed %v, judged %v", bad, len(sm.Runs), sm.Disturbed, sm.Judged)
		}
	}
	sm, err := MeasureWith(touchScenario(0), scenarios.GoroutineSingle, nil, Options{Benchtime: time.Millisecond, NoMark: true})
	if err != nil {
		t.Fatal(err)
	}
	if sm.Judged || sm.Disturbed {
		t.Errorf("NoMark: judged %v, disturbed %v", sm.Judged, sm.Disturbed)
	}
}

// TestNotJudgedIsReadFromTheScenario: the driver's verdict on every
// registered scenario is its declaration (Scenario.NotJudged) read back,
// on one P; a scenario whose headline is not a time declares it; and a
// declaration on a scenario made here turns the default mark off.
func TestNotJudgedIsReadFromTheScenario(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	if len(scenarios.All) == 0 {
		t.Fatal("no scenario registered: is package scenarios/bodies linked into the test?")
	}
	for _, s := range scenarios.All {
		if got, want := judge(s, Options{}) != nil, s.NotJudged == ""; got != want {
			t.Errorf("%s: judged %v, but its NotJudged is %q", s.Name, got, s.NotJudged)
		}
		if !strings.Contains(s.Metrics[0].Unit, "ns/") && s.NotJudged == "" {
			t.Errorf("%s: its headline %s is not a time, which a runqueue wait does not move, and it does not say so in NotJudged", s.Name, s.Metrics[0].Unit)
		}
	}
	s := touchScenario(0)
	if judge(s, Options{}) == nil {
		t.Fatal("a scenario without NotJudged is not judged on one P")
	}
	s.NotJudged = "a helper of its own"
	if judge(s, Options{}) != nil {
		t.Error("a scenario with NotJudged is judged on one P")
	}
	if judge(s, Options{Disturbed: Disturbed}) == nil {
		t.Error("NotJudged overrode an explicit Options.Disturbed")
	}
}

// schedstatAndFirstCPU skips the test where the kernel keeps no scheduler
// statistics, and returns the first CPU the test may run on (the one the
// schedstat tests pin their threads to) and the test's affinity mask.
func schedstatAndFirstCPU(t *testing.T) (int, unix.CPUSet) {
	t.Helper()
	if b, err := os.ReadFile("/proc/self/schedstat"); err != nil || string(b[:2]) == "0 " {
		t.Skipf("no scheduler statistics here (%v)", err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			return i, set
		}
	}
	t.Fatal("the test's affinity mask names no CPU")
	return -1, set
}
