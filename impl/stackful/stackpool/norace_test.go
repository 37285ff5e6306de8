//go:build !race

package stackpool

const raceEnabled = false
