package bodies

import (
	"testing"
	"time"
)

// TimerWindow is the bodies' schedule: window by window it holds the
// sleeps timerSamples counts for n=1, with timerDuration's durations, and
// each window's sleeps start under timerWindow.
func TestTimerWindow(t *testing.T) {
	const windows = 50
	planned := timerSamples(1, windows)
	j := 0
	for w := range windows {
		durs, next := TimerWindow(0, j)
		if len(durs) != next-j || len(durs) == 0 {
			t.Fatalf("window %d: %d durations from sleep %d to %d", w, len(durs), j, next)
		}
		var at time.Duration
		for k, d := range durs {
			if d != timerDuration(timerKey(0, j+k)) {
				t.Fatalf("window %d sleep %d: %v, want %v", w, j+k, d, timerDuration(timerKey(0, j+k)))
			}
			if at >= timerWindow {
				t.Fatalf("window %d: sleep %d starts at %v, past the window", w, j+k, at)
			}
			at += d
		}
		if at < timerWindow {
			t.Fatalf("window %d ends at %v, under the window %v: a sleep is missing", w, at, timerWindow)
		}
		j = next
	}
	if j != planned {
		t.Errorf("%d windows hold %d sleeps, timerSamples counts %d", windows, j, planned)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	samples := make([]int64, 100)
	for i := range samples {
		samples[i] = int64(i + 1) // 1..100 ns, exact in the histogram
	}
	if p50, p99 := LatencyPercentiles(samples); p50 != 50 || p99 != 99 {
		t.Errorf("p50 %d p99 %d over 1..100, want 50 99", p50, p99)
	}
}
