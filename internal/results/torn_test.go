package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/selfexec"
)

// fullDisk is a file on a disk with room for only budget more bytes: a
// write past it writes what fits and fails with ENOSPC, as write(2) does.
type fullDisk struct {
	*os.File
	budget int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if len(b) <= d.budget {
		d.budget -= len(b)
		return d.File.Write(b)
	}
	n, err := d.File.Write(b[:d.budget])
	d.budget -= n
	if err == nil {
		err = &os.PathError{Op: "write", Path: d.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

var testConfig = []benchfmt.Config{
	{Key: KeyGOOS, Value: []byte("linux"), File: true},
	{Key: KeyCPU, Value: []byte("Test CPU @ 1.00GHz"), File: true},
}

// writeCells writes a config block, then result i and a note for each i
// until the writer fails; it returns how many records got through.
func writeCells(w *Writer, n int) (int, error) {
	if err := w.Config(testConfig); err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		r := &benchfmt.Result{Config: testConfig, Name: benchfmt.Name("PingPong/impl=goroutine-single/n=" + strconv.Itoa(i) + "x"), Iters: 1000,
			Values: []benchfmt.Value{{Value: 152.5, Unit: "ns/switch"}}}
		if err := w.Result(r); err != nil {
			return 2 * i, err
		}
		if err := w.Note(Note{Kind: NoteFailed, Name: "PingPong/impl=stackless/n=" + strconv.Itoa(i) + "x", Reason: "deadlock"}); err != nil {
			return 2*i + 1, err
		}
	}
	return 2 * n, nil
}

// TestFullDiskKeepsWholeRecords fills the disk at every byte offset of a
// small run: the write that fails is cut off, every record before it reads
// back, and the writer refuses the records after it.
func TestFullDiskKeepsWholeRecords(t *testing.T) {
	dir := t.TempDir()
	// The size of the whole run, to try every cut point within it.
	var whole strings.Builder
	wAll, _ := NewWriter(&whole, "corobench results")
	if _, err := writeCells(wAll, 4); err != nil {
		t.Fatal(err)
	}
	for budget := 0; budget < whole.Len(); budget += 7 {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.txt", budget))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		disk := &fullDisk{File: f, budget: budget}
		w, err := NewWriter(disk, "corobench results")
		kept := 0
		if err == nil {
			kept, err = writeCells(w, 4)
			// Sticky: nothing more gets in after the failure.
			if nerr := w.Note(Note{Kind: NoteFailed, Name: "X", Reason: "after"}); nerr == nil {
				t.Fatalf("budget %d: a record was accepted after a failed write", budget)
			}
		}
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("budget %d of %d: error %v, want ENOSPC", budget, whole.Len(), err)
		}
		data, _ := os.ReadFile(path)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("budget %d: the file ends in a torn line:\n%s", budget, data)
		}
		if !strings.HasPrefix(whole.String(), string(data)) {
			t.Fatalf("budget %d: the file is not a prefix of the whole run:\n%s", budget, data)
		}
		file, rerr := Read(strings.NewReader(string(data)), path)
		if kept == 0 {
			if rerr == nil {
				t.Fatalf("budget %d: a file with no cell read as a run", budget)
			}
			continue
		}
		if rerr != nil {
			t.Fatalf("budget %d: %d records were written but the file does not read back: %v", budget, kept, rerr)
		}
		if got := len(file.Results) + len(file.Notes); got != kept {
			t.Fatalf("budget %d: read back %d records, want the %d written before the failure", budget, got, kept)
		}
		if len(file.Results) > 0 && file.Results[0].GetConfig(KeyCPU) == "" {
			t.Fatalf("budget %d: the config block was lost", budget)
		}
	}
}

// TestMain runs the child of TestFileSizeLimit when asked.
func TestMain(m *testing.M) {
	if path := os.Getenv(fsizeChildEnv); path != "" {
		os.Exit(fsizeChild(path))
	}
	os.Exit(m.Run())
}

const fsizeChildEnv = "COROBENCH_RESULTS_FSIZE_CHILD"

// fsizeLimit is the file size limit in the child: inside the second
// result's record.
const fsizeLimit = 700

// fsizeChild writes records to path under RLIMIT_FSIZE until the kernel
// refuses one, and prints how many got through.
func fsizeChild(path string) int {
	// Go ignores SIGXFSZ, so a write past the limit fails with EFBIG (after
	// writing what fits) instead of killing the process.
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: fsizeLimit, Max: fsizeLimit}); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer f.Close()
	w, err := NewWriter(f, "corobench results\n"+strings.Repeat("padding ", 40))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	kept, err := writeCells(w, 100)
	fmt.Printf("kept %d: %v\n", kept, err)
	if !errors.Is(err, syscall.EFBIG) {
		return 1
	}
	return 0
}

// TestFileSizeLimit has the kernel cut a write short (RLIMIT_FSIZE, in a
// child process): the file keeps whole records only, and they read back.
func TestFileSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limited.txt")
	out, err := selfexec.CombinedOutput([]string{"-test.run=^$"}, fsizeChildEnv+"="+path)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var kept int
	if _, err := fmt.Sscanf(out, "kept %d:", &kept); err != nil || kept < 1 {
		t.Fatalf("child output %q: want some records kept", out)
	}
	t.Logf("child: %s", strings.TrimSpace(out))
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= fsizeLimit {
		t.Fatalf("file is %d bytes, at the limit %d: the torn record was not cut off", st.Size(), fsizeLimit)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("the records written before the limit do not read back: %v", err)
	}
	if got := len(f.Results) + len(f.Notes); got != kept {
		t.Fatalf("read back %d records, the writer kept %d", got, kept)
	}
}

