package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/bodies"
)

// The fixture testdata/run.txt holds synthetic figures (see its header):
// five rows, a sweep (Yield n=2,64,4096), latency scenarios (Timer with
// p50/p99/max, FDWake, Echo), failed and unsupported notes, a noisy cell
// (PingPong goroutine-multi) and a cell with 5 samples (Echo
// goroutine-single).
const fixture = "testdata/run.txt"

// buildFixture builds the report once per test binary run.
var built struct {
	dir, index string
	html       string
	err        error
}

func buildFixture(t *testing.T) (dir, index, html string) {
	t.Helper()
	if built.index == "" && built.err == nil {
		built.dir, built.err = os.MkdirTemp("", "corobench-report-test")
		if built.err == nil {
			built.index, built.err = Build([]string{fixture}, built.dir)
		}
		if built.err == nil {
			var b []byte
			b, built.err = os.ReadFile(built.index)
			built.html = string(b)
		}
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir, built.index, built.html
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" && os.Getenv("REPORT_KEEP") == "" {
		os.RemoveAll(built.dir)
	} else if built.dir != "" {
		fmt.Println("report kept in", built.dir)
	}
	os.Exit(code)
}

func TestBuildFixture(t *testing.T) {
	dir, index, html := buildFixture(t)
	if index != filepath.Join(dir, "index.html") {
		t.Errorf("index %s", index)
	}
	for _, want := range []string{
		// Context: machine and run metadata, raw file link, policy.
		"Intel(R) Xeon(R) Processor @ 2.80GHz", "20261122T140000Z", "go1.26.8", "0123abcd",
		"<code>corobench results (test fixture: synthetic figures, not a measurement)</code>",
		`<a href="run.txt">run.txt</a>`,
		"<code>forced-gc-then-off</code>: every cell",
		"goroutine-multi: <code>2</code>", "stackful-asm: <code>1</code>",
		"<div>stackful-asm: <code>clock_gettime(MONOTONIC)&#43;epoll_pwait2(1us)</code></div>",
		"<div>goroutine-multi: <code>go-runtime-timers(netpoll)</code></div>",
		// Every note, with its reason and where it was recorded.
		"timed out after 1m0s", "<code>testdata/run.txt:197</code>",
		"not supported: reactor pipes not wired to the state machine yet", "<code>testdata/run.txt:415</code>",
		// Figures with CI, ratios and flags.
		"vs goroutine-single", "vs stackful-asm", "CV 12.4% &gt; 5%", "n=5 &lt; 6: no 95% CI",
		"<span class=\"med\">24.6 µs</span>",
		// Claims and quoted anchors.
		"Claims of the reference design", "Published anchors (quotations, not measured by this run)",
		"hnes/libaco README", "one-way; the pair is a round trip",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if n := strings.Count(html, "<td><code>testdata/run.txt:"); n != 9 {
		t.Errorf("%d notes listed, want the fixture's 9", n)
	}
	// Verdicts, in claim order: 12 ns switch (holds); stackful 12 ns is
	// below 15 and stackless 3 ns below 10 (cheaper than claimed); memory, direct
	// switch and pool hold.
	verdicts := regexp.MustCompile(`<td class="v-[a-z-]+">([a-z ]+)</td>`).FindAllStringSubmatch(html, -1)
	var got []string
	for _, v := range verdicts {
		got = append(got, v[1])
	}
	if want := "holds,cheaper than claimed,holds,holds,holds"; strings.Join(got, ",") != want {
		t.Errorf("verdicts %v, want %s", got, want)
	}
	// The raw results file is beside the page.
	if raw, err := os.ReadFile(filepath.Join(dir, "run.txt")); err != nil {
		t.Error(err)
	} else if orig, _ := os.ReadFile(fixture); !bytes.Equal(raw, orig) {
		t.Error("the copied results file differs from the input")
	}
	// Charts: bars for every unit, sweeps for Yield, percentile plots for
	// latency scenarios; no chart for an all-zero unit.
	for _, name := range []string{"pingpong-ns-switch-bars", "yield-ns-switch-bars", "yield-ns-switch-sweep",
		"timer-n-1000-wake-percentiles", "fdwake-roundtrip-percentiles", "echo-c-1-req-percentiles", "echo-req-s-bars"} {
		for _, ext := range []string{".png", ".svg"} {
			if !strings.Contains(html, `"`+name+ext+`"`) {
				t.Errorf("page does not reference %s%s", name, ext)
			}
		}
	}
	if strings.Contains(html, "pingpong-allocs-switch-bars") {
		t.Error("a chart of all-zero allocs/switch was drawn")
	}
}

// TestSelfContained checks every link and image resolves inside the report
// directory and nothing is fetched from elsewhere.
func TestSelfContained(t *testing.T) {
	dir, _, html := buildFixture(t)
	for _, bad := range []string{"<script", "<link", "@import", "url(", "http://", "https://"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html contains %q: the report must work offline", bad)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 20 {
		t.Fatalf("only %d references", len(refs))
	}
	for _, r := range refs {
		ref := r[1]
		if strings.HasPrefix(ref, "#") {
			id := ref[1:]
			if !strings.Contains(html, `id="`+id+`"`) {
				t.Errorf("anchor %s has no target", ref)
			}
			continue
		}
		if strings.Contains(ref, "/") || strings.Contains(ref, ":") {
			t.Errorf("reference %q leaves the report directory", ref)
			continue
		}
		path := filepath.Join(dir, ref)
		switch filepath.Ext(ref) {
		case ".png":
			f, err := os.Open(path)
			if err != nil {
				t.Error(err)
				continue
			}
			if _, err := png.Decode(f); err != nil {
				t.Errorf("%s: %v", ref, err)
			}
			f.Close()
		case ".svg":
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				continue
			}
			if err := wellFormed(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", ref, err)
			}
		default:
			if _, err := os.Stat(path); err != nil {
				t.Error(err)
			}
		}
	}
}

