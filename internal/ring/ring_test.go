package ring

import "testing"

func TestFIFOAndHeadInsertion(t *testing.T) {
	var q Queue[int]
	// Mirror the queue with a slice model across several wrap-arounds and growths.
	var model []int
	next := 0
	for round := 0; round < 200; round++ {
		for i := 0; i < round%7+1; i++ {
			if (round+i)%3 == 0 {
				q.PushFront(next)
				model = append([]int{next}, model...)
			} else {
				q.PushBack(next)
				model = append(model, next)
			}
			next++
		}
		for i := 0; i < round%5; i++ {
			v, ok := q.PopFront()
			if len(model) == 0 {
				if ok {
					t.Fatalf("PopFront on empty queue returned %d", v)
				}
				continue
			}
			if !ok || v != model[0] {
				t.Fatalf("round %d: PopFront = %d,%v, want %d", round, v, ok, model[0])
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(model))
		}
		for i := range model {
			if q.At(i) != model[i] {
				t.Fatalf("At(%d) = %d, want %d", i, q.At(i), model[i])
			}
		}
	}
	q.Clear()
	if _, ok := q.Peek(); ok || q.Len() != 0 {
		t.Fatal("queue not empty after Clear")
	}
}

func TestNoAllocSteadyState(t *testing.T) {
	var q Queue[*int]
	x := new(int)
	for i := 0; i < 64; i++ {
		q.PushBack(x)
	}
	q.Clear()
	allocs := testing.AllocsPerRun(1000, func() {
		q.PushBack(x)
		q.PushFront(x)
		q.PopFront()
		q.PopFront()
	})
	if allocs != 0 {
		t.Fatalf("steady-state push/pop allocates %v times", allocs)
	}
}

func BenchmarkPushPop(b *testing.B) {
	var q Queue[int]
	for i := 0; i < b.N; i++ {
		q.PushBack(i)
		v, _ := q.PopFront()
		_ = v
	}
}
