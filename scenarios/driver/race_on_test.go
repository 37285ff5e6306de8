//go:build race

package driver

// raceOn: the race detector makes every stack frame bigger, a parked
// goroutine's stack included.
const raceOn = true
