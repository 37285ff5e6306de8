package stackpool_test

import (
	"fmt"

	"github.com/corobench/corobench/impl/stackful/stackpool"
)

func Example() {
	pool, err := stackpool.New(stackpool.Config{StackSize: 64 << 10, DecayOps: -1})
	if err != nil {
		panic(err)
	}
	s, err := pool.Get() // a miss: a fresh slot of a new slab
	if err != nil {
		panic(err)
	}
	fmt.Printf("usable %d bytes, [Lo, Hi) 16-byte aligned: %v\n", s.Size(), s.Lo()%16 == 0 && s.Hi()%16 == 0)
	pool.Put(s)
	s, _ = pool.Get() // a hit: the stack just returned
	pool.Put(s)
	pool.Trim() // closes the window: its peak (1) is kept
	pool.Trim() // a quiet window: the free stack is released
	st := pool.Stats()
	fmt.Printf("hits %d, misses %d, trims %d, released %d, slabs %d\n", st.Hits, st.Misses, st.Trims, st.StacksReleased, st.Slabs)
	if err := pool.Close(); err != nil {
		panic(err)
	}
	// Output:
	// usable 65520 bytes, [Lo, Hi) 16-byte aligned: true
	// hits 1, misses 1, trims 1, released 1, slabs 0
}
