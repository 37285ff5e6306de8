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
		d := timerDuration(k)
		if d < timerMin || d > timerMax {
			t.Fatalf("timerDuration(%d) = %v, outside [%v, %v]", k, d, timerMin, timerMax)
		}
		if d != timerDuration(k) {
			t.Fatalf("timerDuration(%d) is not deterministic", k)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	// 10000 uniform draws come within 1% of both ends.
	span := timerMax - timerMin
	if lo > timerMin+span/100 || hi < timerMax-span/100 {
		t.Errorf("10000 durations span only [%v, %v] of [%v, %v]", lo, hi, timerMin, timerMax)
	}
}

func TestTimerChecksumCountsEachWakeOnce(t *testing.T) {
	env := &scenarios.Env{N: 3, Params: map[string]string{"n": "4"}}
	var sum uint64
	for k := 0; k < 12; k++ {
		sum += timerWakeTag(k)
	}
	if got := timerWant(env); got != sum {
		t.Fatalf("timerWant = %#x, want the sum of 12 wake tags %#x", got, sum)
	}
	// A lost wake and a duplicated one do not cancel out.
	if sum-timerWakeTag(5)+timerWakeTag(6) == sum {
		t.Fatal("tags 5 and 6 are equal")
	}
}

func TestTimerOutcomeRejectsAnEarlyWake(t *testing.T) {
	_, err := timerOutcome([]int64{10, -3, 20}, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "before its deadline") {
		t.Fatalf("timerOutcome = %v, want an error about a wake before its deadline", err)
	}
	out, err := timerOutcome([]int64{30, 10, 20}, 7, 90*time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ops != 3 || out.Checksum != 7 || out.Values["p50-ns/wake"] != 20 || out.Values["max-ns/wake"] != 30 || out.Values["cpu-ns/wake"] != 30 {
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
