package cli

import "time"

// The range of every count and duration a command takes: a value past it
// would not fit in memory (a slice of one per request), run for years, or
// overflow a time.Duration; each is refused with its range, before
// anything runs.
const (
	maxRequests    = 10_000_000 // --requests per stage: each keeps its figures until the stage's summary
	maxRepeat      = 1_000      // --repeat
	maxQuestions   = 100_000    // check --questions
	maxOutTokens   = 1_000_000  // check --max-tokens, selftest --tokens
	maxPredict     = 100_000    // predict -c, --max-concurrency: each level is replayed request by request
	maxPredictReqs = 1_000_000  // predict --requests
	minDuration    = time.Second
	maxDuration    = 365 * 24 * time.Hour // --duration: a year, far below time.Duration's 292
)

// within refuses v outside [lo, hi], naming the flag and its range.
func within(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// eachWithin is within for every value of a list.
func eachWithin(flag string, vs []int, lo, hi int) error {
	for _, v := range vs {
		if err := within(flag, v, lo, hi); err != nil {
			return err
		}
	}
	return nil
}
