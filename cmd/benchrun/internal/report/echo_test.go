package report

import (
	"regexp"
	"strings"
	"testing"
)

// echoResults is a hand-made echo sweep at c=64 (20k, 40k, 80k req/s
// offered) plus c=1 and c=1024 at 20k, against the bound of 2 ms and the
// share of 95% (echo's LoadSweep), with a generator ceiling of 90k:
//   - stackful-asm sustains every rate → knee 80k, the sweep's top rate,
//     and within 80% of the ceiling (72k): possibly generator-bound;
//   - stackless completes 37k of 40k (92.5%) with a low p99 → knee 20k;
//     at c=1 its p99 is 5 ms: that cell is above saturation;
//   - goroutine-multi has no 40k cell, 80k fine → knee 20k (a gap ends it);
//   - goroutine-single: p99 3 ms at 20k already → no knee.
func echoResults(t *testing.T, ceiling string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("goos: linux\n")
	if ceiling != "" {
		b.WriteString("loadgen-ceiling: " + ceiling + "\n")
	}
	add := func(row, setting, achieved, p99 string) {
		for range 3 {
			b.WriteString("BenchmarkEcho/impl=" + row + "/" + setting + " 1 " + achieved + " req/s 50000 p50-ns/req " + p99 + " p99-ns/req\n")
		}
	}
	add("stackful-asm", "c=64/rate=20000", "20000", "100000")
	add("stackful-asm", "c=64/rate=40000", "39900", "200000")
	add("stackful-asm", "c=64/rate=80000", "79000", "500000")
	add("stackful-asm", "c=1/rate=20000", "20000", "60000")
	add("stackless", "c=64/rate=20000", "20000", "100000")
	add("stackless", "c=64/rate=40000", "37000", "150000")
	add("stackless", "c=64/rate=80000", "60000", "90000000")
	add("stackless", "c=1/rate=20000", "19990", "5000000")
	add("stackless", "c=1024/rate=20000", "19990", "300000")
	add("goroutine-multi", "c=64/rate=20000", "20000", "100000")
	add("goroutine-multi", "c=64/rate=80000", "80000", "100000")
	b.WriteString("# corobench:unsupported BenchmarkEcho/impl=stackful-coro/c=64/rate=20000: not supported: no sockets here\n")
	add("goroutine-single", "c=64/rate=20000", "20000", "3000000")
	add("goroutine-single", "c=64/rate=40000", "40000", "100000")
	return buildTestPage(t, b.String())
}

func section(t *testing.T, html, id string) string {
	t.Helper()
	i := strings.Index(html, `<section id="`+id+`">`)
	if i < 0 {
		t.Fatalf("no section %s", id)
	}
	sec := html[i:]
	return sec[:strings.Index(sec, "</section>")]
}

