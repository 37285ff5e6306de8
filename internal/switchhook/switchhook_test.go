package switchhook

import (
	"slices"
	"testing"
)

type handler func(log *[]string, k Kind) bool

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Enter: "enter", Leave: "leave", Finish: "finish", Kind(7): "SwitchKind(7)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

// counted returns a handler logging name and kept for keep calls.
func counted(name string, keep int) handler {
	calls := 0
	return func(log *[]string, k Kind) bool {
		*log = append(*log, name+" "+k.String())
		calls++
		return calls <= keep
	}
}

func TestFireKeepsOrderAndDropsFalse(t *testing.T) {
	var log []string
	hs := []handler{counted("a", 0), counted("b", 2), counted("c", 1)}
	for _, k := range []Kind{Enter, Leave, Enter, Finish} {
		Fire(&hs, &log, k)
	}
	want := []string{"a enter", "b enter", "c enter", "b leave", "c leave", "b enter"}
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
	if len(hs) != 0 {
		t.Errorf("%d handlers left, want 0", len(hs))
	}
}

// TestFireAddedDuringFiring: a handler installed by a handler is kept, runs
// from the next firing on, and the list is compacted without stale entries,
// whether or not the append moved the list to a new array.
func TestFireAddedDuringFiring(t *testing.T) {
	for _, spare := range []int{0, 8} { // append reallocates / stays in place
		var log []string
		hs := make([]handler, 0, 2+spare)
		added := false
		hs = append(hs, counted("x", 0), func(l *[]string, k Kind) bool {
			*l = append(*l, "adder "+k.String())
			if !added {
				added = true
				hs = append(hs, counted("new", 5))
			}
			return true
		})
		Fire(&hs, &log, Enter)
		Fire(&hs, &log, Leave)
		want := []string{"x enter", "adder enter", "adder leave", "new leave"}
		if !slices.Equal(log, want) {
			t.Errorf("spare %d: log %q, want %q", spare, log, want)
		}
		if len(hs) != 2 {
			t.Errorf("spare %d: %d handlers left, want 2", spare, len(hs))
		}
		if full := hs[:cap(hs)]; slices.ContainsFunc(full[len(hs):], func(h handler) bool { return h != nil }) {
			t.Errorf("spare %d: stale handlers left behind the list", spare)
		}
	}
}