// wellFormed checks r is well-formed XML with the strict encoding/xml
// decoder. golang.org/x/net/html is not in the module's dependencies, and
// an HTML5 parser accepts almost anything anyway; the report is written
// XHTML-style (every element closed, only XML's entities) precisely so
// this strict check applies.
func wellFormed(r io.Reader) error {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if depth != 0 {
				return fmt.Errorf("%d elements left open", depth)
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
}

func TestHTMLWellFormed(t *testing.T) {
	_, _, html := buildFixture(t)
	if err := wellFormed(strings.NewReader(html)); err != nil {
		t.Fatalf("index.html is not well-formed: %v", err)
	}
	if !strings.HasPrefix(html, "<!DOCTYPE html>\n<html lang=\"en\">") || !strings.Contains(html, `<meta charset="utf-8"/>`) {
		t.Error("missing doctype, language or charset")
	}
	// The check itself must reject what a browser would silently repair.
	for _, bad := range []string{"<p>unclosed<p>x</p>", "<td>a</tr>", "<p>a &nbsp; b</p>"} {
		if wellFormed(strings.NewReader("<div>"+bad+"</div>")) == nil {
			t.Errorf("wellFormed accepted %q", bad)
		}
	}
}

// TestBrowserRender renders the report in headless Chromium and checks the
// screenshot is a real page. Without chromium it skips, except under CI
// (CI=true), where .ci/run installs it and a skip would hide a regression.
func TestBrowserRender(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not on PATH under CI=true; .ci/run must install Debian's chromium")
		}
		t.Skip("chromium not on PATH; install Debian's chromium to run this test")
	}
	_, index, _ := buildFixture(t)
	abs, err := filepath.Abs(index)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "out.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1280,2000", "file://"+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot does not decode: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %v, want 1280×2000", b)
	}
	// A rendered page has text (dark pixels) and table shading; a blank or
	// error page is nearly uniform.
	dark, colors := 0, map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl < 3*0x4000 {
				dark++
			}
			colors[(r>>12)<<8|(g>>12)<<4|bl>>12] = true
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if dark < total/200 || len(colors) < 8 {
		t.Errorf("screenshot looks blank: %d of %d sampled pixels dark, %d colors", dark, total, len(colors))
	}
}

