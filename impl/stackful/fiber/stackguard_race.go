//go:build race

package fiber

// stackGuard under -race: StackGuardMultiplier is 2 (see stackguard.go).
const stackGuard = 800*2 + 128