// TestTornTailKeepsCellsBefore reads a file whose last line was cut (by a
// writer without the truncation above, or a copy cut short): the reader
// says so, naming the line, and hands back every cell before it.
func TestTornTailKeepsCellsBefore(t *testing.T) {
	text := "goos: linux\n\nBenchmarkX/impl=a 10 5 ns/op\n# corobench:failed BenchmarkX/impl=c: deadlock\nBenchmarkX/impl=b 10 5 ns/op\nBenchmarkX/impl=b 1"
	f, err := Read(strings.NewReader(text), "torn.txt")
	var torn *TornError
	if !errors.As(err, &torn) {
		t.Fatalf("error %v, want a *TornError", err)
	}
	if torn.Line != 6 || torn.Kept != 3 || !strings.HasPrefix(err.Error(), "torn.txt:6:") {
		t.Errorf("torn error %+v: %v", torn, err)
	}
	if f == nil || len(f.Results) != 2 || len(f.Notes) != 1 || f.Results[0].GetConfig("goos") != "linux" {
		t.Fatalf("cells before the torn line: %+v", f)
	}
	// Torn before any whole cell: nothing to keep, an error all the same.
	f, err = Read(strings.NewReader("goos: linux\nBenchm"), "t.txt")
	if f != nil || !errors.As(err, &torn) {
		t.Fatalf("Read = %v, %v; want nil and a *TornError", f, err)
	}
}

// TestConfigBeforeAnyCell: the machine's config is in the file even when
// no cell gives a figure (an all-failed run), and a result with the same
// config does not repeat it.
func TestConfigBeforeAnyCell(t *testing.T) {
	var buf strings.Builder
	w, _ := NewWriter(&buf, "h")
	if err := w.Config(testConfig); err != nil {
		t.Fatal(err)
	}
	if err := w.Note(Note{Kind: NoteFailed, Name: "X/impl=a", Reason: "crash"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Result(&benchfmt.Result{Config: testConfig, Name: benchfmt.Name("X/impl=b"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "ns/op"}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Incomplete("interrupted by SIGTERM after 2 of 9 cells"); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if strings.Count(text, "cpu: Test CPU") != 1 || strings.Index(text, "cpu:") > strings.Index(text, "corobench:failed") {
		t.Fatalf("config not written once before the first cell:\n%s", text)
	}
	f, err := Read(strings.NewReader(text), "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Config) != len(testConfig) || string(f.Config[1].Value) != "Test CPU @ 1.00GHz" {
		t.Errorf("file config %v", f.Config)
	}
	// Notes only (every cell failed): the config is still read back.
	onlyNote := text[:strings.Index(text, "\nBenchmarkX/impl=b")+1]
	g, err := Read(strings.NewReader(onlyNote), "failed.txt")
	if err != nil || len(g.Results) != 0 || len(g.Config) != len(testConfig) {
		t.Errorf("all-failed file: %v, %+v", err, g)
	}
	if f.Incomplete != "interrupted by SIGTERM after 2 of 9 cells" {
		t.Errorf("Incomplete = %q", f.Incomplete)
	}
	if f.Results[0].GetConfig(KeyCPU) != "Test CPU @ 1.00GHz" {
		t.Errorf("result config %v", f.Results[0].Config)
	}
}

var _ io.Writer = (*fullDisk)(nil)

// TestNotAResultsFile: a binary, non-UTF-8 text or a line no reader takes
// is named for what it is, not a scanner's "token too long".
func TestNotAResultsFile(t *testing.T) {
	cases := map[string]string{
		"binary":    "\x7fELF\x02\x01\x01\x00\x00\x00",
		"latin1":    "goos: linux\nBenchmarkX/impl=a 1 2 ns/op caf\xe9\n",
		"long line": "goos: linux\n" + strings.Repeat("x", 70000) + "\n",
	}
	for name, text := range cases {
		_, err := Read(strings.NewReader(text), "bin")
		if err == nil || !strings.Contains(err.Error(), "not a results file") || !strings.HasPrefix(err.Error(), "bin") {
			t.Errorf("%s: error %v, want one saying it is not a results file", name, err)
		}
	}
}

// TestCheckNeedsRows: plain go test -bench output reads as benchfmt, but
// Check says it is not a corobench results file, naming the line.
func TestCheckNeedsRows(t *testing.T) {
	f, err := Read(strings.NewReader("goos: linux\nBenchmarkFoo-2 100 5 ns/op\n"), "plain.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err == nil || !strings.HasPrefix(err.Error(), "plain.txt:2:") || !strings.Contains(err.Error(), "not a corobench results file") {
		t.Errorf("Check = %v", err)
	}
	f, err = Read(strings.NewReader("BenchmarkPingPong/impl=stackless 100 5 ns/op\n# corobench:failed BenchmarkPingPong/impl=goroutine-single: x\n"), "ok.txt")
	if err != nil || f.Check() != nil {
		t.Errorf("a corobench file: %v, %v", err, f.Check())
	}
	f, _ = Read(strings.NewReader("BenchmarkPingPong/impl=stackless 100 5 ns/op\n# corobench:failed BenchmarkPingPong: x\n"), "note.txt")
	if err := f.Check(); err == nil || !strings.HasPrefix(err.Error(), "note.txt:2:") {
		t.Errorf("a note without a row: %v", err)
	}
}
