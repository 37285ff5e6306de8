//go:build race

package reactor

// raceEnabled: the race detector allocates in instrumented code, so
// allocation counts are meaningless under -race.
const raceEnabled = true