// TestEchoKnee checks the echo knees, their ranking and why each ends,
// the generator's ceiling read from its config line and shown, and the
// row near it marked.
func TestEchoKnee(t *testing.T) {
	sec := section(t, echoResults(t, "Echo c=64: 90000 req/s (measured against a trivial server)"), "s-echo")
	for _, want := range []string{
		`<tr><td>1</td><th>stackful-asm</th><td>80k req/s<div class="flag">possibly generator-bound</div></td><td>c=64/rate=80000; p99-ns/req 500 µs there, 79k req/s achieved; the highest rate of this run: the knee may lie higher`,
		`<tr><td>2</td><th>stackless</th><td>20k req/s</td><td>c=64/rate=20000; p99-ns/req 100 µs there, 20k req/s achieved; next: over at 40k req/s: 37k req/s achieved (92%)`,
		`<tr><td>2</td><th>goroutine-multi</th><td>20k req/s</td><td>c=64/rate=20000; p99-ns/req 100 µs there, 20k req/s achieved; next: no figure at 40k req/s`,
		`<tr><td>4</td><th>goroutine-single</th><td>none in this run</td><td>over at 20k req/s: p99-ns/req 3 ms`,
		`other settings: c=1/rate=20000: not sustained; c=1024/rate=20000: sustained`,
		`<b>Load generator ceiling at c=64:</b> 90k req/s (measured against a trivial server)`,
		`at or above 80% of it (72k req/s)`,
		`of 40k req/s offered: 92.5%`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("echo section lacks %q", want)
		}
	}
	// Latencies above saturation (p50 and p99 each): stackless at 40k, 80k
	// and c=1; goroutine-single at 20k and 40k; goroutine-multi at 80k,
	// past the gap at 40k. Their req/s cells say not sustained.
	if got := strings.Count(sec, "above saturation: a queue"); got != 12 {
		t.Errorf("%d latency figures labelled above saturation, want 12", got)
	}
	if got := strings.Count(sec, "above saturation: not sustained at this rate"); got != 6 {
		t.Errorf("%d req/s figures labelled not sustained, want 6", got)
	}
	// The knee and throughput charts; each row's spectrum across the
	// sweep; the rows compared at c=1, c=1024 and the sweep's lowest rate,
	// not at its other rates (those are in the rows' own charts).
	for _, chart := range []string{"echo-knee.png", "echo-throughput.png", "echo-stackful-asm-req-spectrum.png", "echo-goroutine-single-req-spectrum.png",
		"echo-c-1-rate-20000-req-percentiles.png", "echo-c-64-rate-20000-req-percentiles.png", "echo-c-1024-rate-20000-req-percentiles.png"} {
		if !strings.Contains(sec, `src="`+chart+`"`) {
			t.Errorf("the echo section does not show %s", chart)
		}
	}
	// No bars of every rate of the sweep for what those charts show.
	for _, bars := range []string{"echo-p99-ns-req-bars", "echo-req-s-bars"} {
		if strings.Contains(sec, bars) {
			t.Errorf("the echo section shows %s", bars)
		}
	}
	if strings.Contains(sec, "echo-c-64-rate-40000-req-percentiles") {
		t.Error("the rows are compared at every rate of the sweep, not only its lowest")
	}
	// Without the line: no ceiling, no generator-bound mark.
	sec = section(t, echoResults(t, ""), "s-echo")
	if strings.Contains(sec, "Load generator ceiling") || strings.Contains(sec, "generator-bound") {
		t.Error("a run without a loadgen-ceiling line shows a ceiling")
	}
}

// TestHeadlineLabelsOverload: the headline's echo latency at c=64 and
// 20k req/s is labelled above saturation for the row whose knee is below
// it (goroutine-single) and for no other; the knee line shows each row's
// knee, the highest starred, and the generator-bound mark.
func TestHeadlineLabelsOverload(t *testing.T) {
	sec := section(t, echoResults(t, "Echo c=64: 90000 req/s (test)"), "glance")
	row := func(label string) string {
		i := strings.Index(sec, ">"+label+"</a>")
		if i < 0 {
			t.Fatalf("no headline line %q in %s", label, sec)
		}
		r := sec[i:]
		return r[:strings.Index(r, "</tr>")]
	}
	p99 := row("echo latency p99")
	if got := strings.Count(p99, `<div class="flag">above saturation</div>`); got != 1 {
		t.Errorf("echo latency p99 line has %d overload labels, want 1: %s", got, p99)
	}
	for _, c := range regexp.MustCompile(`<td class="c-[^"]*"[^>]*>.*?</td>`).FindAllString(p99, -1) {
		if strings.Contains(c, "above saturation") != strings.Contains(c, "goroutine-single") {
			t.Errorf("overload label on the wrong row: %s", c)
		}
	}
	knee := row("echo max sustained")
	for _, want := range []string{`<span class="star">★</span> <span class="med">80k</span>`, "possibly generator-bound", "the sweep&#39;s top rate", `<span class="med">none</span>`, "achieved 79k"} {
		if !strings.Contains(knee, want) {
			t.Errorf("knee line lacks %q: %s", want, knee)
		}
	}
	// stackful-coro has no figure in the sweep: its note, not "none".
	if !strings.Contains(knee, `<td class="c-unsupported" title="not supported: no sockets here">`) {
		t.Errorf("knee line does not carry stackful-coro's note: %s", knee)
	}
	if strings.Count(knee, "★") != 1 {
		t.Errorf("knee line stars %d rows, want 1", strings.Count(knee, "★"))
	}
}
