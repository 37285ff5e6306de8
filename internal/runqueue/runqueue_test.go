package runqueue

import (
	"slices"
	"testing"
)

// TestOrder: High at the head, Normal at the tail, Yield at the tail whatever
// the priority, Next from the head.
func TestOrder(t *testing.T) {
	var q Queue[string]
	q.Enqueue("n1", false)
	q.Enqueue("h1", true)
	q.Enqueue("n2", false)
	q.Yield("y-high") // a high-priority coroutine yielding still goes last
	q.Enqueue("h2", true)
	var got []string
	for {
		v, ok := q.Next()
		if !ok {
			break
		}
		got = append(got, v)
	}
	if want := []string{"h2", "h1", "n1", "n2", "y-high"}; !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	if q.Len() != 0 {
		t.Fatalf("Len %d after draining, want 0", q.Len())
	}
}

func TestNoAllocsAtPeak(t *testing.T) {
	var q Queue[*int]
	x := new(int)
	for range 64 {
		q.Enqueue(x, false)
	}
	for range 64 {
		q.Next()
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range 64 {
			q.Enqueue(x, i%2 == 0)
		}
		for range 64 {
			q.Next()
		}
	}); n != 0 {
		t.Fatalf("%v allocations per cycle at the peak length, want 0", n)
	}
}
