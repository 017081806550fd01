package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
)

// wireCase is one capture of testdata/wire and what its own bytes say:
// the counts its server stated (usage, details, timings) or, where it
// stated none, its token events; see testdata/wire/README.md.
type wireCase struct {
	File     string `json:"file"`
	Engine   string `json:"engine"`
	Endpoint string `json:"endpoint"`
	Status   string `json:"status"`
	Error    string `json:"error"` // what a failed request's error must quote of the server's`
	Output   int    `json:"output"`
	// Counted is where the count comes from: usage (the server's count),
	// events (no count: one token per event assumed), or one-per-event
	// (no count, but the protocol streams one token an event: TGI's
	// native stream, exact).
	Counted   string `json:"counted"`
	Prompt    int    `json:"prompt"`
	Finish    string `json:"finish"`
	Reasoning int    `json:"reasoning"`
	// Tools names the tool calls the response made, in order; each
	// call's arguments must be whole JSON once its fragments are joined.
	Tools    []string `json:"tools"`
	Warnings []string `json:"warnings"`
	// Route, for an identity answer, is where its server gave it; Detect
	// is the engine that answer alone shows.
	Route  string `json:"route"`
	Detect string `json:"detect"`
	// Known names the issue a case still shows; the case runs (no hang,
	// no panic) and is skipped until the fix lands.
	Known string `json:"known"`
}

var wireDir = filepath.Join("..", "..", "testdata", "wire")

func wireManifest(t *testing.T) []wireCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wireDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []wireCase
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	return cases
}

// wireEvents splits a capture into what its server wrote at once: SSE
// events with their blank line, or NDJSON lines; the bytes are kept.
func wireEvents(body []byte, ndjson bool) [][]byte {
	sep := []byte("\n\n")
	if ndjson {
		sep = []byte("\n")
	}
	var out [][]byte
	for len(body) > 0 {
		i := bytes.Index(body, sep)
		if i < 0 {
			return append(out, body)
		}
		out = append(out, body[:i+len(sep)])
		body = body[i+len(sep):]
	}
	return out
}

