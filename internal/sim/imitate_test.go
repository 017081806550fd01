package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
)

// missingImitations names, for each engine of table without an imitation
// in ims (and each imitation of an engine the table lacks), the file to
// add it in.
func missingImitations(table []engine.Engine, ims map[string]imitation) []string {
	var out []string
	known := map[string]bool{}
	for _, e := range table {
		known[e.Name] = true
		if _, ok := ims[e.Name]; !ok {
			out = append(out, fmt.Sprintf("engine %q of internal/engine's table has no imitation in the simulator: add internal/sim/%s.go calling imitate(%q, imitation{…})", e.Name, e.Name, e.Name))
		}
	}
	for name := range ims {
		if !known[name] {
			out = append(out, fmt.Sprintf("the simulator imitates %q, which internal/engine's table does not know: add its entry there", name))
		}
	}
	return out
}

// Every engine of the table can be simulated, and the simulator imitates
// no engine the table does not know.
func TestImitatesEveryEngine(t *testing.T) {
	t.Parallel()
	for _, msg := range missingImitations(engine.Table(), imitations) {
		t.Error(msg)
	}
	if got, want := len(Engines()), len(engine.Table()); got != want {
		t.Errorf("a profile may name %d engines (%v), the table has %d", got, Engines(), want)
	}
}

// A stub engine added to the table alone is named as missing its
// simulator file; with its imitation registered it is complete; an
// imitation without a table entry is named too.
func TestMissingImitationIsNamed(t *testing.T) {
	t.Parallel()
	table := append(append([]engine.Engine(nil), engine.Table()...), engine.Engine{Name: "stub"})
	got := missingImitations(table, imitations)
	if len(got) != 1 || !strings.Contains(got[0], "internal/sim/stub.go") {
		t.Errorf("the table with a stub engine and no imitation of it: %q, want one message naming internal/sim/stub.go", got)
	}
	with := map[string]imitation{"stub": {}}
	for k, v := range imitations {
		with[k] = v
	}
	if got := missingImitations(table, with); len(got) != 0 {
		t.Errorf("the stub with its imitation: %q", got)
	}
	if got := missingImitations(engine.Table(), with); len(got) != 1 || !strings.Contains(got[0], "internal/engine") {
		t.Errorf("an imitation the table lacks: %q, want one message naming internal/engine", got)
	}
}

// Each imitation answers what the engine table holds of its engine: enough
// of its identity routes match the table's probes for detection to take
// it, one with the version; its /metrics has every name the table reads, and its
// tokenize routes take the table's text field. A failure names the
// simulator file to fix, or the table.
func TestImitationsAnswerTheTable(t *testing.T) {
	t.Parallel()
	for _, e := range engine.Table() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			if !Imitates(e.Name) {
				t.Skipf("no imitation (TestImitatesEveryEngine says where to add it)")
			}
			p := mustProfile(t, "tiny")
			p.Engine, p.PrefixCache = e.Name, true
			h := New(p, Options{NoTrace: true}).Handler()
			where := "internal/sim/" + e.Name + ".go"
			get := func(method, path, body string) (int, []byte) {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
				return w.Code, w.Body.Bytes()
			}
			// Detection takes an engine on two of its identity routes (one
			// where it has one), and reads the version where it is.
			matched, version := 0, false
			var answers []string
			for _, pr := range e.Probes {
				code, body := get(http.MethodGet, pr.Path, "")
				var m map[string]any
				answers = append(answers, fmt.Sprintf("GET %s: %d %.80q", pr.Path, code, body))
				if code == 200 && json.Unmarshal(body, &m) == nil && pr.Is(m) {
					matched++
					version = version || m[pr.VersionKey] != nil
				}
			}
			if need := min(len(e.Probes), 2); matched < need || (need > 0 && !version) {
				t.Errorf("%s: %d of its identity routes match internal/engine's probes (want %d, one with the version): %s", where, matched, need, strings.Join(answers, "; "))
			}
			code, body := get(http.MethodGet, "/metrics", "")
			names := e.Metrics
			for _, name := range []string{names.Running, names.Waiting, names.KV, names.Preemptions, names.Generated, names.Prompt,
				names.SpecDrafts, names.SpecDraftTokens, names.SpecAccepted, names.SpecLength, names.CacheHits, names.CacheQueries, names.CacheHitRate} {
				if name != "" && (code != 200 || !strings.Contains(string(body), "\n"+name+" ")) {
					t.Errorf("%s: /metrics (%d) has no %s, which internal/engine reads for %s", where, code, name, e.Name)
				}
			}
			if r := e.Tokenize; r.Tokenize != "" {
				code, body := get(http.MethodPost, r.Tokenize, `{"`+r.TextField+`": "a b c"}`)
				var ans struct{ Tokens []int }
				if code != 200 || json.Unmarshal(body, &ans) != nil || len(ans.Tokens) != 3 {
					t.Errorf("%s: POST %s with %q answers %d %.80q, want three tokens", where, r.Tokenize, r.TextField, code, body)
				}
			}
		})
	}
}
