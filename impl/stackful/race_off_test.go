//go:build !race

package stackful

const raceEnabled = false
