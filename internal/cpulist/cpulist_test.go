package cpulist

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-2,5,7-8", []int{0, 1, 2, 5, 7, 8}},
		{"3,1", []int{3, 1}},
	} {
		got, err := Parse(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if back, err := Parse(Format(got)); err != nil || !slices.Equal(back, got) {
			t.Errorf("Parse(Format(%v)) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "x", "1,x", "-1", "3-1", "1-", "0,0", "0-2,1"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}

func TestOf(t *testing.T) {
	var set unix.CPUSet
	for _, cpu := range []int{0, 3, 64, 1023} {
		set.Set(cpu)
	}
	if got := Of(&set); !slices.Equal(got, []int{0, 3, 64, 1023}) {
		t.Errorf("Of = %v", got)
	}
	if got := Of(&unix.CPUSet{}); got != nil {
		t.Errorf("Of(empty) = %v", got)
	}
}
