package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimerKnee builds a page from hand-made Timer figures and checks the
// knees against the bound of 2 ms (timer's LoadSweep): offered rates are
// n / 2.525 ms = 396, 396k and 3.96M wakes/s.
//   - stackful-asm: p99 0.1, 0.5, 30 ms → knee at n=1000 (396k), n=10000 flagged;
//   - stackless: 0.1, 0.2, 1 ms, all within the bound, but 335 ns of CPU
//     per wake at 3.96M wakes/s needs 1.33 CPUs of its 1 → knee at n=1000;
//   - goroutine-single: 3 ms already at n=1 → no knee, every latency flagged.
func TestTimerKnee(t *testing.T) {
	var b strings.Builder
	b.WriteString("goos: linux\n")
	add := func(row, n, p50, p99 string) {
		cpu := map[string]string{"stackful-asm": "1700", "stackless": "335", "goroutine-single": "1400"}[row]
		for range 3 {
			b.WriteString("BenchmarkTimer/impl=" + row + "/n=" + n + " 1 " + p50 + " p50-ns/wake " + p99 + " p99-ns/wake " + cpu + " cpu-ns/wake\n")
		}
	}
	add("stackful-asm", "1", "50000", "100000")
	add("stackful-asm", "1000", "60000", "500000")
	add("stackful-asm", "10000", "9000000", "30000000")
	add("stackless", "1", "50000", "100000")
	add("stackless", "1000", "60000", "200000")
	add("stackless", "10000", "70000", "1000000")
	add("goroutine-single", "1", "1000000", "3000000")
	add("goroutine-single", "1000", "1000000", "3000000")
	add("goroutine-single", "10000", "5000000", "9000000")
	dir := t.TempDir()
	in := filepath.Join(dir, "timer.txt")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	index, err := Build([]string{in}, out)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(index)
	html := string(page)
	sec := html[strings.Index(html, `<section id="s-timer">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{
		`<tr><td>1</td><th>stackful-asm</th><td>396k wakes/s</td><td>n=1000; p99-ns/wake 500 µs there; next: 3.96M wakes/s needs 6.7 CPUs at 1.70 µs per wake; the row has 1</td></tr>`,
		`<tr><td>1</td><th>stackless</th><td>396k wakes/s</td><td>n=1000; p99-ns/wake 200 µs there; next: 3.96M wakes/s needs 1.3 CPUs at 335 ns per wake; the row has 1</td></tr>`,
		`<tr><td>3</td><th>goroutine-single</th><td>none in this run</td><td>over at 396 wakes/s: p99-ns/wake 3 ms</td></tr>`,
		`within 2 ms`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("timer section lacks %q", want)
		}
	}
	// Flags: the latency units (not cpu-ns/wake) of stackful-asm's and
	// stackless' n=10000 (2 each) and goroutine-single's three columns (6).
	if got := strings.Count(sec, "above saturation: a queue"); got != 10 {
		t.Errorf("%d cells flagged above the knee, want 10", got)
	}
	// The headline's timer p50 and p99 (at n=1000) are labelled where
	// n=1000 is above the row's knee: goroutine-single's only.
	glance := html[strings.Index(html, `<section id="glance">`):]
	glance = glance[:strings.Index(glance, "</section>")]
	if got := strings.Count(glance, `<div class="flag">above saturation</div>`); got != 2 {
		t.Errorf("%d headline timer figures labelled above saturation, want 2 (goroutine-single's p50 and p99)", got)
	}
	if _, err := os.Stat(filepath.Join(out, "timer-knee.png")); err != nil {
		t.Errorf("no knee chart: %v", err)
	}
	if !strings.Contains(sec, `src="timer-knee.png"`) {
		t.Error("the page does not show the knee chart")
	}
}
