package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/runner"
)

// errCheckFailed ends tokperf check with exit 1 after its report.
var errCheckFailed = errors.New("check failed")

// checkItem is one prompt of a check and how its output is judged.
type checkItem struct {
	kind     string // sensible, repeat, question, eval
	prompt   string
	question *check.Question
	expected string
	re       *regexp.Regexp
	where    string // eval file:line
}

var sensiblePrompts = []string{
	"Write two sentences about the sea.",
	"Explain in one paragraph why the sky is blue.",
	"List three uses of a paper clip.",
	"Describe a quiet morning in a small town.",
}

// readEval reads JSON Lines of {"prompt", "expected"} or {"prompt", "regex"}.
func readEval(path string) ([]checkItem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the eval file: %w", err)
	}
	defer f.Close()
	var out []checkItem
	sc := bufio.NewScanner(f)
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
		item := checkItem{kind: "eval", prompt: l.Prompt, expected: l.Expected, where: where}
		switch {
		case l.Prompt == "":
			return nil, fmt.Errorf("%s: field prompt is required", where)
		case (l.Expected == "") == (l.Regex == ""):
			return nil, fmt.Errorf("%s: give exactly one of expected or regex", where)
		case l.Regex != "":
			if item.re, err = regexp.Compile(l.Regex); err != nil {
				return nil, fmt.Errorf("%s: field regex: %v", where, err)
			}
		}
		out = append(out, item)
	}
	return out, sc.Err()
}

func (it checkItem) correct(text string) bool {
	switch {
	case it.question != nil:
		return it.question.Correct(text)
	case it.re != nil:
		return it.re.MatchString(text)
	case it.expected != "":
		return strings.Contains(strings.ToLower(text), strings.ToLower(it.expected))
	}
	return true
}

// checkCmd is tokperf check: smoke and accuracy checks that need no download.
func checkCmd(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var f loadFlags
	fs.StringVar(&f.url, "url", "", "server base URL (none: the embedded simulator)")
	fs.StringVar(&f.endpoint, "endpoint", "", "generate, completions, chat or api-chat (default: the raw generation endpoint)")
	fs.StringVar(&f.engine, "engine", "", "the server's engine when detection is wrong")
	fs.StringVar(&f.model, "model", "", "model name (default: the first of /v1/models)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY)")
	fs.StringVar(&f.profile, "sim-profile", "seed", "simulator profile when there is no --url")
	fs.StringVar(&f.out, "out", "", "result file with every output (default ./tokperf-results/TIMESTAMP-check.jsonl)")
	fs.StringVar(&f.out, "o", "", "shorthand for --out")
	fs.Var(&f.wait, "wait-ready", "wait for a starting server: --wait-ready or --wait-ready=TIMEOUT")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the question set")
	conc := fs.Int("c", 4, "requests in flight (correctness under load)")
	n := fs.Int("questions", 40, "exact-answer questions")
	maxTokens := fs.Int("max-tokens", 48, "output tokens per answer at most")
	minAcc := fs.Float64("min-accuracy", 0.9, "fail below this share of correct answers")
	against := fs.String("against", "", "another server's URL, or an earlier check's result file (.jsonl): compare greedy outputs")
	evalFile := fs.String("eval", "", "your own questions: JSON Lines of {prompt, expected} or {prompt, regex}")
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if *conc < 1 || *n < 0 || *maxTokens < 1 || *minAcc < 0 || *minAcc > 1 {
		return usagef("-c and --max-tokens must be positive, --questions not negative, --min-accuracy in [0, 1]")
	}
	f.keepText, f.timeout = true, 5*time.Minute
	items := []checkItem{}
	for _, p := range sensiblePrompts {
		items = append(items, checkItem{kind: "sensible", prompt: p})
	}
	items = append(items, checkItem{kind: "repeat", prompt: sensiblePrompts[0]})
	for _, q := range check.Questions(f.seed, *n) {
		items = append(items, checkItem{kind: "question", prompt: q.Prompt, question: &q})
	}
	if *evalFile != "" {
		ev, err := readEval(*evalFile)
		if err != nil {
			return err
		}
		items = append(items, ev...)
	}
	texts, recs, setup, err := runChecks(ctx, "check", &f, e, items, *conc, *maxTokens)
	if err != nil {
		return err
	}
	var other []string
	switch {
	case strings.HasSuffix(*against, ".jsonl"):
		// The outputs of an earlier check, saved in its result file.
		_, saved, _, err := results.ReadAll(*against)
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		other = make([]string, len(items))
		for _, r := range saved {
			if r.ID >= 0 && r.ID < len(items) {
				other[r.ID] = r.Text
			}
		}
	case *against != "":
		g := f
		g.url, g.out = *against, os.DevNull
		if other, _, _, err = runChecks(ctx, "check", &g, e, items, *conc, *maxTokens); err != nil {
			return fmt.Errorf("--against: %w", err)
		}
	}
	failed := printChecks(e.stdout, setup, items, texts, recs, other, *minAcc)
	if failed {
		return errCheckFailed
	}
	return nil
}

