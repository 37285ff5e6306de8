//go:build race

package stackful

const raceEnabled = true
