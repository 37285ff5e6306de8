package deadlock

import (
	"fmt"
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	got := Message("rt", "task", []string{"main", "waiter-a"})
	want := "rt: deadlock: 2 task(s) waiting with nothing runnable and no active reactor event: main, waiter-a"
	if got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	var many []string
	for i := range MaxNamed + 5 {
		many = append(many, fmt.Sprintf("t%d", i))
	}
	got = Message("rt", "coroutine", many)
	if !strings.Contains(got, fmt.Sprintf("%d coroutine(s)", MaxNamed+5)) || !strings.HasSuffix(got, fmt.Sprintf("t%d, ... and 5 more", MaxNamed-1)) ||
		strings.Contains(got, fmt.Sprintf("t%d", MaxNamed)) {
		t.Errorf("Message with %d names = %q: want the count, the first %d names and '... and 5 more'", MaxNamed+5, got, MaxNamed)
	}
}