// pacedServer serves a capture to every request over loopback, an event
// at a time with pace between them, as a server writes tokens.
func pacedServer(t *testing.T, name string, pace time.Duration) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(wireDir, name))
	if err != nil {
		t.Fatal(err)
	}
	ndjson := strings.HasSuffix(name, ".ndjson")
	events := wireEvents(body, ndjson)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if ndjson {
			w.Header().Set("Content-Type", "application/x-ndjson")
		} else {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		fl := w.(http.Flusher)
		for i, ev := range events {
			if i > 0 {
				time.Sleep(pace)
			}
			if _, err := w.Write(ev); err != nil {
				return
			}
			fl.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The real captures of testdata/wire, each served over loopback with its
// events spaced in time, read by both clients (tokperf's own and
// net/http): the status, counts, finish and reasoning the server stated,
// and exactly the warnings those bytes call for. Timing warnings
// (client_lag, effective_concurrency, drain_tail) belong to this
// machine, not to the capture, and are left out.
func TestWireCorpusReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range wireManifest(t) {
		if tc.Route != "" {
			continue
		}
		t.Run(tc.File, func(t *testing.T) {
			t.Parallel()
			url := pacedServer(t, tc.File, time.Millisecond)
			for _, netHTTP := range []bool{false, true} {
				recs := replayCapture(t, tc, url, netHTTP)
				if tc.Known != "" {
					t.Skipf("known: %s (today: %s %q, %d tokens)", tc.Known, recs[0].Status, recs[0].Error, recs[0].OutputTokens)
				}
				checkReplay(t, tc, recs, netHTTP)
			}
		})
	}
}

// replayCapture sends three requests on one client, as a stage does.
func replayCapture(t *testing.T, tc wireCase, url string, netHTTP bool) []record.Record {
	t.Helper()
	b, err := backend.New(backend.Config{URL: url, Endpoint: tc.Endpoint, Engine: tc.Engine, Model: "m", Conns: 1, NetHTTP: netHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var recs []record.Record
	for i := range 3 {
		rec := record.New(i)
		rec.Concurrency = 1
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 8192}, &rec)
		if rec.Status == "" {
			t.Fatalf("request %d has no status", i)
		}
		recs = append(recs, rec)
	}
	return recs
}

func checkReplay(t *testing.T, tc wireCase, recs []record.Record, netHTTP bool) {
	t.Helper()
	client := map[bool]string{false: "tokperf's client", true: "net/http"}[netHTTP]
	for i, rec := range recs {
		if string(rec.Status) != tc.Status || !strings.Contains(rec.Error, tc.Error) {
			t.Fatalf("%s, request %d: status %q (%s), want %q quoting %q", client, i, rec.Status, rec.Error, tc.Status, tc.Error)
		}
		if rec.Status != record.StatusOK {
			continue
		}
		source := map[string]record.TokenSource{"usage": record.SourceUsage, "events": record.SourceChunks, "one-per-event": record.SourceContinuous}[tc.Counted]
		if rec.OutputTokens != tc.Output || rec.OutputSource != source || rec.PromptTokens != tc.Prompt ||
			rec.FinishReason != tc.Finish || rec.ReasoningTokens != tc.Reasoning {
			t.Errorf("%s, request %d: output %d from %q, prompt %d, finish %q, reasoning %d; the capture says output %d (%s), prompt %d, finish %q, reasoning %d",
				client, i, rec.OutputTokens, rec.OutputSource, rec.PromptTokens, rec.FinishReason, rec.ReasoningTokens,
				tc.Output, tc.Counted, tc.Prompt, tc.Finish, tc.Reasoning)
		}
		checkToolCalls(t, client, i, tc, &rec)
	}
	setup := record.Setup{Endpoint: tc.Endpoint, Server: record.Server{Engine: tc.Engine}}
	fold := analyze.NewFold(setup, "")
	for i := range recs {
		fold.Add(&recs[i])
	}
	var got []string
	for _, w := range fold.Run().Warnings {
		switch w.Check {
		case "client_lag", "effective_concurrency", "drain_tail":
		default:
			got = append(got, w.Check)
		}
	}
	want := slices.Clone(tc.Warnings)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: warnings %v, want %v", client, got, want)
	}
}

// The real identity answers of testdata/wire, each served alone at its
// route (every other route 404), name the engine they show.
func TestWireCorpusDetect(t *testing.T) {
	t.Parallel()
	for _, tc := range wireManifest(t) {
		if tc.Route == "" {
			continue
		}
		t.Run(tc.File, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join(wireDir, tc.File))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.Route {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}))
			defer srv.Close()
			s, models, err := backend.Detect(t.Context(), srv.Client(), srv.URL, "")
			if tc.Known != "" {
				t.Skipf("known: %s (today: %q, %v)", tc.Known, s.Engine, err)
			}
			if err != nil || s.Engine != tc.Detect || len(models) == 0 {
				t.Errorf("detected %q with models %v (%v), want %q", s.Engine, models, err, tc.Detect)
			}
		})
	}
}

// checkToolCalls holds a replayed record's tool calls to the capture's:
// their names in order, each with an id and arguments that are JSON once
// joined, and tool-call tokens exactly where the capture made calls.
func checkToolCalls(t *testing.T, client string, i int, tc wireCase, rec *record.Record) {
	t.Helper()
	var names []string
	for _, c := range rec.ToolCalls {
		names = append(names, c.Name)
		if c.ID == "" || !json.Valid([]byte(c.Arguments)) {
			t.Errorf("%s, request %d: call %+v has no id or arguments that are not JSON", client, i, c)
		}
	}
	if !slices.Equal(names, tc.Tools) || (rec.ToolTokens > 0) != (len(tc.Tools) > 0) {
		t.Errorf("%s, request %d: tool calls %v (%d tokens), the capture's %v", client, i, names, rec.ToolTokens, tc.Tools)
	}
}
