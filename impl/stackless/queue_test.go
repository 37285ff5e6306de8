package stackless

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTaskQueueModel checks the run queue, head field and ring together,
// against a slice: random pushes at both ends and pops, across growths and
// wrap-arounds, keep the same order and length. Every 64 steps the mix
// turns from mostly pushes to mostly pops and back, so the queue also
// empties and refills often, as a hand-off's queue does.
func TestTaskQueueModel(t *testing.T) {
	tasks := make([]Coro, 64)
	rng := rand.New(rand.NewPCG(3, 4))
	var q taskQueue
	var model []*Coro
	for step := range 20000 {
		op := rng.IntN(20) // 0-7 push back, 8-11 push front, 12-19 pop
		if step/64%2 == 1 && op < 12 {
			op = 12 + op%8 // the draining phase: mostly pops
		}
		switch {
		case op < 8 && len(model) < 200:
			co := &tasks[rng.IntN(len(tasks))]
			q.PushBack(co)
			model = append(model, co)
		case op < 12 && len(model) < 200:
			co := &tasks[rng.IntN(len(tasks))]
			if rng.IntN(2) == 0 {
				q.PushFront(co)
			} else if !q.tryPushFront(co) {
				q.pushFrontGrow(co)
			}
			model = slices.Insert(model, 0, co)
		default:
			got := q.PopFront()
			var want *Coro
			if len(model) > 0 {
				want, model = model[0], model[1:]
			}
			if got != want {
				t.Fatalf("step %d: PopFront = %p, model %p", step, got, want)
			}
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, q.Len(), len(model))
		}
	}
}
