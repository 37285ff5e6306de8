package bodies

import (
	"syscall"
	"testing"
)

func TestParseStatmResident(t *testing.T) {
	for _, c := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"1166 322 270 1 0 138 0\n", 322, true},
		{"5 7", 7, true},
		{"", 0, false},
		{"1166", 0, false},
		{"1166 x 270", 0, false},
		{"1166 -3 270", 0, false},
	} {
		got, err := parseStatmResident(c.line)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStatmResident(%q) = %d, %v; want %d, ok=%v", c.line, got, err, c.want, c.ok)
		}
	}
}

// TestResidentBytesSeesTouchedMemory: touching 64 MiB of fresh anonymous
// memory raises the reading by about that much, and unmapping it lowers it.
func TestResidentBytesSeesTouchedMemory(t *testing.T) {
	const size = 64 << 20
	before := residentBytes()
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size; i += 4096 {
		mem[i] = 1
	}
	touched := residentBytes()
	if err := syscall.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	after := residentBytes()
	if grew := touched - before; grew < size*9/10 {
		t.Errorf("RSS grew by %d bytes after touching %d", grew, size)
	}
	if shrank := touched - after; shrank < size*9/10 {
		t.Errorf("RSS shrank by %d bytes after unmapping %d", shrank, size)
	}
}

func TestTouchedWantMatchesTheArray(t *testing.T) {
	for _, id := range []uint64{0, 1, 255, 1023, 1024, 70000, 1<<40 + 5} {
		var buf [touchedBytes]byte
		fillTouched(&buf, id)
		if got, want := readTouched(&buf, id), touchedWant(id); got != want {
			t.Errorf("id %d: readTouched %#x, touchedWant %#x", id, got, want)
		}
		buf[id%touchedBytes]++
		if readTouched(&buf, id) == touchedWant(id) {
			t.Errorf("id %d: a changed byte went unnoticed", id)
		}
	}
}