// runChecks sends every item at temperature 0 and returns the outputs.
func runChecks(ctx context.Context, cmd string, f *loadFlags, e *env, items []checkItem, conc, maxTokens int) ([]string, []record.Record, record.Setup, error) {
	sess, err := connect(ctx, cmd, f, e)
	if err != nil {
		return nil, nil, record.Setup{}, err
	}
	defer sess.close()
	b, err := sess.backend(ctx, sess.setup.Endpoint, conc)
	if err != nil {
		return nil, nil, record.Setup{}, err
	}
	defer b.Close()
	setup := sess.setup
	setup.Route, setup.Client = b.Route(), b.Client()
	setup.Workload = record.Workload{OutputTokens: maxTokens, Seed: f.seed}
	setup.Load = record.Load{Concurrency: []int{conc}, Requests: len(items)}
	out, w, clock, err := create(f.out, cmd, setup)
	if err != nil {
		return nil, nil, record.Setup{}, err
	}
	r := &runner.Runner{
		Backend: b, Clock: clock, Sink: func(rec record.Record) { w.Write(rec) },
		Source: func(i int) record.Request {
			return record.Request{Prompt: items[i%len(items)].prompt, MaxTokens: maxTokens, Temperature: 0}
		},
	}
	recs := r.Stage(ctx, runner.Stage{Concurrency: conc, Requests: len(items), Timeout: f.timeout})
	w.Close(ctx.Err() != nil)
	if f.out != os.DevNull {
		fmt.Fprintf(e.stderr, "outputs: %s\n", out)
	}
	texts := make([]string, len(items))
	byID := make([]record.Record, len(items))
	for _, rec := range recs {
		if rec.ID >= 0 && rec.ID < len(items) {
			texts[rec.ID], byID[rec.ID] = rec.Text, rec
		}
	}
	if ctx.Err() != nil {
		return texts, byID, setup, errInterrupted
	}
	return texts, byID, setup, nil
}

// printChecks writes the report and says whether the check failed.
func printChecks(w io.Writer, setup record.Setup, items []checkItem, texts []string, recs []record.Record, other []string, minAcc float64) bool {
	fmt.Fprintf(w, "%s, %s\n\n", describe(setup), setup.Route)
	failed := false
	var first string
	for i, it := range items {
		rec := recs[i]
		switch it.kind {
		case "sensible":
			problems := check.Problems(texts[i])
			if !rec.OK() {
				problems = append(problems, fmt.Sprintf("request %s: %s", rec.Status, rec.Error))
			} else if rec.FinishReason == "" {
				problems = append(problems, "no finish reason")
			}
			if i == 0 {
				first = texts[i]
			}
			if len(problems) > 0 {
				failed = true
				fmt.Fprintf(w, "FAIL sensible output %q: %s\n", it.prompt, strings.Join(problems, "; "))
			} else {
				fmt.Fprintf(w, "ok   sensible output %q (%d tokens, %s)\n", it.prompt, rec.OutputTokens, rec.FinishReason)
			}
		case "repeat":
			if texts[i] == first {
				fmt.Fprintln(w, "ok   greedy determinism: the same prompt twice at temperature 0 gave the same text")
			} else {
				fmt.Fprintf(w, "note greedy determinism: the same prompt twice gave different text from word %d (some engines are not deterministic under batching; not a failure)\n", check.Divergence(first, texts[i]))
			}
		}
	}
	kinds := map[string][2]int{}
	var wrong []string
	right, total := 0, 0
	for i, it := range items {
		if it.kind != "question" && it.kind != "eval" {
			continue
		}
		total++
		k := kinds[it.kind]
		k[1]++
		if recs[i].OK() && it.correct(texts[i]) {
			right++
			k[0]++
		} else if len(wrong) < 5 {
			wrong = append(wrong, fmt.Sprintf("  %q → %q", it.prompt, strings.TrimSpace(texts[i])))
		}
		kinds[it.kind] = k
	}
	if total > 0 {
		lo, hi := check.Wilson(right, total)
		acc := float64(right) / float64(total)
		verdict := "ok  "
		if acc < minAcc {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(w, "%s accuracy %d of %d = %.1f%% (95%% interval %.1f–%.1f%%; the threshold is %.0f%%)", verdict, right, total, 100*acc, 100*lo, 100*hi, 100*minAcc)
		for _, k := range []string{"question", "eval"} {
			if v, ok := kinds[k]; ok {
				fmt.Fprintf(w, "; %s %d/%d", map[string]string{"question": "built-in", "eval": "your eval"}[k], v[0], v[1])
			}
		}
		fmt.Fprintln(w)
		for _, x := range wrong {
			fmt.Fprintln(w, x)
		}
	}
	if other != nil {
		same, firstDiff := 0, -1
		for i := range items {
			if texts[i] == other[i] {
				same++
			} else if firstDiff < 0 {
				firstDiff = i
			}
		}
		fmt.Fprintf(w, "agreement with --against: %d of %d greedy outputs identical (%.0f%%)", same, len(items), 100*float64(same)/float64(len(items)))
		if firstDiff >= 0 {
			fmt.Fprintf(w, "; the first difference is on %q at word %d", items[firstDiff].prompt, check.Divergence(texts[firstDiff], other[firstDiff]))
		}
		fmt.Fprintln(w)
	}
	if failed {
		fmt.Fprintln(w, "\nverdict: FAIL — do not trust this configuration's speed until it answers correctly")
	} else {
		fmt.Fprintln(w, "\nverdict: pass")
	}
	return failed
}