func TestBuildCorruptInput(t *testing.T) {
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.txt")
	cut := bytes.Index(good, []byte("BenchmarkYield/impl=stackless/n=64")) + 40 // mid-line
	if err := os.WriteFile(truncated, good[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	truncLine := bytes.Count(good[:cut], []byte("\n")) + 1
	corrupt := filepath.Join(dir, "corrupt.txt")
	bad := bytes.Replace(good, []byte("# corobench:failed BenchmarkYield"), []byte("# corobench:broken BenchmarkYield"), 1)
	if err := os.WriteFile(corrupt, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	// A torn last line: the page is written from the cells before it, and
	// says so at its top, as check and compare warn (one verdict).
	index, warnings, err := BuildWarn([]string{fixture, truncated}, filepath.Join(dir, "out-torn"))
	want := fmt.Sprintf("%s:%d", truncated, truncLine)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], want) {
		t.Errorf("Build with a torn file: %v, warnings %q; want a page and a warning naming %s", err, warnings, want)
	} else if html, _ := os.ReadFile(index); !strings.Contains(string(html), want) || !strings.Contains(string(html), `class="alert"`) {
		t.Errorf("the page does not warn of %s at its top", want)
	}
	for _, c := range []struct{ file, want string }{
		{corrupt, corrupt + ":197"},
	} {
		out := filepath.Join(dir, "out-"+filepath.Base(c.file))
		_, err := Build([]string{fixture, c.file}, out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build with %s: error %v, want one naming %s", filepath.Base(c.file), err, c.want)
		}
		if _, err := os.Stat(filepath.Join(out, "index.html")); err == nil {
			t.Errorf("a page was written from a corrupt input")
		}
	}
	if _, err := Build(nil, dir); err == nil {
		t.Error("Build with no files gave no error")
	}
}

func TestBuildResultsInOutDir(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../compare/testdata/old.txt")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "20261101T000000Z.txt")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := Build([]string{in}, dir)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(index)
	if !strings.Contains(string(html), `<a href="20261101T000000Z.txt">`) {
		t.Error("a results file already in the report directory is not linked in place")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".txt") && e.Name() != "20261101T000000Z.txt" {
			t.Errorf("unexpected copy %s", e.Name())
		}
	}
	// A claim whose cells are failed shows as not measured with the reason.
	if !strings.Contains(string(html), `<td class="v-not-measured">not measured</td>`) {
		t.Error("no claim is reported as not measured")
	}
}

