package backend

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
)

// Each engine of the table, as the simulator imitates it, is detected as
// itself, and its default endpoint (its native raw one where the table
// says it has one) serves a request whose tokens are those the simulator
// sent, on the route it served. A new engine is tested here without being
// added to a list; a failure names the place to fix.
func TestDetectEachEngine(t *testing.T) {
	t.Parallel()
	for _, e := range engine.Table() {
		t.Run(e.Name, func(t *testing.T) {
			if !sim.Imitates(e.Name) {
				t.Fatalf("the simulator cannot be %s: add internal/sim/%s.go registering its imitation", e.Name, e.Name)
			}
			p, _ := sim.LoadProfile("tiny")
			p.Engine = e.Name
			srv, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			s, models, err := Detect(t.Context(), NewClient(4, nil), url, "")
			if err != nil {
				t.Fatal(err)
			}
			if s.Engine != e.Name || len(models) != 1 || models[0] != "tiny" {
				t.Errorf("detected %q (evidence %v, %s) with models %v: internal/engine's probes for %s and internal/sim/%s.go's identity routes disagree", s.Engine, s.Evidence, s.Doubt, models, e.Name, e.Name)
			}
			ep := DefaultEndpoint(e.Name)
			if (ep == "generate") != e.Native {
				t.Errorf("default endpoint %s, and the table says native %v", ep, e.Native)
			}
			b, err := New(Config{URL: url, Endpoint: ep, Engine: e.Name, Model: "tiny"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rec := record.New(0)
			b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "a b c", MaxTokens: 5, IgnoreEOS: true}, &rec)
			tr := srv.Trace()
			if len(tr) != 1 {
				t.Fatalf("the simulator served %d requests, want 1 (%s %s)", len(tr), rec.Status, rec.Error)
			}
			sent := 0
			for _, c := range tr[0].Chunks {
				sent += c.Tokens
			}
			if !rec.OK() || tr[0].Route != b.Route() || rec.OutputTokens != sent || rec.ChunkTokens() != sent || len(rec.Chunks) != len(tr[0].Chunks) {
				t.Errorf("%s on %s: %s %s, %d tokens in %d chunks; the simulator sent %d in %d on %s", ep, b.Route(), rec.Status, rec.Error,
					rec.OutputTokens, len(rec.Chunks), sent, len(tr[0].Chunks), tr[0].Route)
			}
		})
	}
}

// A server that accepts connections and never answers cannot hang detection.
//
// Serial: it sets the package's ProbeTimeout, and times the detection.
func TestDetectSilentServer(t *testing.T) {
	ln := silentServer(t)
	old := ProbeTimeout
	ProbeTimeout = 300 * time.Millisecond
	defer func() { ProbeTimeout = old }()
	start := time.Now()
	_, _, err := Detect(t.Context(), NewClient(4, nil), "http://"+ln.Addr().String(), "")
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("error %v, want one saying the server did not answer", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("detection took %v with a 300 ms probe timeout", took)
	}
}

// Serial: real time: readiness within a window of the profile's 1.2 s load.
func TestWaitReady(t *testing.T) {
	p, _ := sim.LoadProfile("tiny")
	p.LoadS = 1.2
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	took, err := WaitReady(t.Context(), NewClient(2, nil), url, "", 10*time.Second)
	if err != nil || took < time.Second || took > 3*time.Second {
		t.Errorf("ready after %v, %v; the profile loads for 1.2 s", took, err)
	}
	if _, err := WaitReady(t.Context(), NewClient(2, nil), "http://127.0.0.1:1", "", 600*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not ready after") {
		t.Errorf("a dead URL: %v", err)
	}
}

// A server that closes a kept-alive connection when it is reused (as
// llama-server does): each failed request is retried once on a new
// connection and counted, and none is lost or served twice; after the
// first unkeptAfter such closes the habit is learned and every request
// dials a new connection, without a retry.
func TestRetryOnClosedKeepAlive(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	type connKey struct{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connKey{}).(*atomic.Int64).Add(1)
		if n > 1 { // a reused connection: drop it before any response byte
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, new(atomic.Int64))
	}
	srv.Start()
	defer srv.Close()
	b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1})
	clock := record.NewClock()
	retries, fresh := 0, 0
	for i := range 10 {
		rec := record.New(i)
		b.Do(t.Context(), clock, record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", i, rec.Status, rec.Error)
		}
		retries += rec.Retries
		if rec.NoKeepAlive {
			fresh++
		}
	}
	if served.Load() != 10 || retries != unkeptAfter || fresh != 10-1-unkeptAfter {
		t.Errorf("served %d, retries %d, %d dialled fresh: want 10 served, %d retried, then the rest dialled fresh", served.Load(), retries, fresh, unkeptAfter)
	}
}

// One SGLang-shaped answer is not SGLang: detection needs two of its
// identity routes, and otherwise takes an OpenAI-compatible server, saying
// why (it would have been sent to SGLang's /generate).
func TestDetectNeedsAgreeingEvidence(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/get_model_info":
			w.Write([]byte(`{"model_path": "m", "is_generation": true}`))
		case "/v1/models":
			w.Write([]byte(`{"data": [{"id": "m"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, _, err := Detect(t.Context(), NewClient(4, nil), srv.URL, "")
	if err != nil || s.Engine != "openai" || !strings.Contains(s.Doubt, "answers /get_model_info like sglang") || len(s.Evidence) != 1 {
		t.Errorf("%+v %v", s, err)
	}
}

// silentServer accepts connections on loopback and never answers; they
// are held open until the test ends.
func silentServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln
}

// Detection never carries the API key to another origin: a server whose
// routes redirect to another port gets nothing sent there, and the error
// says why; a redirect within the origin is still followed, key and all.
func TestDetectRedirectKeepsKeyHome(t *testing.T) {
	t.Parallel()
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	defer other.Close()
	var keyed atomic.Int64
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		case r.URL.Path == "/v1/models":
			http.Redirect(w, r, "/here/v1/models", http.StatusFound)
		case r.URL.Path == "/here/v1/models":
			if r.Header.Get("Authorization") == "Bearer s3cret" {
				keyed.Add(1)
			}
			w.Write([]byte(`{"data":[{"id":"m"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer home.Close()
	_, _, err := Detect(t.Context(), NewClient(4, nil), home.URL+"/away", "s3cret")
	if err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Errorf("a redirect to another port: err %v, want one naming the other origin", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d requests reached the other origin", n)
	}
	if _, models, err := Detect(t.Context(), NewClient(4, nil), home.URL, "s3cret"); err != nil || len(models) != 1 || keyed.Load() == 0 {
		t.Errorf("a redirect within the origin: models %v, err %v, keyed %d; want it followed with the key", models, err, keyed.Load())
	}
}
