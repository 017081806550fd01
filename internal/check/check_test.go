package check

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

func TestWordsRoundTrip(t *testing.T) {
	t.Parallel()
	for n := 0; n < 1000; n++ {
		w := Words(n)
		if got, ok := ParseWords(w); !ok || got != n {
			t.Fatalf("%d → %q → %d, %v", n, w, got, ok)
		}
	}
	for n, want := range map[int]string{347: "three hundred forty-seven", 100: "one hundred", 15: "fifteen", 90: "ninety", 905: "nine hundred five"} {
		if got := Words(n); got != want {
			t.Errorf("Words(%d) = %q, want %q", n, got, want)
		}
	}
	for _, bad := range []string{"", "hundred", "twenty-zero", "ten hundred", "banana"} {
		if _, ok := ParseWords(bad); ok {
			t.Errorf("ParseWords(%q) accepted", bad)
		}
	}
}

func TestQuestionsDeterministic(t *testing.T) {
	t.Parallel()
	a, b, c := Questions(1, 20), Questions(1, 20), Questions(2, 20)
	if !cmp.Equal(a, b) {
		t.Error("same seed, different questions")
	}
	if cmp.Equal(a, c) {
		t.Error("different seeds, same questions")
	}
}

func TestCorrect(t *testing.T) {
	t.Parallel()
	add := Question{"add", "What is 37 + 48?", "85"}
	words := Question{"words", "Write 347 in words", "three hundred forty-seven"}
	for _, tc := range []struct {
		q    Question
		out  string
		want bool
	}{
		{add, " 85", true}, {add, "85.", true}, {add, "The answer is 85", true}, {add, "84, 85", false}, {add, "850", false}, {add, "", false},
		{words, " three hundred forty-seven", true}, {words, "Three hundred forty-seven.", true},
		{words, "three hundred forty-seventh", false}, {words, "three hundred forty-seven-ish", false}, {words, "three hundred", false},
	} {
		if got := tc.q.Correct(tc.out); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.q.Kind, tc.out, got, tc.want)
		}
	}
}

func TestProblems(t *testing.T) {
	t.Parallel()
	if p := Problems("The sea is wide and deep, and its waves roll in from far away."); len(p) != 0 {
		t.Errorf("sensible text flagged: %v", p)
	}
	for _, bad := range []string{"", "   ", "the the the the the the the the the", "a\x00b c d"} {
		if len(Problems(bad)) == 0 {
			t.Errorf("%q not flagged", bad)
		}
	}
}

func TestWilson(t *testing.T) {
	t.Parallel()
	lo, hi := Wilson(9, 10)
	if math.Abs(lo-0.5958) > 0.001 || math.Abs(hi-0.9821) > 0.001 {
		t.Errorf("Wilson(9, 10) = [%.4f, %.4f], want [0.5958, 0.9821]", lo, hi)
	}
}

func TestDivergence(t *testing.T) {
	t.Parallel()
	if Divergence("a b c", "a b c") != -1 || Divergence("a b c", "a x c") != 1 || Divergence("a b", "a b c") != 2 {
		t.Error("divergence positions")
	}
}

