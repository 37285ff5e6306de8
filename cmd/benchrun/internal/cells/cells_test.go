package cells

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corobench/corobench/internal/results"
)

const fixture = `goos: linux
cpu: Test CPU @ 1.00GHz
gomaxprocs: 2
BenchmarkYield/impl=goroutine-multi/n=4096 10 300 ns/switch
gomaxprocs: 1
timer-floor: epoll_pwait2
BenchmarkYield/impl=stackless/n=4096 10 3 ns/switch
BenchmarkYield/impl=stackless/n=4096 10 0 ns/switch
BenchmarkYield/impl=stackless/n=64 10 2 ns/switch
BenchmarkYield/impl=stackful-asm/n=64 10 9 ns/switch
BenchmarkMemory/impl=stackless/n=1000 1 1.5 MB/coroutine 40 heap-B/coroutine
# corobench:unsupported BenchmarkYield/impl=stackful-coro/n=64: not supported: testing
# corobench:failed BenchmarkPriority/impl=stackless/n=1000: checksum mismatch
`

func load(t *testing.T, text string) *Set {
	t.Helper()
	f, err := results.Read(strings.NewReader(text), "fixture.txt")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Group([]*results.File{f})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestGroup(t *testing.T) {
	set := load(t, fixture)
	var names []string
	for _, sc := range set.Scenarios {
		names = append(names, sc.Name)
	}
	// Display order follows the scenario table, not the file.
	if want := []string{"Yield", "Memory", "Priority"}; !slices.Equal(names, want) {
		t.Fatalf("scenarios %v, want %v", names, want)
	}
	y := set.Scenario("Yield")
	if want := []string{"n=64", "n=4096"}; !slices.Equal(y.Columns, want) {
		t.Errorf("columns %v, want %v (numeric order)", y.Columns, want)
	}
	if want := []string{"stackful-asm", "stackful-coro", "stackless", "goroutine-multi"}; !slices.Equal(y.Rows, want) {
		t.Errorf("rows %v, want %v", y.Rows, want)
	}
	if !slices.Equal(y.Units, []string{"ns/switch"}) {
		t.Errorf("units %v: the tidied sec/switch (or an untidied 0 ns/switch) leaked", y.Units)
	}
	c := y.Cell("stackless", "n=4096", "ns/switch")
	if c == nil || !slices.Equal(c.Values, []float64{3, 0}) || c.Summary.N != 2 || !c.Summary.FewSamples {
		t.Fatalf("stackless n=4096 cell %+v", c)
	}
	if !slices.Equal(c.Config["gomaxprocs"], []string{"1"}) || !slices.Equal(c.Config["timer-floor"], []string{"epoll_pwait2"}) {
		t.Errorf("per-cell config %v", c.Config)
	}
	if c.Lines[0] != "fixture.txt:7" {
		t.Errorf("sample source %q, want fixture.txt:7", c.Lines[0])
	}
	if g := y.Cell("goroutine-multi", "n=4096", "ns/switch"); g == nil || g.Config["gomaxprocs"][0] != "2" {
		t.Errorf("goroutine-multi cell %+v", g)
	}
	m := set.Scenario("Memory").Cell("stackless", "n=1000", "MB/coroutine")
	if m == nil || m.Values[0] != 1.5 {
		t.Errorf("MB/coroutine not kept as written: %+v", m)
	}
	n := y.Note("stackful-coro", "n=64")
	if n == nil || n.Kind != results.NoteUnsupported || n.Reason != "not supported: testing" || n.Line != 12 {
		t.Errorf("note %+v", n)
	}
	if p := set.Scenario("Priority").Note("stackless", "n=1000"); p == nil || p.Kind != results.NoteFailed {
		t.Errorf("failed note %+v", p)
	}
	if len(set.Notes) != 2 {
		t.Errorf("%d notes, want 2", len(set.Notes))
	}
	meta := set.Files[0].Meta
	if !slices.Contains(meta, KV{"cpu", "Test CPU @ 1.00GHz"}) || slices.ContainsFunc(meta, func(kv KV) bool { return kv.Key == "gomaxprocs" }) {
		t.Errorf("run metadata %v: want cpu, and no per-cell gomaxprocs", meta)
	}
}

func TestHigherIsBetter(t *testing.T) {
	set := load(t, "Unit widgets/op better=higher\nBenchmarkX/impl=a 1 1 widgets/op 2 ns/op 3 req/s\n")
	for unit, want := range map[string]bool{"widgets/op": true, "ns/op": false, "req/s": true, "B/coroutine": false} {
		if got := set.HigherIsBetter(unit); got != want {
			t.Errorf("HigherIsBetter(%q) = %v", unit, got)
		}
	}
}

func TestNameWithoutImpl(t *testing.T) {
	f, err := results.Read(strings.NewReader("BenchmarkPingPong 10 5 ns/switch\n"), "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Group([]*results.File{f}); err == nil || !strings.Contains(err.Error(), "x.txt:1") {
		t.Errorf("err %v, want one naming x.txt:1", err)
	}
}

func TestParam(t *testing.T) {
	if Param("n=64/via=direct", "via") != "direct" || Param("n=64", "via") != "" || Param("", "n") != "" {
		t.Error("Param")
	}
}

func TestPerRowConfigLines(t *testing.T) {
	set := load(t, `gomaxprocs: stackful-asm=1; goroutine-multi=2
timer-floor: stackful-asm=clock=CLOCK_MONOTONIC wait=epoll_pwait2; goroutine-multi=clock=runtime.nanotime wait=netpoller
gc-policy: forced-gc-then-off
BenchmarkTimer/impl=stackful-asm/n=1 1 5 p50-ns/wake
BenchmarkTimer/impl=goroutine-multi/n=1 1 7 p50-ns/wake
BenchmarkTimer/impl=stackless/n=1 1 7 p50-ns/wake
`)
	sc := set.Scenario("Timer")
	for _, c := range []struct{ row, key, want string }{
		{"stackful-asm", "gomaxprocs", "1"},
		{"goroutine-multi", "gomaxprocs", "2"},
		{"stackful-asm", "timer-floor", "clock=CLOCK_MONOTONIC wait=epoll_pwait2"},
		{"goroutine-multi", "timer-floor", "clock=runtime.nanotime wait=netpoller"},
		{"stackful-asm", "gc-policy", "forced-gc-then-off"},
	} {
		got := sc.Cell(c.row, "n=1", "p50-ns/wake").Config[c.key]
		if !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s %s = %q, want %q", c.row, c.key, got, c.want)
		}
	}
	if got := sc.Cell("stackless", "n=1", "p50-ns/wake").Config["gomaxprocs"]; len(got) != 0 {
		t.Errorf("a row missing from the per-row list got %q", got)
	}
}

func TestLoadNotesOnlyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.txt")
	text := "# corobench results\n# benchrun --scenario pingpong\ngoos: linux\ncpu: Test CPU\ngomaxprocs: stackless=1\n" +
		"# corobench:unsupported BenchmarkPingPong/impl=stackless: not supported: testing\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f := set.Files[0]
	if !slices.Equal(f.Meta, []KV{{"goos", "linux"}, {"cpu", "Test CPU"}}) {
		t.Errorf("meta of a notes-only file: %v", f.Meta)
	}
	if !slices.Equal(f.Header, []string{"corobench results", "benchrun --scenario pingpong"}) {
		t.Errorf("header %q", f.Header)
	}
	sc := set.Scenario("PingPong")
	if sc == nil || len(sc.Units) != 0 || sc.Note("stackless", "") == nil {
		t.Errorf("notes-only scenario %+v", sc)
	}
}

// TestAnnotationsPerCell checks steal and reps lines land on their cell
// (row and column), in file order, and never become notes.
func TestAnnotationsPerCell(t *testing.T) {
	set := load(t, fixture+`# corobench:steal BenchmarkYield/impl=stackless/n=4096: rep 1: steal 10ms = 6.0% of 166ms wall on cpu1 (marked above 1%)
# corobench:reps BenchmarkYield/impl=stackless/n=4096: 2 repetitions: cv 141.4% > target 5.0%; cap of 2 repetitions reached
# corobench:reps BenchmarkYield/impl=stackless/n=64: 1 repetitions: fewer than 2 figures
`)
	y := set.Scenario("Yield")
	got := y.Annotations("stackless", "n=4096")
	if len(got) != 2 || got[0].Kind != results.AnnotSteal || got[1].Kind != results.AnnotReps {
		t.Fatalf("stackless n=4096 annotations %+v, want steal then reps", got)
	}
	if got[0].Line != 14 || got[0].File != "fixture.txt" {
		t.Errorf("steal line recorded at %s:%d, want fixture.txt:14", got[0].File, got[0].Line)
	}
	if a := y.Annotations("stackless", "n=64"); len(a) != 1 || !strings.HasPrefix(a[0].Text, "1 repetitions") {
		t.Errorf("stackless n=64 annotations %+v", a)
	}
	if a := y.Annotations("stackful-asm", "n=64"); a != nil {
		t.Errorf("stackful-asm has annotations %+v, want none", a)
	}
	if len(set.Annotations) != 3 || len(set.Notes) != 2 {
		t.Errorf("%d annotations, %d notes; want 3 and 2", len(set.Annotations), len(set.Notes))
	}
}
