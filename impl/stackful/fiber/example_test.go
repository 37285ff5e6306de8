package fiber_test

import (
	"fmt"

	"github.com/corobench/corobench/impl/stackful/fiber"
	"github.com/corobench/corobench/impl/stackful/stackpool"
)

func Example() {
	if err := fiber.Supported(); err != nil {
		fmt.Println(err) // report the row unsupported
		return
	}
	hold := fiber.HoldGC() // before the first fiber exists
	defer func() {
		if err := hold.Release(); err != nil {
			panic(err) // a collection ran: the run is invalid
		}
	}()

	// Stacks come from mmap, with a size that is not a power of two.
	pool, err := stackpool.New(stackpool.Config{StackSize: 64 << 10})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	stack, err := pool.Get()
	if err != nil {
		panic(err)
	}
	defer pool.Put(stack)

	root, fib := new(fiber.Context), new(fiber.Context) // the zero Context becomes the root on first Switch
	err = fib.Init(stack.Lo(), stack.Hi(), func() *fiber.Context {
		fmt.Println("fiber: started")
		fiber.Switch(fib, root) // suspend, back to the root
		fmt.Println("fiber: resumed")
		return root // finished: continue with the root
	})
	if err != nil {
		panic(err)
	}
	fiber.Switch(root, fib)
	fmt.Println("root: fiber suspended")
	fiber.Switch(root, fib)
	fmt.Println("root: fiber finished:", fib.Finished())
	// Output:
	// fiber: started
	// root: fiber suspended
	// fiber: resumed
	// root: fiber finished: true
}