// TestRepetition: output that is a few characters over and over is
// degenerate even without spaces between them; sensible text is not.
func TestRepetition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{strings.Repeat("hora", 40), `degenerate: "hora" repeated 40 times`},
		{strings.Repeat("WH", 100), `degenerate: "WH" repeated 100 times`},
		{"Sure! " + strings.Repeat("horahora", 20) + "…", `repeated`},
		{strings.Repeat("!", 64), `degenerate: "!" repeated 64 times`},
		{strings.Repeat("ab12", 8), `degenerate: "ab12" repeated 8 times`},
		{strings.Repeat("日本", 30), `degenerate: "日本" repeated 30 times`},
		// Two or three units in no fixed order: no period, no spaces.
		{mixed([]string{"hora", "horahora", "ව"}, 40), `distinct 6-character pieces`},
		{mixed([]string{"ව", " Ven", "authentication"}, 30), `distinct 6-character pieces`},
		{"Sure! " + mixed([]string{"horahoraව", "hora"}, 20), `distinct 6-character pieces`},
	} {
		p := Problems(tc.text)
		if len(p) == 0 || !strings.Contains(p[len(p)-1], tc.want) {
			t.Errorf("%.40q…: problems %q, want one with %q", tc.text, p, tc.want)
		}
	}
	for _, ok := range []string{
		"The sea is wide and deep, and its waves roll in from far away.",
		"Three hundred forty-seven",
		"1000000",
		"Hahaha, that is a good one! I had not heard it before.",
		"The answer is 1,000,000,000,000 — one trillion, written out in full.",
		"Step 1: add. Step 2: carry the one. Step 3: done.",
		"Mississippi is a state; its river is long.",
		"def f(x):\n    return x * x  # square\n\nprint(f(3))",
		strings.Repeat("-", 10) + " a heading rule, then prose that carries on for a while after it.",
		"1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25",
		"func sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n",
	} {
		if p := Problems(ok); len(p) != 0 {
			t.Errorf("%q flagged: %v", ok, p)
		}
	}
}

// mixed is n units drawn in a seeded random order: a few units over and
// over with no period.
func mixed(units []string, n int) string {
	rng := rand.New(rand.NewPCG(1, 1))
	var b strings.Builder
	for range n {
		b.WriteString(units[rng.IntN(len(units))])
	}
	return b.String()
}

// Greedy determinism needs two answers: two failed requests' empty texts
// are equal, but they say nothing about the server (issue 37).
func TestDeterminismNeedsTwoAnswers(t *testing.T) {
	t.Parallel()
	items := []Item{{Kind: "sensible", Prompt: "p"}, {Kind: "repeat", Prompt: "p"}}
	ok := record.Record{Status: record.StatusOK, Text: "The sea is wide and deep. It holds many fish.", FinishReason: "stop", OutputTokens: 12}
	failed := record.Record{Status: record.StatusHTTPError, Error: "HTTP 500"}
	for _, tc := range []struct {
		name          string
		first, repeat record.Record
		same, judged  bool
	}{
		{"both answered", ok, ok, true, true},
		{"both failed", failed, failed, false, false},
		{"repeat failed", ok, failed, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Judge(items, []record.Record{tc.first, tc.repeat}, nil, 0)
			d := res.Determinism
			if d.Same != tc.same || (d.Failed == "") != tc.judged {
				t.Errorf("same %v failed %q; want same %v, judged %v", d.Same, d.Failed, tc.same, tc.judged)
			}
			if !tc.judged && res.Passed {
				t.Error("the check passed with an unjudged determinism")
			}
		})
	}
}

// A call must name a sent tool, and its arguments must be a JSON object
// with every property that tool requires.
func TestToolProblems(t *testing.T) {
	t.Parallel()
	tools := json.RawMessage(checkTools)
	for _, tc := range []struct {
		call record.ToolCall
		want string // "" for none
	}{
		{record.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}, ""},
		{record.ToolCall{Name: "get_time", Arguments: `{"timezone":"UTC","extra":1}`}, ""},
		{record.ToolCall{Name: "get_wether", Arguments: `{"city":"Paris"}`}, `call 1 names "get_wether", a tool that was not sent`},
		{record.ToolCall{Name: "get_weather", Arguments: `{"unit":"celsius"}`}, `call 1 (get_weather): its arguments lack the required "city"`},
		{record.ToolCall{Name: "get_weather", Arguments: `{"city":"Par`}, `call 1 (get_weather): its arguments are not a JSON object`},
		{record.ToolCall{Name: "get_weather", Arguments: `["Paris"]`}, `its arguments are not a JSON object`},
	} {
		got := strings.Join(ToolProblems(tools, []record.ToolCall{tc.call}), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.call, got, tc.want)
		}
	}
}
