//go:build race

package cli

// raceEnabled: the race detector slows the client, so accuracy is not asserted under it.
const raceEnabled = true
