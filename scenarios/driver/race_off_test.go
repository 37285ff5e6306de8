//go:build !race

package driver

// raceOn: see race_on_test.go.
const raceOn = false
