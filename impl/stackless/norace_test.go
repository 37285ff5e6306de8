//go:build !race

package stackless

const raceEnabled = false
