//go:build race

package bench

// raceBuild: the race detector slows the twin's replays fifteenfold, so a
// race build leaves the verdict's prediction out (tokperf fit and predict
// still fit); the race tests are of the concurrency, not the numerics.
const raceBuild = true
