//go:build race

package stackpool

// raceEnabled: the race detector's shadow memory for the Go heap distorts RSS.
const raceEnabled = true
