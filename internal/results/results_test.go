package results

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func TestWriteReadRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, "corobench results\nbenchrun --scenario pingpong")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.UnitBetter("req/s", true); err != nil {
		t.Fatal(err)
	}
	cfg := []benchfmt.Config{{Key: KeyGOOS, Value: []byte("linux"), File: true}, {Key: KeyGOMAXPROCS, Value: []byte("1"), File: true}}
	r := &benchfmt.Result{Config: cfg, Name: benchfmt.Name("PingPong/impl=goroutine-single"), Iters: 1000,
		Values: []benchfmt.Value{{Value: 152.5, Unit: "ns/switch"}, {Value: 0, Unit: "allocs/switch"}}}
	if err := w.Result(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Note(Note{Kind: NoteFailed, Name: "PingPong/impl=stackless", Reason: "exit status 2:\nfatal error"}); err != nil {
		t.Fatal(err)
	}
	cfg2 := []benchfmt.Config{{Key: KeyGOOS, Value: []byte("linux"), File: true}, {Key: KeyGOMAXPROCS, Value: []byte("2"), File: true}}
	r2 := &benchfmt.Result{Config: cfg2, Name: benchfmt.Name("PingPong/impl=goroutine-multi"), Iters: 10,
		Values: []benchfmt.Value{{Value: 300, Unit: "ns/switch"}}}
	if err := w.Result(r2); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !strings.Contains(text, "gomaxprocs: 2\n") {
		t.Fatalf("config change not written:\n%s", text)
	}
	f, err := Read(strings.NewReader(text), "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Results) != 2 || len(f.Notes) != 1 {
		t.Fatalf("got %d results, %d notes, want 2, 1:\n%s", len(f.Results), len(f.Notes), text)
	}
	if got := f.Results[0].GetConfig(KeyGOMAXPROCS); got != "1" {
		t.Errorf("first result gomaxprocs = %q, want 1", got)
	}
	if got := f.Results[1].GetConfig(KeyGOMAXPROCS); got != "2" {
		t.Errorf("second result gomaxprocs = %q, want 2", got)
	}
	if v, _ := f.Results[0].Value("sec/switch"); math.Abs(v-152.5e-9) > 1e-18 {
		t.Errorf("value = %v sec/switch, want 152.5e-9", v)
	}
	n := f.Notes[0]
	if n.Kind != NoteFailed || n.Name != "PingPong/impl=stackless" || n.Reason != "exit status 2: fatal error" || n.Line != strings.Count(text[:strings.Index(text, "# corobench:")], "\n")+1 {
		t.Errorf("note = %+v", n)
	}
	if md := f.Units.Get("req/s", "better"); md == nil || md.Value != "higher" {
		t.Errorf("unit metadata lost: %+v", md)
	}
}

func TestReadErrorsNameFileAndLine(t *testing.T) {
	cases := map[string]string{
		"corrupt benchmark line": "goos: linux\nBenchmarkX/impl=a 10 notanumber ns/op\n",
		"malformed note":         "BenchmarkX/impl=a 10 5 ns/op\n# corobench:failed nonsense\n",
		"empty":                  "",
		"no results":             "goos: linux\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(text), "bad.txt")
			if err == nil {
				t.Fatalf("no error for %q", text)
			}
			if !strings.HasPrefix(err.Error(), "bad.txt") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"PingPong/impl=goroutine-single", "Yield/impl=stackless/n=4096"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"PingPong/impl=row-2", "X y", ""} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want error", bad)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add("goos: linux\nBenchmarkX/impl=a 10 5 ns/op\n# corobench:unsupported BenchmarkX/impl=b: why\n")
	f.Add("BenchmarkX 1 2")
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Read(strings.NewReader(text), "fuzz.txt")
		if err != nil {
			return
		}
		if len(file.Results) == 0 && len(file.Notes) == 0 {
			t.Fatal("Read accepted a file with no results and no notes")
		}
	})
}

func TestPerRowRoundTrip(t *testing.T) {
	rows := []string{"stackful-asm", "goroutine-multi", "absent"}
	v := FormatPerRow(rows, map[string]string{"goroutine-multi": "2", "stackful-asm": "clock=x wait=y"})
	if v != "stackful-asm=clock=x wait=y; goroutine-multi=2" {
		t.Fatalf("FormatPerRow = %q", v)
	}
	got := ParsePerRow(v)
	if len(got) != 2 || got["stackful-asm"] != "clock=x wait=y" || got["goroutine-multi"] != "2" {
		t.Fatalf("ParsePerRow = %v", got)
	}
}
