package cli

import (
	"time"
)

// convFlags are the flags of prompts that share on purpose: multi-turn
// conversations and prefix groups (run and sweep).
type convFlags struct {
	prefixGroups int
	turns        int
	multiTurn    bool
	ownAnswers   bool
	think        time.Duration
}

func (f *convFlags) register(fs *flagSet) {
	fs.IntVar(&f.prefixGroups, "prefix-groups", 0, "with --shared-prefix N: G different shared prefixes of N tokens (system prompts), request i starting with prefix i mod G")
	fs.IntVar(&f.turns, "turns", 0, "send generated conversations of this many turns, turn by turn, the history growing (each user message --input-tokens, each reply --output-tokens); -c and --requests count conversations")
	fs.BoolVar(&f.multiTurn, "multi-turn", false, "send the --dataset's conversations turn by turn, a turn a user message, with the history before it; -c and --requests count conversations")
	fs.BoolVar(&f.ownAnswers, "own-answers", false, "with --turns or --multi-turn: the history holds the server's own answers, not the generated or the dataset's replies")
	fs.DurationVar(&f.think, "think-time", 0, "with --turns or --multi-turn: the user's wait between a turn's end and the next turn")
}

// on says whether requests are conversations.
func (f *convFlags) on() bool { return f.turns > 0 || f.multiTurn }

// check refuses what does not mix with conversations.
func (f *convFlags) check(l *loadFlags) error {
	switch {
	case f.prefixGroups < 0 || f.prefixGroups > 1<<20:
		return usagef("--prefix-groups %d: want a number of prefixes from 1", f.prefixGroups)
	case f.prefixGroups > 1 && l.sharedPrefix == 0:
		return usagef("--prefix-groups needs --shared-prefix N (the tokens of each group's prefix)")
	case f.prefixGroups > 1 && (l.dataset != "" || f.on()):
		return usagef("--prefix-groups shares generated prompts' prefixes: not with --dataset or conversations")
	case f.turns < 0 || f.turns > 1000:
		return usagef("--turns %d: want 1 to 1000 turns, or 0 for single requests", f.turns)
	case f.think < 0:
		return usagef("--think-time must not be negative")
	case !f.on() && (f.ownAnswers || f.think > 0):
		return usagef("--own-answers and --think-time go with --turns or --multi-turn")
	case !f.on():
		return nil
	case f.turns > 0 && f.multiTurn:
		return usagef("give --turns (generated conversations) or --multi-turn (a dataset's), not both")
	case f.multiTurn && l.dataset == "":
		return usagef("--multi-turn sends a --dataset's conversations: give one, or --turns N for generated ones")
	case f.turns > 0 && l.dataset != "":
		return usagef("--turns generates conversations: with --dataset, use --multi-turn")
	case len(l.rates) > 0:
		return usagef("conversations run in a closed loop (-c conversations in flight): drop --rate")
	case l.trace != "":
		return usagef("--trace does not mix with conversations")
	}
	return nil
}
