package check

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
)

// Item is one prompt of a check and how its output is judged.
type Item struct {
	Kind     string // sensible, repeat, question, eval, tools
	Prompt   string
	Tools    json.RawMessage // tools: the tools offered (the chat route's shape)
	Question *Question
	Expected string         // eval: the output must contain it (case aside)
	Regex    *regexp.Regexp // eval: the output must match it
	Where    string         // eval: file and line
}

var sensiblePrompts = []string{
	"Write two sentences about the sea.",
	"Explain in one paragraph why the sky is blue.",
	"List three uses of a paper clip.",
	"Describe a quiet morning in a small town.",
}

// Items are the built-in checks: prompts whose output must be sensible
// text, one of them again for greedy determinism, n exact-answer
// questions generated from seed, and a request offering tools whose
// calls must parse against them.
func Items(seed int64, n int) []Item {
	var items []Item
	for _, p := range sensiblePrompts {
		items = append(items, Item{Kind: "sensible", Prompt: p})
	}
	items = append(items, Item{Kind: "repeat", Prompt: sensiblePrompts[0]})
	for _, q := range Questions(seed, n) {
		items = append(items, Item{Kind: "question", Prompt: q.Prompt, Question: &q})
	}
	return append(items, toolItem())
}

// ReadEval reads the user's own questions: JSON Lines of {"prompt",
// "expected"} or {"prompt", "regex"}.
func ReadEval(path string) ([]Item, error) {
	f, err := infile.Open(context.Background(), path, infile.Records)
	if err != nil {
		return nil, fmt.Errorf("reading the eval file: %w", err)
	}
	defer f.Close()
	return ParseEval(f, path)
}

