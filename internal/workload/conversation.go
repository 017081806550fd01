package workload

import (
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// streamReply is the generator streams of synthetic conversations' replies.
const streamReply = 1 << 60

// Conversational says whether requests are conversations, sent turn by
// turn (Options.Turns, Options.Conversations).
func (w *Workload) Conversational() bool {
	generated := w.data == nil && w.trace == nil
	return ((w.o.Turns > 0 || w.o.Agent != nil || w.o.AgentTrace != nil) && generated) || (w.o.Conversations && w.data != nil)
}

// Turns is the number of turns of conversation c: Options.Turns, or a
// dataset conversation's user messages (at least one), or an agent
// session's own turns.
func (w *Workload) Turns(c int) int {
	if w.o.Agent != nil || w.o.AgentTrace != nil {
		return w.agentTurns(c)
	}
	if w.data == nil {
		return max(w.o.Turns, 1)
	}
	return max(len(users(w.item(c).conversation())), 1)
}

func (w *Workload) item(c int) *Item { return &w.data.Items[c%len(w.data.Items)] }

// conversation is an item's messages: a chat record's, or a ShareGPT
// record's conversation.
func (it *Item) conversation() []record.Message {
	if len(it.Messages) > 0 {
		return it.Messages
	}
	return it.Turns
}

// users are the indexes of the user messages of ms.
func users(ms []record.Message) []int {
	var out []int
	for i, m := range ms {
		if m.Role == "user" {
			out = append(out, i)
		}
	}
	return out
}

// turnIndex numbers a conversation's turns for the seeded generators.
func turnIndex(c, k int) int { return c<<10 | k&1023 }

// Turn is turn k (from 0) of conversation c: the whole history before it
// and its own user message, to the chat endpoint as messages and to every
// other as "role: content" paragraphs ending with "assistant:" (with the
// answer after it, the start of the next turn's). The history's replies
// are the dataset's or the generated ones, or, with Options.OwnAnswers,
// answers[j] (spaces trimmed at both ends, as a chat message holds it) for
// each turn j < k that has one.
func (w *Workload) Turn(c, k int, answers []string) record.Request {
	if !w.o.OwnAnswers {
		answers = nil
	}
	if w.o.Agent != nil || w.o.AgentTrace != nil {
		return w.agentTurn(c, k, answers)
	}
	req := record.Request{IgnoreEOS: w.o.IgnoreEOS, Temperature: w.o.Temperature, PromptSource: w.source(),
		MaxTokens: w.o.Output.At(w.seed^streamOutput, turnIndex(c, k))}
	if w.data == nil {
		for j := 0; j <= k; j++ {
			idx := turnIndex(c, j)
			user, _ := w.text(idx, w.o.Input.At(w.seed, idx), "")
			req.Messages = append(req.Messages, record.Message{Role: "user", Content: user})
			if j == k {
				break
			}
			reply := ""
			if j < len(answers) {
				reply = strings.TrimSpace(answers[j])
			} else {
				reply, _ = w.textOf(streamReply|uint64(idx), w.o.Output.At(w.seed^streamOutput, idx), "")
			}
			req.Messages = append(req.Messages, record.Message{Role: "assistant", Content: reply})
		}
	} else {
		it := w.item(c)
		ms := it.conversation()
		if len(ms) == 0 {
			ms = []record.Message{{Role: "user", Content: it.Prompt}}
		}
		req.Messages, req.Tools = history(ms, k, answers), it.Tools
		if reply := replyOf(ms, k); reply >= 0 && !w.o.OverrideOutput {
			req.MaxTokens = max(w.count(ms[reply].Content), 1)
		} else if len(it.Messages) > 0 && it.OutputTokens > 0 && !w.o.OverrideOutput && k == w.Turns(c)-1 {
			// A chat record's max_tokens is its last turn's.
			req.MaxTokens = it.OutputTokens
		}
	}
	// A transcript even of one message: each turn's prompt starts with the
	// last's and the answer it got, so a server that caches replies hits them.
	req.Prompt = transcript(req.Messages, true)
	req.PromptTokens = w.count(req.Prompt)
	return req
}

func (w *Workload) count(s string) int {
	if w.o.Tokenizer != nil {
		return w.o.Tokenizer.Count(s)
	}
	return EstimateTokens(s)
}

// history is ms up to and including its k-th user message; with answers,
// the first assistant message after each earlier user message j is
// answers[j] (one is put there when the dataset has none), so the history
// is what the server said.
func history(ms []record.Message, k int, answers []string) []record.Message {
	us := users(ms)
	if len(us) == 0 {
		return ms
	}
	k = min(k, len(us)-1)
	var out []record.Message
	from := 0
	for j := 0; j < k; j++ {
		out = append(out, ms[from:us[j]+1]...)
		between := ms[us[j]+1 : us[j+1]]
		if j < len(answers) {
			out = append(out, record.Message{Role: "assistant", Content: strings.TrimSpace(answers[j])})
			for i, m := range between {
				if m.Role == "assistant" {
					between = append(between[:i:i], between[i+1:]...)
					break
				}
			}
		}
		out = append(out, between...)
		from = us[j+1]
	}
	return append(out, ms[from:us[k]+1]...)
}

// replyOf is the index of the assistant message that answers the k-th user
// message, or -1.
func replyOf(ms []record.Message, k int) int {
	us := users(ms)
	if k >= len(us) {
		return -1
	}
	end := len(ms)
	if k+1 < len(us) {
		end = us[k+1]
	}
	for i := us[k] + 1; i < end; i++ {
		if ms[i].Role == "assistant" {
			return i
		}
	}
	return -1
}
