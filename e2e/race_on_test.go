//go:build race

package e2e_test

// raceEnabled: the race detector allows at most 8128 live goroutines, so load tests scale down.
const raceEnabled = true
