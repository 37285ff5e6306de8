package bodies

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
)

func TestTimerDurationsAreSeededAndSpanTheRange(t *testing.T) {
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for k := 0; k < 10000; k++ {
		key := timerKey(k%100, k/100)
		d := timerDuration(key)
		if d < timerMin || d > timerMax {
			t.Fatalf("timerDuration(%#x) = %v, outside [%v, %v]", key, d, timerMin, timerMax)
		}
		if d != timerDuration(key) {
			t.Fatalf("timerDuration(%#x) is not deterministic", key)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	// 10000 uniform draws come within 1% of both ends.
	span := timerMax - timerMin
	if lo > timerMin+span/100 || hi < timerMax-span/100 {
		t.Errorf("10000 durations span only [%v, %v] of [%v, %v]", lo, hi, timerMin, timerMax)
	}
	if timerKey(1, 0) == timerKey(0, 1) || timerKey(0, 1<<31) == timerKey(1, 1<<31) {
		t.Error("timerKey maps two sleeps to one key")
	}
}

// TestTimerWindowEnd: a window holds the sleeps that start before
// timerWindow (10 ms) from its start, so it lasts from 10 ms to 10 ms plus
// one sleep; hand-computed schedules.
func TestTimerWindowEnd(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		j0   int
		durs []time.Duration // durs[j] is sleep j's duration
		want int
	}{
		{"3 ms each: starts at 0, 3, 6, 9 ms", 0, []time.Duration{3 * ms, 3 * ms, 3 * ms, 3 * ms, 3 * ms}, 4},
		{"5 ms each: starts at 0 and 5; the third would start at 10", 0, []time.Duration{5 * ms, 5 * ms, 5 * ms}, 2},
		{"one sleep of the whole window", 0, []time.Duration{10 * ms, ms}, 1},
		{"one sleep past the window", 0, []time.Duration{12 * ms, ms}, 1},
		{"from sleep 2: 4 + 4 + 1.9 < 10, +0.2 crosses", 2, []time.Duration{9 * ms, 9 * ms, 4 * ms, 4 * ms, 1900 * time.Microsecond, 200 * time.Microsecond, 5 * ms}, 6},
		{"50 µs each: 200 sleeps", 0, nil, 200},
	}
	for _, c := range cases {
		dur := func(j int) time.Duration {
			if c.durs == nil {
				return timerMin
			}
			return c.durs[j]
		}
		if got := timerWindowEnd(c.j0, dur); got != c.want {
			t.Errorf("%s: timerWindowEnd(%d) = %d, want %d", c.name, c.j0, got, c.want)
		}
	}
}

// TestTimerPlanFollowsTheWindows: with the real durations, every window of
// every coroutine lasts [10 ms, 15 ms), its last sleep starting before 10
// ms; the sample buffer has one slot per sleep of every coroutine's
// windows (the lead-in and N); the checksum is the sum of those sleeps' tags. And coroutine i's
// schedule does not depend on n.
func TestTimerPlanFollowsTheWindows(t *testing.T) {
	const n, windows = 50, 3
	var want uint64
	total, first3 := 0, 0
	for i := 0; i < n; i++ {
		dur := timerDurations(i)
		j := 0
		for w := 0; w < windows; w++ {
			start, at := j, time.Duration(0)
			for j = start; at < timerWindow; j++ {
				at += dur(j)
			}
			last := dur(j - 1)
			if at < timerWindow || at-last >= timerWindow || at >= timerWindow+timerMax {
				t.Fatalf("coroutine %d window %d: sleeps %d..%d end at %v (last %v)", i, w, start, j-1, at, last)
			}
			if end := timerWindowEnd(start, dur); end != j {
				t.Fatalf("coroutine %d window %d: timerWindowEnd(%d) = %d, want %d", i, w, start, end, j)
			}
		}
		if total += j; i == 2 {
			first3 = total
		}
		for k := 0; k < j; k++ {
			want += timerWakeTag(timerKey(i, k))
		}
	}
	// About 4.5 sleeps per window (10 ms / 2.525 ms, plus the one that
	// crosses the end): the offered rate is n / timerMeanSleep.
	if got := timerSamples(n, windows); got != total {
		t.Fatalf("timerSamples(%d, %d) = %d, want the %d planned sleeps", n, windows, got, total)
	}
	if per := float64(total) / (n * windows); per < 3.5 || per > 5.5 {
		t.Errorf("%.2f sleeps per window", per)
	}
	env := &scenarios.Env{N: windows - timerLeadIn, Params: map[string]string{"n": "50"}} // N counted windows after the lead-in
	if got := timerWant(env); got != want {
		t.Fatalf("timerWant = %#x, want the sum of the planned sleeps' tags %#x", got, want)
	}
	// A lost wake and a duplicated one do not cancel out.
	if timerWakeTag(timerKey(0, 1)) == timerWakeTag(timerKey(0, 2)) {
		t.Fatal("two wake tags are equal")
	}
	if small := timerSamples(3, windows); small != first3 {
		t.Errorf("coroutines 0..2 sleep %d times with n=3, %d with n=50: want the same schedule", small, first3)
	}
}

func TestTimerWait(t *testing.T) {
	for _, c := range []struct {
		deadline, now int64
		want          time.Duration
	}{{100, 40, 60}, {100, 100, 0}, {100, 150, 0}} {
		if got := timerWait(c.deadline, c.now); got != c.want {
			t.Errorf("timerWait(deadline %d, now %d) = %v, want %v", c.deadline, c.now, got, c.want)
		}
	}
}

func TestTimerOutcomeRejectsAnEarlyWake(t *testing.T) {
	_, err := timerOutcome([]int64{10, -3, 20}, 0, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "before its deadline") {
		t.Fatalf("timerOutcome = %v, want an error about a wake before its deadline", err)
	}
	out, err := timerOutcome([]int64{30, 10, 20}, 7, 90*time.Nanosecond, 2)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ops != 3 || out.Checksum != 7 || out.Values["p50-ns/wake"] != 20 || out.Values["max-ns/wake"] != 30 || out.Values["cpu-ns/wake"] != 45 {
		t.Fatalf("timerOutcome = %+v", out)
	}
}

func TestSummarizeLatencies(t *testing.T) {
	samples := make([]int64, 100)
	for i := range samples {
		samples[i] = int64(100 - i) // 100, 99, ..., 1: unsorted on purpose
	}
	got := summarizeLatencies(samples)
	// HdrHistogram's nearest rank: the value of sample ⌊p/100·n + 0.5⌋ in
	// order; below 2048 ns the histogram is exact.
	want := latencySummary{P50: 50, P90: 90, P99: 99, P999: 100, Max: 100}
	if got != want {
		t.Fatalf("summarizeLatencies(1..100) = %+v, want %+v", got, want)
	}
	if samples[0] != 100 {
		t.Fatal("summarizeLatencies reordered its input")
	}
	if got := summarizeLatencies([]int64{42}); got != (latencySummary{42, 42, 42, 42, 42}) {
		t.Fatalf("one sample: %+v", got)
	}
	// Above 2048 ns a value is kept to 3 significant digits: 999 samples of
	// 1 ms and one of 5 ms give a p50 within 0.1% of 1 ms, a p99.9 at 1 ms
	// (rank 999.5 → 999) and the exact max.
	big := make([]int64, 1000)
	for i := range big {
		big[i] = 1_000_000
	}
	big[500] = 5_000_000
	got = summarizeLatencies(big)
	if got.P50 < 1_000_000 || got.P50 > 1_001_000 || got.P999 != got.P50 || got.Max != 5_000_000 {
		t.Fatalf("summarizeLatencies(999×1ms, 5ms) = %+v", got)
	}
}

func TestFDWakeChecksumDependsOnEveryReply(t *testing.T) {
	env := &scenarios.Env{N: 5}
	var sum uint64
	for i := 0; i < 5; i++ {
		reply := fdWakeReply(fdWakeByte(i))
		if reply == fdWakeByte(i) {
			t.Fatalf("round %d: the reply equals the byte sent, so an unanswered byte would pass", i)
		}
		sum = fdWakeMix(sum, i, reply)
	}
	if got := fdWakeWant(env); got != sum {
		t.Fatalf("fdWakeWant = %#x, want %#x", got, sum)
	}
}

func TestTimerFloorNamesTheWait(t *testing.T) {
	for _, row := range scenarios.Rows {
		floor := row.TimerFloor()
		if !strings.Contains(floor, "clock=") || !strings.Contains(floor, "wait=") {
			t.Errorf("%s: timer floor %q does not name its clock and wait", row, floor)
		}
		// The results file joins per-row values with "; ".
		if strings.Contains(floor, ";") || strings.Contains(floor, "\n") {
			t.Errorf("%s: timer floor %q contains a ';' or a newline", row, floor)
		}
	}
	if floor := scenarios.StackfulAsm.TimerFloor(); !strings.Contains(floor, "epoll") {
		t.Errorf("stackful-asm timer floor %q does not name the reactor's epoll wait", floor)
	}
}

// TestTimerSteadyKeepsTheFirstEnd: the steady part ends when the first
// coroutine finishes; the later ones do not move it.
func TestTimerSteadyKeepsTheFirstEnd(t *testing.T) {
	var s timerSteady
	s.open(processCPU())
	s.end(5)
	first := s.cpu
	burnCPU()
	s.end(9)
	if s.wakes != 5 || s.cpu != first || s.cpu < 0 {
		t.Errorf("steady part: %d wakes, cpu %v (first end read %v); want the first end's 5 wakes and its cpu", s.wakes, s.cpu, first)
	}
}

// TestTimerSteadyStartsAfterTheFirstWindow: the steady part starts where
// the first coroutine finished its first window, not at the gate: the
// wakes and the CPU before that are left out, and a later first-window
// end does not move the start again.
func TestTimerSteadyStartsAfterTheFirstWindow(t *testing.T) {
	var s timerSteady
	s.open(processCPU())
	burnCPU() // the start: CPU that must not count
	before := processCPU()
	s.from(100)
	burnCPU()
	s.from(150) // a later first-window end
	s.end(400)
	if s.wakes != 300 {
		t.Errorf("steady part: %d wakes, want 300 (from the first window's end at 100 to the end at 400)", s.wakes)
	}
	if spent := processCPU() - before; s.cpu > spent || s.cpu <= 0 {
		t.Errorf("steady part: cpu %v, want more than 0 and at most the %v spent since the first window's end", s.cpu, spent)
	}
}

// burnCPU spends a few ms of CPU.
func burnCPU() {
	for i := 0; i < 1e6; i++ {
		timerSink += splitmix64(uint64(i))
	}
}

var timerSink uint64
