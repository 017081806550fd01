package cli

import (
	"time"

	"github.com/tokperf/tokperf/internal/workload"
)

// convFlags are the flags of prompts that share on purpose: multi-turn
// conversations and prefix groups (run and sweep).
type convFlags struct {
	prefixGroups int
	turns        int
	multiTurn    bool
	ownAnswers   bool
	think        time.Duration
	agent        string
	shape        *workload.Agent // --agent, read by check
	agentTrace   string
	replay       *workload.AgentTrace // --agent-trace, read by check
}

func (f *convFlags) register(fs *flagSet) {
	fs.IntVar(&f.prefixGroups, "prefix-groups", 0, "with --shared-prefix N: G different shared prefixes of N tokens (system prompts), request i starting with prefix i mod G")
	fs.IntVar(&f.turns, "turns", 0, "send generated conversations of this many turns, turn by turn, the history growing (each user message --input-tokens, each reply --output-tokens); -c and --requests count conversations")
	fs.BoolVar(&f.multiTurn, "multi-turn", false, "send the --dataset's conversations turn by turn, a turn a user message, with the history before it; -c and --requests count conversations")
	fs.BoolVar(&f.ownAnswers, "own-answers", false, "with --turns or --multi-turn: the history holds the server's own answers, not the generated or the dataset's replies")
	fs.DurationVar(&f.think, "think-time", 0, "with --turns, --multi-turn or --agent: the user's wait between a turn's end and the next turn")
	fs.StringVar(&f.agent, "agent", "", "send generated agent sessions of this shape, turn by turn: `SHAPE` is default or KEY=VALUE,… of turns=DIST (a session's turns), tools=SHARE (of turns ending in a tool call), tool-time=DURATION[:lognormal:S] (the tool's wait), result=DIST (a tool result's tokens), fork=SHARE (of tool calls starting sub-agents), agents=K (sub-agents a fork starts), system=TOKENS (the system prompt all sessions share, with the tools), bust (a first-turn cache-bust); -c and --requests count sessions (docs/workloads.md)")
	fs.StringVar(&f.agentTrace, "agent-trace", "", "replay the agent sessions of a trace `FILE`, its format told by content: WEKA session traces (hash ids, sub-agents), session turns with session_id and delay (AIPerf's mooncake_trace), or OTLP JSON GenAI spans; each session's turns with the trace's lengths, blocks and waits; -c and --requests count sessions")
}

// on says whether requests are conversations.
func (f *convFlags) on() bool {
	return f.turns > 0 || f.multiTurn || f.agent != "" || f.agentTrace != ""
}

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
		return usagef("--own-answers and --think-time go with --turns, --multi-turn or --agent")
	case !f.on():
		return nil
	case f.agent != "" && (f.turns > 0 || f.multiTurn || l.dataset != ""):
		return usagef("--agent generates its sessions' turns: not with --turns, --multi-turn or --dataset")
	case f.agentTrace != "" && (f.agent != "" || f.turns > 0 || f.multiTurn || l.dataset != "" || l.corpus != ""):
		return usagef("--agent-trace replays its own sessions: not with --agent, --turns, --multi-turn, --dataset or --corpus")
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
	return f.readAgent()
}

// readAgent reads --agent's shape or --agent-trace's sessions.
func (f *convFlags) readAgent() error {
	if f.agentTrace != "" {
		t, err := workload.LoadAgentTrace(f.agentTrace)
		if err == nil {
			err = t.Check(workload.DefaultBlockSize)
		}
		if err != nil {
			return err
		}
		f.replay = t
		return nil
	}
	if f.agent == "" {
		return nil
	}
	a, err := workload.ParseAgent(f.agent)
	if err != nil {
		return usagef("--agent %q: %v", f.agent, err)
	}
	f.shape = &a
	return nil
}
