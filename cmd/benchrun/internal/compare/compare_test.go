package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "testdata/old.txt", "testdata/new.txt", Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	lineOf := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + re + `.*$`).FindString(out)
		if m == "" {
			t.Fatalf("no line matching %q", re)
		}
		return m
	}
	for _, want := range []string{"old: testdata/old.txt", "runstamp=20261101T000000Z", "new: testdata/new.txt", "commit=2222222"} {
		if !strings.Contains(out, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	// Separated samples of 6: p = 2/C(12,6) = 0.00216; median 12.25 -> 9.25.
	asm := lineOf(`  stackful-asm\s`)
	for _, want := range []string{"12.2 ns ±", "9.25 ns ±", "-24.49%", "p=0.002", " 6 "} {
		if !strings.Contains(asm, want) {
			t.Errorf("stackful-asm line %q lacks %q", asm, want)
		}
	}
	// Interleaved samples: not significant.
	if g := lineOf(`  goroutine-single\s`); !regexp.MustCompile(`\s~\s`).MatchString(g) {
		t.Errorf("goroutine-single line %q: want ~", g)
	}
	sl := lineOf(`  stackless\s`)
	for _, want := range []string{"failed", "3.10 ns ±∞", "old: failed: checksum mismatch: got 3, want 4", "new: n=5 < 6"} {
		if !strings.Contains(sl, want) {
			t.Errorf("stackless line %q lacks %q", sl, want)
		}
	}
	if c := lineOf(`  stackful-asm/pool=cold`); !strings.Contains(c, "only in the old run") {
		t.Errorf("pool=cold line %q", c)
	}
	if c := lineOf(`  stackful-asm/pool=warm`); !strings.Contains(c, "only in the new run") || !strings.Contains(c, "35.5 ns") {
		t.Errorf("pool=warm line %q", c)
	}
}

func TestWriteCorruptInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/old.txt")
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.txt")
	// Cut in the middle of a result line: no unit, no newline.
	cut := bytes.Index(good, []byte("12.2 ns/switch")) + 4
	if err := os.WriteFile(truncated, good[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.txt")
	if err := os.WriteFile(corrupt, append(good, "BenchmarkPingPong/impl=stackless 10 fast ns/switch\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, want string }{
		{"testdata/old.txt", corrupt, fmt.Sprintf("%s:%d", corrupt, bytes.Count(good, []byte("\n"))+1)},
	} {
		err := Write(&bytes.Buffer{}, c.old, c.new, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%s, %s) error %v, want one naming %s", c.old, c.new, err, c.want)
		}
	}
	// A torn last line is a warning naming file:line, and the whole lines
	// before it are compared (the one verdict of check, report, compare).
	var out, warn bytes.Buffer
	if err := Write(&out, truncated, "testdata/new.txt", Options{Warn: &warn}); err != nil {
		t.Fatalf("torn old file refused: %v", err)
	}
	if !strings.Contains(warn.String(), truncated+":8") || !strings.Contains(warn.String(), "truncated") {
		t.Errorf("warning %q does not name %s:8", warn.String(), truncated)
	}
	if !regexp.MustCompile(`(?m)^  stackful-asm\s+12 ns ±∞`).MatchString(out.String()) {
		t.Errorf("the intact line before the torn one was not compared:\n%s", out.String())
	}
}

// TestConfigMismatch: runs from different CPUs, bench times, GC policies or
// runtime environments are refused naming each key with both values, and
// compared with Force with the differences above the tables; a different
// commit alone is no refusal.
func TestConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/new.txt")
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(good), "cpu: Test CPU @ 1.00GHz\n", "cpu: Other CPU @ 3.00GHz\nbenchtime: 1s\nruntime-env: GOGC=100 GOMEMLIMIT=off\n", 1)
	path := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Write(&bytes.Buffer{}, "testdata/old.txt", path, Options{})
	if err == nil {
		t.Fatal("runs from different CPUs compared without --force")
	}
	for _, want := range []string{"cpu: old=Test CPU @ 1.00GHz new=Other CPU @ 3.00GHz", "benchtime: old=(absent) new=1s", "runtime-env: old=(absent) new=GOGC=100", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "commit") {
		t.Errorf("refusal names the commit, which only informs: %v", err)
	}
	var out, warn bytes.Buffer
	if err := Write(&out, "testdata/old.txt", path, Options{Force: true, Warn: &warn}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "config differs (compared with --force): cpu: old=Test CPU") || !strings.Contains(warn.String(), "cpu: old=") {
		t.Errorf("--force output lacks the difference:\n%s\nwarnings: %s", out.String(), warn.String())
	}
}
