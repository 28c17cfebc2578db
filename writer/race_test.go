//go:build race

package writer

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
