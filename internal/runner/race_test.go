//go:build race

package runner_test

// raceEnabled: the race detector slows the client and the simulator, which
// share two cores, so latency tolerances are not checked under it.
const raceEnabled = true
