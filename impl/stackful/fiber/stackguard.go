//go:build !race

package fiber

// stackGuard is the runtime's stackGuard for this build: the split-stack
// prologue calls morestack when SP drops below g.stack.lo + stackGuard.
// It is stackNosplit (800 × StackGuardMultiplier) + StackSmall (128), see
// $GOROOT/src/runtime/stack.go; the race detector doubles the multiplier.
// The assembly reads it as const_stackGuard from go_asm.h.
const stackGuard = 800*1 + 128