func TestBuildNotesOnlyScenario(t *testing.T) {
	text := "goos: linux\n" +
		"# corobench:unsupported BenchmarkFDWake/impl=stackless: not supported: no reactor\n" +
		"# corobench:failed BenchmarkFDWake/impl=stackful-asm: checksum mismatch\n"
	html := buildTestPage(t, text)
	for _, want := range []string{"No figures: every cell failed or is not supported",
		`<td class="c-unsupported"><span class="status">unsupported</span><div class="reason">not supported: no reactor</div></td>`,
		`<td class="c-failed"><span class="status">failed</span><div class="reason">checksum mismatch</div></td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if err := wellFormed(strings.NewReader(html)); err != nil {
		t.Error(err)
	}
}

func TestBuildSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	var inputs []string
	for _, c := range []struct{ from, to string }{{"../compare/testdata/old.txt", "a/run.txt"}, {"../compare/testdata/new.txt", "b/run.txt"}} {
		data, err := os.ReadFile(c.from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, c.to)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, to)
	}
	out := filepath.Join(dir, "out")
	index, err := Build(inputs, out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(index)
	html := string(b)
	// Same base name twice: the second copy is renamed, both are linked,
	// each with its own metadata.
	for _, want := range []string{`<a href="run.txt">run.txt</a>`, `<a href="2-run.txt">2-run.txt</a>`,
		"runstamp</th><td>20261101T000000Z", "runstamp</th><td>20261102T000000Z"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(out, "2-run.txt")); !bytes.Contains(got, []byte("20261102T000000Z")) {
		t.Error("second results file not copied")
	}
	// Samples of a cell in both files are pooled: PingPong stackful-asm has
	// 6 in each.
	if !strings.Contains(html, "n=12 · CV") {
		t.Error("samples of the same cell in two files were not pooled")
	}
}

// TestColouringSection checks the function-colouring table: every
// scenario has a row, and pingpong's row carries its two counts from
// bodies.BodyLines (which scenarios' tests check against the source) in
// the right columns, with their ratio and the declarations counted.
func TestColouringSection(t *testing.T) {
	_, _, html := buildFixture(t)
	start := strings.Index(html, `<section id="colouring">`)
	if start < 0 {
		t.Fatal("no colouring section")
	}
	section := html[start:]
	section = section[:strings.Index(section, "</section>")]
	if !strings.Contains(section, "<h2>Function colouring: lines per body</h2>") ||
		!strings.Contains(section, "<code>scenarios/bodylines</code>") {
		t.Error("the section lacks its heading or the name of the counting rule's package")
	}
	if !strings.Contains(html, `<a href="#colouring">Function colouring</a>`) {
		t.Error("the navigation does not link the section")
	}
	pp := bodies.BodyLines["pingpong"]
	if pp.Blocking.Lines == 0 || pp.StateMachine.Lines == 0 {
		t.Fatalf("pingpong has no line counts: %+v", pp)
	}
	ratio := float64(pp.StateMachine.Lines) / float64(pp.Blocking.Lines)
	row := fmt.Sprintf(`<tr><th class="row"><a href="#s-pingpong">PingPong</a></th>`+
		`<td><span class="med">%d</span><div class="detail">pingPongBlocking (%d)</div></td>`+
		`<td><span class="med">%d</span><div class="detail">pingPongStateMachine `,
		pp.Blocking.Lines, pp.Blocking.Decls[0].Lines, pp.StateMachine.Lines)
	if !strings.Contains(section, row) {
		t.Errorf("the section lacks pingpong's row starting\n%s\nsection:\n%s", row, section)
	}
	if want := fmt.Sprintf(`(*pingPongSide).Resume (%d)`, resumeLines(t, pp)); !strings.Contains(section, want) {
		t.Errorf("pingpong's state-machine declarations do not list %q", want)
	}
	if want := fmt.Sprintf(`<td><span class="med">×%.2f</span></td></tr>`, ratio); !strings.Contains(section[strings.Index(section, "#s-pingpong"):], want) {
		t.Errorf("pingpong's ratio is not %q", want)
	}
	if n := strings.Count(section, `<th class="row">`); n != len(scenarios.All) {
		t.Errorf("%d rows, want one per scenario (%d)", n, len(scenarios.All))
	}
	if !strings.Contains(section, "the state machine takes ×") {
		t.Error("the section lacks its summary of the ratios")
	}
}

func resumeLines(t *testing.T, c bodies.LineCount) int {
	t.Helper()
	for _, d := range c.StateMachine.Decls {
		if d.Name == "(*pingPongSide).Resume" {
			return d.Lines
		}
	}
	t.Fatal("pingpong's state machine does not count (*pingPongSide).Resume")
	return 0
}

// TestIncompleteRunSaysSo: the report of an interrupted run says so at its
// top, before any table.
func TestIncompleteRunSaysSo(t *testing.T) {
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "cut.txt")
	if err := os.WriteFile(in, append(good, "# corobench:incomplete interrupted by SIGINT after 3 of 10 cells\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := Build([]string{in}, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(index)
	i := strings.Index(string(html), "Incomplete run: interrupted by SIGINT after 3 of 10 cells")
	if i < 0 || i > strings.Index(string(html), "<table") {
		t.Errorf("the report does not say the run is incomplete before its first table (at %d)", i)
	}
}

// TestHeadlineFirst: the page opens with the headline table (before the
// claims, and both before the run's metadata); its lines are the registry's
// headline metrics in registry order; the best figure of a line is marked
// and links to its section.
func TestHeadlineFirst(t *testing.T) {
	_, _, html := buildFixture(t)
	glance, claimsAt, run := strings.Index(html, `<section id="glance">`), strings.Index(html, `<section id="claims">`), strings.Index(html, `<section id="run">`)
	if glance < 0 || !(glance < claimsAt && claimsAt < run) {
		t.Fatalf("sections at glance %d, claims %d, run %d: want glance, claims, run", glance, claimsAt, run)
	}
	head := html[glance:claimsAt]
	var labels []string
	for _, s := range scenarios.All {
		for _, m := range s.Metrics {
			if m.Headline != "" {
				labels = append(labels, m.Headline)
			}
		}
	}
	last := -1
	for _, l := range labels[:2] { // Switch and PingPong are in the fixture
		i := strings.Index(head, ">"+l+"</a>")
		if i < last {
			t.Errorf("headline %q missing or out of registry order", l)
		}
		last = i
	}
	// Switch: stackless (~1 ns) is far below stackful-asm (~12 ns).
	line := head[strings.Index(head, `href="#s-switch"`):]
	line = line[:strings.Index(line, "</tr>")]
	cellsOf := strings.Split(line, "<td")
	if len(cellsOf) < 4 || !strings.Contains(cellsOf[3], "best") || strings.Contains(cellsOf[1], "best") {
		t.Errorf("switch line: want stackless (third row) marked best, stackful-asm not:\n%s", line)
	}
}

// TestNotesTableWrapsForPrint: the cells-without-a-figure table has fixed
// column widths and wraps long reasons and paths, and the page has print
// rules, so the table stays within a printed page (checked by eye in a
// Chromium PDF; this keeps the rules from being dropped).
func TestNotesTableWrapsForPrint(t *testing.T) {
	_, _, html := buildFixture(t)
	for _, want := range []string{`<table class="notes">`, "table.notes { table-layout: fixed; width: 100%; }", "overflow-wrap: anywhere", "@media print"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"DESIGN", "ANCHORS.md", "seed", "issue 6"} {
		if strings.Contains(html, bad) {
			t.Errorf("page speaks of %q, which a reader of the repository does not have", bad)
		}
	}
}

// buildTestPage builds the report of a results file holding text and returns
// its page.
func buildTestPage(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "results.txt")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := Build([]string{in}, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
