//go:build !race

package toolgrain_test

const raceEnabled = false
