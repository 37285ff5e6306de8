package stackful

import "fmt"

// Guard selects guard pages below fiber stacks (Asm backend).
type Guard uint8

const (
	GuardAuto Guard = iota // guard pages while they fit under vm.max_map_count
	GuardOn                // always (fails when the map limit is reached)
	GuardOff               // never (slab allocation; overflow still hits morestack first)
)

// asmContext is a fiber: a pooled stack and its saved context.
type asmContext struct{}

func newAsmBackend(*Scheduler) (backend, error) {
	return nil, fmt.Errorf("%w: stackful-asm: the fiber switch (impl/stackful/fiber) is not integrated yet", ErrNotSupported)
}