// ParseEval is ReadEval over r, with name for the messages.
func ParseEval(r io.Reader, path string) ([]Item, error) {
	var out []Item
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l struct {
			Prompt   string `json:"prompt"`
			Expected string `json:"expected"`
			Regex    string `json:"regex"`
		}
		where := fmt.Sprintf("%s line %d", path, n)
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		item := Item{Kind: "eval", Prompt: l.Prompt, Expected: l.Expected, Where: where}
		switch {
		case l.Prompt == "":
			return nil, fmt.Errorf("%s: field prompt is required", where)
		case (l.Expected == "") == (l.Regex == ""):
			return nil, fmt.Errorf("%s: give exactly one of expected or regex", where)
		case l.Regex != "":
			var err error
			if item.Regex, err = regexp.Compile(l.Regex); err != nil {
				return nil, fmt.Errorf("%s: field regex: %v", where, err)
			}
		}
		out = append(out, item)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// Correct scores an output against the item's answer (true for items
// that have none).
func (it Item) Correct(text string) bool {
	switch {
	case it.Question != nil:
		return it.Question.Correct(text)
	case it.Regex != nil:
		return it.Regex.MatchString(text)
	case it.Expected != "":
		return strings.Contains(strings.ToLower(text), strings.ToLower(it.Expected))
	}
	return true
}

// ResultSchema names the JSON form of a Result and its version.
const ResultSchema = "tokperf-check/1"

// Result is what a check found, passed or not, with its numbers.
type Result struct {
	Schema      string       `json:"schema"`
	File        string       `json:"file,omitempty"`
	Setup       record.Setup `json:"setup"`
	Sensible    []Sensible   `json:"sensible"`
	Determinism *Determinism `json:"determinism,omitempty"`
	Accuracy    *Accuracy    `json:"accuracy,omitempty"`
	Agreement   *Agreement   `json:"agreement,omitempty"`
	ToolCalls   *ToolCalls   `json:"tool_calls,omitempty"`
	Passed      bool         `json:"passed"`
	Failures    []string     `json:"failures,omitempty"` // what failed, one line each
}

// Sensible is one sensible-output check.
type Sensible struct {
	Prompt   string   `json:"prompt"`
	Problems []string `json:"problems,omitempty"`
	Tokens   int      `json:"output_tokens"`
	Finish   string   `json:"finish_reason"`
}

// Determinism is the same prompt sent twice at temperature 0.
type Determinism struct {
	Same bool `json:"same"`
	Word int  `json:"first_difference_word"` // where the two first differ (−1: nowhere)
	// Failed says why it could not be judged: one of the two requests
	// failed (two failures' empty texts are not the same answer).
	Failed string `json:"failed,omitempty"`
}

// Of is k right of n.
type Of struct {
	Right int `json:"right"`
	Total int `json:"total"`
}

// Accuracy is the exact-answer questions' score with its 95% Wilson
// interval, overall and by kind (built-in, your eval).
type Accuracy struct {
	Right     int     `json:"right"`
	Total     int     `json:"total"`
	Share     float64 `json:"share"`
	Lo        float64 `json:"lo_95"`
	Hi        float64 `json:"hi_95"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
	BuiltIn   *Of     `json:"built_in,omitempty"`
	Eval      *Of     `json:"eval,omitempty"`
	// Wrong are the first five wrong answers.
	Wrong []Answer `json:"wrong,omitempty"`
}

// Answer is a prompt and the output it got.
type Answer struct {
	Prompt string `json:"prompt"`
	Output string `json:"output"`
}

// Agreement compares greedy outputs with another server's or file's.
type Agreement struct {
	Same      int    `json:"same"`
	Total     int    `json:"total"`
	FirstDiff string `json:"first_difference_prompt,omitempty"`
	Word      int    `json:"first_difference_word"`
}

// Judge scores the records of a check's items (recs[i] answers items[i];
// a zero record is a request that never finished); other, when not nil,
// holds another server's outputs for the same items.
func Judge(items []Item, recs []record.Record, other []string, minAccuracy float64) Result {
	res := Result{Schema: ResultSchema, Passed: true}
	first, firstErr := "", ""
	for i, it := range items {
		rec := &recs[i]
		switch it.Kind {
		case "sensible":
			s := Sensible{Prompt: it.Prompt, Problems: Problems(rec.Text), Tokens: rec.OutputTokens, Finish: rec.FinishReason}
			if !rec.OK() {
				s.Problems = append(s.Problems, fmt.Sprintf("request %s: %s", rec.Status, rec.Error))
			} else if rec.FinishReason == "" {
				s.Problems = append(s.Problems, "no finish reason")
			}
			if i == 0 {
				first = rec.Text
				if !rec.OK() {
					firstErr = fmt.Sprintf("the first request %s: %s", rec.Status, rec.Error)
				}
			}
			if len(s.Problems) > 0 {
				res.Passed = false
				res.Failures = append(res.Failures, fmt.Sprintf("sensible output %q: %s", it.Prompt, strings.Join(s.Problems, "; ")))
			}
			res.Sensible = append(res.Sensible, s)
		case "repeat":
			d := &Determinism{Same: rec.Text == first, Word: -1}
			if !rec.OK() {
				d.Failed = fmt.Sprintf("the repeat request %s: %s", rec.Status, rec.Error)
			} else if firstErr != "" {
				d.Failed = firstErr
			}
			if d.Failed != "" {
				d.Same = false
				res.Passed = false
				res.Failures = append(res.Failures, "greedy determinism not judged: "+d.Failed)
			} else if !d.Same {
				d.Word = Divergence(first, rec.Text)
			}
			res.Determinism = d
		case "tools":
			res.judgeTools(it, rec)
		}
	}
	acc := &Accuracy{Threshold: minAccuracy}
	for i, it := range items {
		if it.Kind != "question" && it.Kind != "eval" {
			continue
		}
		kind := &acc.BuiltIn
		if it.Kind == "eval" {
			kind = &acc.Eval
		}
		if *kind == nil {
			*kind = &Of{}
		}
		acc.Total++
		(*kind).Total++
		if recs[i].OK() && it.Correct(recs[i].Text) {
			acc.Right++
			(*kind).Right++
		} else if len(acc.Wrong) < 5 {
			acc.Wrong = append(acc.Wrong, Answer{Prompt: it.Prompt, Output: strings.TrimSpace(recs[i].Text)})
		}
	}
	if acc.Total > 0 {
		acc.Lo, acc.Hi = Wilson(acc.Right, acc.Total)
		acc.Share = float64(acc.Right) / float64(acc.Total)
		acc.Passed = acc.Share >= minAccuracy
		if !acc.Passed {
			res.Passed = false
			res.Failures = append(res.Failures, fmt.Sprintf("accuracy %d of %d is below %.0f%%", acc.Right, acc.Total, 100*minAccuracy))
		}
		res.Accuracy = acc
	}
	if other != nil {
		res.Agreement = agree(items, recs, other)
	}
	return res
}

// agree compares the items' greedy outputs with another server's.
func agree(items []Item, recs []record.Record, other []string) *Agreement {
	a := &Agreement{Total: len(items), Word: -1}
	diff := -1
	for i := range items {
		if recs[i].Text == other[i] {
			a.Same++
		} else if diff < 0 {
			diff = i
		}
	}
	if diff >= 0 {
		a.FirstDiff, a.Word = items[diff].Prompt, Divergence(recs[diff].Text, other[diff])
	}
	return a
}
