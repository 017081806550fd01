//go:build !race

package twin_test

const raceEnabled = false
