package units

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{12.34, "ns/switch", "12.3 ns"},
		{0.7, "ns/switch", "0.7 ns"},
		{24100, "ns/spawn", "24.1 µs"},
		{2.5e6, "p99-ns/wake", "2.50 ms"},
		{3e9, "max-ns/wake", "3.00 s"},
		{4400, "B/coroutine", "4.30 KiB"},
		{512, "B/coroutine", "512 B"},
		{1.5, "MB/coroutine", "1.43 MiB"},
		{41234, "req/s", "41.2k"},
		{0, "allocs/switch", "0"},
		{1, "allocs/spawn", "1"},
		{0.25, "allocs/spawn", "0.25"},
		{2048, "heap-B/coroutine", "2 KiB"},
		{1500, "cpu-ns/wake", "1.50 µs"},
	} {
		if got := Format(c.v, c.unit); got != c.want {
			t.Errorf("Format(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestLabel(t *testing.T) {
	for unit, want := range map[string]string{
		"ns/switch":        "ns per switch",
		"p99-ns/wake":      "p99 ns per wake",
		"B/coroutine":      "B per coroutine",
		"heap-B/coroutine": "heap B per coroutine",
		"req/s":            "req/s",
		"allocs/switch":    "allocs/switch",
	} {
		u := Parse(unit)
		if got := u.Label(u.ScaleFor(1)); got != want {
			t.Errorf("Label(%q) = %q, want %q", unit, got, want)
		}
	}
	u := Parse("ns/spawn")
	if got := u.Label(u.ScaleFor(5e4)); got != "µs per spawn" {
		t.Errorf("got %q", got)
	}
}
