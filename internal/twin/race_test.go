//go:build race

package twin_test

// raceEnabled: the race detector slows the replays tenfold; the fits are
// one goroutine's numerics, run in full without it.
const raceEnabled = true
