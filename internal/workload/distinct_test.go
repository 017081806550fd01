package workload

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A dataset's Info counts its distinct prompts (a repeated prompt once)
// and gives the quantiles of its prompts' and replies' lengths, as the
// tokenizer counted them.
func TestDatasetDistinctAndLengths(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "d.json")
	rec := func(q, a string) string {
		return fmt.Sprintf(`{"conversations":[{"from":"human","value":%q},{"from":"gpt","value":%q}]}`, q, a)
	}
	os.WriteFile(file, []byte("["+strings.Join([]string{
		rec("one two three", "a b"), rec("one two three", "a b c d"), rec("four five", "e"),
	}, ",")+"]"), 0o644)
	in := mustNew(t, Options{Dataset: file, Tokenizer: &wsTok{}}).Info()
	if in.Distinct != 2 || in.PromptLengths != "p10 2, p50 3, p90 3, max 3 tokens" || in.OutputLengths != "p10 1, p50 2, p90 4, max 4 tokens" {
		t.Errorf("distinct %d, prompts %q, outputs %q", in.Distinct, in.PromptLengths, in.OutputLengths)
	}
	if in := mustNew(t, Options{Input: Fixed(8), Output: Fixed(8)}).Info(); in.Distinct != 0 || in.PromptLengths != "" {
		t.Errorf("generated prompts: distinct %d, lengths %q", in.Distinct, in.PromptLengths)
	}
}

// The dataset the seed loop ships: 427 distinct human-written prompts,
// each with its reply, every one usable; the lengths Info gives are those
// of the file's own text, read here without the workload package.
func TestShippedDataset(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "examples", "datasets", "self-instruct.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Conversations []struct{ From, Value string }
	}
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	var prompts, replies []int
	for _, r := range recs {
		distinct[r.Conversations[0].Value] = true
		prompts = append(prompts, len(strings.Fields(r.Conversations[0].Value)))
		replies = append(replies, len(strings.Fields(r.Conversations[1].Value)))
	}
	slices.Sort(prompts)
	in := mustNew(t, Options{Dataset: path, Tokenizer: &wsTok{}}).Info()
	if in.Requests != len(recs) || in.Usable != len(recs) || in.Distinct != len(distinct) || in.Distinct < 400 {
		t.Errorf("%d requests of %d usable, %d distinct; the file has %d records, %d distinct prompts", in.Requests, in.Usable, in.Distinct, len(recs), len(distinct))
	}
	if want := quantileText(prompts); in.PromptLengths != want || in.OutputLengths != quantileText(replies) {
		t.Errorf("prompt lengths %q, want %q; outputs %q, want %q", in.PromptLengths, want, in.OutputLengths, quantileText(replies))
	}
	t.Logf("prompts %s; replies %s", in.PromptLengths, in.OutputLengths)
}
