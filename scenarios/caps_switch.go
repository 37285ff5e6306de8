package scenarios

import (
	"fmt"
	"iter"

	"github.com/corobench/corobench/impl/stackful"
	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/impl/stackful/stackpool"
)

// switchStackSize is the bare-switch fiber's stack: it only loops and
// mixes, so the pool's smallest size would do; 16 KiB leaves room.
const switchStackSize = 16 << 10

// SwitchRounds is the stackful rows' bare switch: fiber.Switch for the asm
// backend, an iter.Pull next/yield pair for the coro backend. It runs inside
// a coroutine of the scheduler, which does not see these switches: the GC
// fence the scheduler holds covers the extra fiber too.
func (f fibers) SwitchRounds(env *Env, n int) (uint64, error) {
	if f.backend == stackful.Coro {
		return pullRounds(env, n), nil
	}
	pool, err := stackpool.New(stackpool.Config{StackSize: switchStackSize})
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	st, err := pool.Get()
	if err != nil {
		return 0, err
	}
	defer pool.Put(st)
	var sum uint64
	var root, fib fiber.Context // root: the zero Context is the running one
	err = fib.Init(st.Lo(), st.Hi(), func() *fiber.Context {
		for i := 0; i < n; i++ {
			sum = mix(sum, uint64(2*i+1))
			fiber.Switch(&fib, &root)
		}
		return &root
	})
	if err != nil {
		return 0, fmt.Errorf("switch: %w", err)
	}
	env.ResetTimer()
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(2*i))
		fiber.Switch(&root, &fib)
	}
	env.StopTimer()
	fiber.Switch(&root, &fib) // let the fiber leave its loop and finish
	if !fib.Finished() {
		return 0, fmt.Errorf("switch: the fiber did not finish after %d rounds", n)
	}
	return sum, nil
}

// pullRounds is the coro backend's bare switch: each next resumes the
// iterator's coroutine, which mixes and yields back (two switches).
func pullRounds(env *Env, n int) uint64 {
	var sum uint64
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		for i := 0; i < n; i++ {
			sum = mix(sum, uint64(2*i+1))
			if !yield(struct{}{}) {
				return
			}
		}
	})
	defer stop()
	env.ResetTimer()
	for i := 0; i < n; i++ {
		sum = mix(sum, uint64(2*i))
		next()
	}
	env.StopTimer()
	return sum
}
