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
	if err := Write(&buf, "testdata/old.txt", "testdata/new.txt"); err != nil {
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
		{truncated, "testdata/new.txt", truncated + ":8"},
		{"testdata/old.txt", corrupt, fmt.Sprintf("%s:%d", corrupt, bytes.Count(good, []byte("\n"))+1)},
	} {
		err := Write(&bytes.Buffer{}, c.old, c.new)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%s, %s) error %v, want one naming %s", c.old, c.new, err, c.want)
		}
	}
}
