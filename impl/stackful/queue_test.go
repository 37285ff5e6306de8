package stackful

import (
	"testing"
	"unsafe"
)

// TestCoQueue: the run queue against a slice model, through growth, head
// insertion and wrap-around (the twin of internal/ring's test), with the
// slot in front of the ring (coQueue.first) taken and left by every kind
// of push.
func TestCoQueue(t *testing.T) {
	var q coQueue
	var model []*coroutine
	cos := make([]coroutine, 2000)
	next := 0
	for round := 0; round < 200; round++ {
		for i := 0; i < round%7+1; i++ {
			co := &cos[next]
			next++
			switch (round + i) % 5 {
			case 0:
				q.PushFront(co)
				model = append([]*coroutine{co}, model...)
			case 1:
				if !q.tryPushFront(co) {
					q.pushFrontGrow(co)
				}
				model = append([]*coroutine{co}, model...)
			case 2:
				q.PushBack(co)
				model = append(model, co)
			case 3: // Yield's push: the ring's tail, never the slot
				if !q.tryPushBackRing(co) {
					q.pushBackGrow(co)
				}
				model = append(model, co)
			default:
				if !q.tryPushBack(co) {
					q.pushBackGrow(co)
				}
				model = append(model, co)
			}
		}
		for i := 0; i < round%5; i++ {
			co := q.PopFront()
			if len(model) == 0 {
				if co != nil {
					t.Fatalf("PopFront on an empty queue returned %p", co)
				}
				continue
			}
			if co != model[0] {
				t.Fatalf("round %d: PopFront = %p, want %p", round, co, model[0])
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(model))
		}
	}
	for len(model) > 0 {
		if co := q.PopFront(); co != model[0] {
			t.Fatalf("drain: PopFront = %p, want %p", co, model[0])
		}
		model = model[1:]
	}
	if q.PopFront() != nil || q.Len() != 0 {
		t.Fatal("queue not empty after draining")
	}
}

// TestLongQueueRoundRobin: with more coroutines queued than prefetchMin
// (so pickNext prefetches ahead, through started and unstarted ones), every
// coroutine still runs in FIFO order, round after round.
func TestLongQueueRoundRobin(t *testing.T) {
	eachBackend(t, func(t *testing.T, b Backend) {
		s := newSched(t, b)
		n := prefetchMin + 500
		var order []int
		err := s.Run(func() {
			for i := 0; i < n; i++ {
				Go(func() {
					for r := 0; r < 3; r++ {
						order = append(order, i)
						_ = Yield()
					}
				})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(order) != 3*n {
			t.Fatalf("%d steps, want %d", len(order), 3*n)
		}
		for k, id := range order {
			if id != k%n {
				t.Fatalf("step %d ran coroutine %d, want %d (FIFO round robin)", k, id, k%n)
			}
		}
	})
}

// TestCoroutineRecordSize: the record, timer node included, stays within the
// 320-byte size class (what a suspended coroutine keeps on the heap beside
// its context; the flags fill padding, the done event is made on demand,
// the name and the handler list are pointers, a waker's subscriptions carry
// no callback function).
func TestCoroutineRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(coroutine{}); got > 320 {
		t.Fatalf("the coroutine record is %d bytes, want at most 320 (the Go size class it fits today)", got)
	}
}
