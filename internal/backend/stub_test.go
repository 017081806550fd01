package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// stub is an engine that is not SSE: its /stub route answers text/plain,
// one line a token ("tok <text>") and a last line with the count ("end
// <n>"). It is the whole of what backend needs of a new engine, as a
// protocol file would hold it: the protocol with its framing, registered
// in natives (here in a copy of the registry, so the test leaves the real
// one alone).
type stub struct{}

var _ protocol = stub{}

// plainLines is the stub's framing: a new framing is a value, not a case
// in the reading code.
var plainLines = framing{name: "text/plain", types: []string{"text/plain"}, open: newJSONLines}

func (stub) route() string    { return "/stub" }
func (stub) framing() framing { return plainLines }

func (stub) body(_ *Config, req *record.Request) ([]byte, error) {
	return json.Marshal(map[string]any{"prompt": req.Prompt, "n": req.MaxTokens})
}

func (stub) read(s *stream) bool {
	for s.Next() {
		kind, rest, _ := bytes.Cut(s.Data(), []byte(" "))
		switch string(kind) {
		case "tok":
			s.chunk(1, len(rest) > 0)
		case "end":
			n, err := strconv.Atoi(string(rest))
			if err != nil {
				s.fail("bad count " + string(rest))
				return false
			}
			s.rec.OutputTokens, s.rec.OutputSource, s.rec.ChunkSource = n, record.SourceUsage, record.SourceContinuous
			s.last()
			return true
		default:
			s.fail(string(s.Data()))
			return false
		}
	}
	return false
}

// A stub engine takes its table entry, one protocol file and one simulator
// file. Without the protocol the completeness check names the file to add;
// with it the check passes, and the stub is read through Backend.Do on its
// own framing (its Content-Type checked against it) with no change to the
// reading code. Its simulator file is internal/sim's to check
// (TestMissingImitationIsNamed).
func TestStubEngineTakesThreePlaces(t *testing.T) {
	t.Parallel()
	stubEntry := engine.Engine{Name: "stub", Native: true, Probes: []engine.Probe{{Path: "/stub/info", VersionKey: "version"}}}
	table := append(append([]engine.Engine(nil), engine.Table()...), stubEntry)
	registry := map[string]newProtocol{}
	for k, v := range natives {
		registry[k] = v
	}
	got := missingProtocols(table, registry)
	if len(got) != 1 || !strings.Contains(got[0], "internal/backend/stub.go") {
		t.Errorf("the stub in the table alone: %q, want one message naming internal/backend/stub.go", got)
	}
	registry["stub"] = func(*Config) protocol { return stub{} }
	if got := missingProtocols(table, registry); len(got) != 0 {
		t.Errorf("the stub with its protocol: %q", got)
	}
	if got := missingProtocols(engine.Table(), registry); len(got) != 1 || !strings.Contains(got[0], "internal/engine") {
		t.Errorf("a protocol the table lacks: %q, want one message naming internal/engine", got)
	}

	const tokens = 7
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stub" {
			http.NotFound(w, r)
			return
		}
		ctype := "text/plain; charset=utf-8"
		if r.Header.Get("X-Request-Id") == "tokperf-1" {
			ctype = "text/event-stream" // for the request that checks it is refused
		}
		w.Header().Set("Content-Type", ctype)
		for i := range tokens {
			fmt.Fprintf(w, "tok w%d\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "end %d\n", tokens)
	}))
	defer srv.Close()
	for _, net := range []bool{false, true} {
		cfg := Config{URL: srv.URL, Endpoint: "generate", Engine: "stub", NetHTTP: net}
		b, err := newBackend(cfg, registry["stub"](&cfg), "")
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New(0)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: tokens}, &rec)
		if !rec.OK() || rec.OutputTokens != tokens || len(rec.Chunks) != tokens || rec.ChunkTokens() != tokens || rec.FirstContent == record.Unset || rec.Done == record.Unset {
			t.Errorf("net/http %v: %s %s, %d tokens in %d chunks, want %d in %d", net, rec.Status, rec.Error, rec.OutputTokens, len(rec.Chunks), tokens, tokens)
		}
		b.Close()
	}
	// An SSE answer is not the stub's stream: named as such, by its framing.
	b, _ := newBackend(Config{URL: srv.URL, Endpoint: "generate", Engine: "stub"}, stub{}, "")
	rec := record.New(1)
	b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: tokens}, &rec)
	if rec.Status != record.StatusBadContentType || !strings.Contains(rec.Error, "want text/plain") {
		t.Errorf("an SSE answer to the stub: %s %s", rec.Status, rec.Error)
	}
	b.Close()
}
