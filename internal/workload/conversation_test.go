package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// Generated conversations: turn k carries the whole history (k user
// messages and k replies before its own), each turn's prompt starts with
// the last one's, and the replies are the output length asked for, or the
// server's own answers.
func TestGeneratedConversation(t *testing.T) {
	t.Parallel()
	in, _ := ParseLengths("60")
	out, _ := ParseLengths("20")
	for _, own := range []bool{false, true} {
		w, err := New(Options{Input: in, Output: out, Turns: 4, Seed: 2, Tokenizer: &wsTok{}, OwnAnswers: own})
		if err != nil {
			t.Fatal(err)
		}
		if !w.Conversational() || w.Turns(7) != 4 {
			t.Fatalf("conversational %v, %d turns", w.Conversational(), w.Turns(7))
		}
		var answers []string
		var prev record.Request
		for k := range 4 {
			req := w.Turn(7, k, answers)
			if len(req.Messages) != 2*k+1 || req.Messages[2*k].Role != "user" || req.MaxTokens != 20 {
				t.Fatalf("own %v turn %d: %d messages, max %d", own, k, len(req.Messages), req.MaxTokens)
			}
			if k > 0 {
				for j, m := range prev.Messages {
					if req.Messages[j].Role != m.Role || req.Messages[j].Content != m.Content {
						t.Fatalf("own %v turn %d: message %d is not the last turn's", own, k, j)
					}
				}
				if !strings.HasPrefix(req.Prompt, prev.Prompt+" "+req.Messages[2*k-1].Content+"\n\nuser: ") || !strings.HasSuffix(req.Prompt, "\n\nassistant:") {
					t.Fatalf("own %v turn %d: the prompt does not start with the last turn's", own, k)
				}
				reply := req.Messages[2*k-1]
				switch {
				case own && reply.Content != answers[k-1]:
					t.Errorf("turn %d: the reply is not the server's answer", k)
				case !own && (&wsTok{}).Count(reply.Content) != 20:
					t.Errorf("turn %d: a generated reply of %d tokens, want 20", k, (&wsTok{}).Count(reply.Content))
				}
			}
			if req.PromptTokens != (&wsTok{}).Count(req.Prompt) {
				t.Errorf("turn %d: %d prompt tokens said, %d counted", k, req.PromptTokens, (&wsTok{}).Count(req.Prompt))
			}
			answers = append(answers, "answer number "+string(rune('A'+k)))
			prev = req
		}
		if w.Turn(8, 0, nil).Prompt == w.Turn(7, 0, nil).Prompt {
			t.Error("two conversations start alike")
		}
	}
}

// A dataset's conversation: a turn a user message, the history its own
// messages up to that one (system and replies included), each turn's
// output the length of the reply that followed it; with own answers the
// replies are replaced by the server's.
func TestDatasetConversation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "c.jsonl")
	line := `{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two"}, {"role": "assistant", "content": "a b c"}, {"role": "user", "content": "three"}, {"role": "assistant", "content": "d e f g h"}, {"role": "user", "content": "four"}]}` + "\n"
	if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, own := range []bool{false, true} {
		w, err := New(Options{Dataset: file, Conversations: true, OwnAnswers: own, Output: Fixed(9), Tokenizer: &wsTok{}})
		if err != nil {
			t.Fatal(err)
		}
		if w.Turns(0) != 3 {
			t.Fatalf("%d turns, want 3", w.Turns(0))
		}
		answers := []string{"X Y", "Z"}
		var got []string
		for k := range 3 {
			req := w.Turn(0, k, answers[:k])
			var parts []string
			for _, m := range req.Messages {
				parts = append(parts, m.Role+"="+m.Content)
			}
			got = append(got, strings.Join(parts, "|"))
			if want := []int{3, 5, 9}[k]; req.MaxTokens != want {
				t.Errorf("own %v turn %d: max %d, want %d (the reply's length, the last turn's none: the output option)", own, k, req.MaxTokens, want)
			}
		}
		want := []string{
			"system=be brief|user=one two",
			"system=be brief|user=one two|assistant=a b c|user=three",
			"system=be brief|user=one two|assistant=a b c|user=three|assistant=d e f g h|user=four",
		}
		if own {
			want[1] = "system=be brief|user=one two|assistant=X Y|user=three"
			want[2] = "system=be brief|user=one two|assistant=X Y|user=three|assistant=Z|user=four"
		}
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("own %v turn %d:\n got %s\nwant %s", own, k, got[k], want[k])
			}
		}
	}
}

// A ShareGPT conversation replays turn by turn too: its system turns, then
// from its first human turn on, its replies in the history.
func TestShareGPTConversation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "s.json")
	data := `[{"conversations": [{"from": "system", "value": "sys"}, {"from": "human", "value": "hi there"}, {"from": "gpt", "value": "hello you two"}, {"from": "human", "value": "more"}, {"from": "gpt", "value": "a b c d"}]}]`
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Dataset: file, Conversations: true, Output: Fixed(9), Tokenizer: &wsTok{}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Turns(0) != 2 {
		t.Fatalf("%d turns, want 2", w.Turns(0))
	}
	req := w.Turn(0, 1, nil)
	if len(req.Messages) != 4 || req.Messages[0].Role != "system" || req.Messages[2].Content != "hello you two" || req.Messages[3].Content != "more" || req.MaxTokens != 4 {
		t.Errorf("turn 2: %+v, max %d", req.Messages, req.MaxTokens)
	}
	if first := w.Turn(0, 0, nil); first.MaxTokens != 3 || first.Prompt != "system: sys\n\nuser: hi there\n\nassistant:" {
		t.Errorf("turn 1: %q, max %d", first.Prompt, first.MaxTokens)
	}
	// Without conversations the record is its first exchange, as before.
	single, err := New(Options{Dataset: file, Output: Fixed(9)})
	if err != nil {
		t.Fatal(err)
	}
	if req := single.Request(0); req.Prompt != "hi there" || req.Messages != nil {
		t.Errorf("single: %q %v", req.Prompt, req.Messages)
	}
}
