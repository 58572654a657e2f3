//go:build !race

package engine

// raceEnabled reports a build with the race detector (sweep_test.go).
const raceEnabled = false
