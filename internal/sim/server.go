package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/tokperf/tokperf/internal/netstat"
	"sync/atomic"
	"time"
)

// Options tune a Server beyond its profile.
type Options struct {
	// NoTrace keeps no ground truth (for measuring the simulator's own speed).
	NoTrace bool
	// TraceLimit is how many finished requests the trace keeps, the most
	// recent ones (default DefaultTraceLimit); older ones are dropped and
	// counted (TraceDropped), so memory stays flat however long it runs.
	TraceLimit int
	// TraceChunks bounds the chunks the kept requests hold, all together
	// (default DefaultTraceChunks): the oldest requests are dropped first.
	TraceChunks int
	// Tokenizer, when set, counts prompt tokens as the served model's
	// tokenizer does (as a real server's usage.prompt_tokens); without one
	// a prompt's tokens are its words. One that also has Encode(string)
	// []int and Decode([]int) string (a tokenizer.Tokenizer) gives the
	// prefix cache's tokens and /tokenize's ids too; one that only counts
	// leaves them words.
	Tokenizer interface{ Count(text string) int }
	// TraceWire keeps in each trace entry the request's own headers and
	// its body's fields other than the prompt (to check that a client
	// sends what it was asked to); off, the trace stays small.
	TraceWire bool
	// Stall, when set, runs after each engine step's timer fires, before
	// the step is timed: a test starves the simulator with it as a busy
	// machine would (its steps then run late and /metrics says so).
	Stall func()
	// Host reads the machine's kernel counters /metrics exports (nil:
	// this machine's, netstat.Read); a test fixes them.
	Host func() (netstat.Counters, bool)
}

// Server is the simulated inference server: the engine plus every route.
type Server struct {
	p     *Profile
	im    imitation // of p.Engine
	eng   *Engine
	start time.Time
	mux   *http.ServeMux
	open  atomic.Int64
	ids   atomic.Uint64
	trace *tracer
	hist  *histograms
	rngMu sync.Mutex
	rng   *rand.Rand
	// count counts a prompt's tokens (Options.Tokenizer, or words).
	count    func(string) int
	enc      encoder  // Options.Tokenizer when it encodes, or nil
	tokens   tokenIDs // the ids of /tokenize
	outWords []string // output words with a tokenizer (nil: vocab)
	// died is closed when die_after strikes; Serve then drops everything.
	died   chan struct{}
	dieOne sync.Once
	// traceWire is Options.TraceWire.
	traceWire bool
	// host is Options.Host, or netstat.Read.
	host func() (netstat.Counters, bool)
}

// ErrCrashed is returned by Serve when the profile's die_after struck.
var ErrCrashed = errors.New("simulated crash (die_after)")

// New makes a server for a profile. Run its engine with Run (Serve does).
func New(p *Profile, opt Options) *Server {
	s := &Server{
		p:     p,
		eng:   NewEngine(p),
		start: time.Now(),
		mux:   http.NewServeMux(),
		hist:  newHistograms(),
		rng:   rand.New(rand.NewPCG(uint64(p.Seed), 0xfa17)),
		died:  make(chan struct{}),
		count: countTokens,
		im:    imitations[p.Engine],
	}
	s.eng.stall = opt.Stall
	s.host = opt.Host
	if s.host == nil {
		s.host = netstat.Read
	}
	if opt.Tokenizer != nil {
		s.count = opt.Tokenizer.Count
		// Output is drawn from words the tokenizer keeps whole, so the text
		// sent counts, by the client's same tokenizer, as the tokens reported.
		s.outWords = oneTokenWords(opt.Tokenizer.Count)
		s.enc, _ = opt.Tokenizer.(encoder)
	}
	if !opt.NoTrace {
		s.trace = newTracer(opt.TraceLimit, opt.TraceChunks)
		s.traceWire = opt.TraceWire
	}
	s.routes()
	return s
}

// Profile is the server's profile.
func (s *Server) Profile() *Profile { return s.p }

// Engine is the server's scheduler.
func (s *Server) Engine() *Engine { return s.eng }

// Handler serves every route.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.stamp) }

type arrivedKey struct{}

// stamp notes when a request reached the server, before its body is read,
// so the ground truth's TTFT starts where the server's own view does.
//
// The body is read here, whole, within bodyTimeout and maxBody: a client
// that sends it slowly or without end holds a connection (a descriptor)
// and memory for that long and no longer.
func (s *Server) stamp(w http.ResponseWriter, r *http.Request) {
	ctx := context.WithValue(r.Context(), arrivedKey{}, time.Now())
	if r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody()))
		if err == nil {
			// Cleared once read: a deadline left on the connection would
			// end the stream when it passed. Left on a failed read, it
			// ends the connection rather than a wait for the rest.
			rc.SetReadDeadline(time.Time{})
		}
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			openAIError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes: no prompt within the %d-token context needs more", tooBig.Limit, s.p.ContextLength))
			return
		case err != nil:
			openAIError(w, 400, fmt.Sprintf("reading the request body (within %v): %v", bodyTimeout, err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if s.traceWire {
			ctx = context.WithValue(ctx, bodyKey{}, body)
		}
	}
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// bodyTimeout bounds the reading of a request's body.
const bodyTimeout = 30 * time.Second

// maxBody bounds a request's body by what the longest prompt of the
// context could take (32 bytes a token covers escaped text and token id
// lists) plus 1 MiB for the rest, and by 64 MiB.
func (s *Server) maxBody() int64 {
	return min(64<<20, 1<<20+32*int64(max(s.p.ContextLength, 0)))
}

type bodyKey struct{}

// ownHeaders are the headers every client sends; the trace keeps the others.
var ownHeaders = map[string]bool{"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true, "Accept-Encoding": true,
	"User-Agent": true, "X-Request-Id": true, "Connection": true}

// wire is what Options.TraceWire keeps of a request: its other headers
// (an Authorization only as "(set)") and its body's fields but the prompt.
func wire(r *http.Request) (map[string]string, map[string]json.RawMessage) {
	hs := map[string]string{}
	for name, vs := range r.Header {
		if ownHeaders[name] {
			continue
		}
		v := strings.Join(vs, ", ")
		if name == "Authorization" {
			v = "(set)"
		}
		hs[name] = v
	}
	var fields map[string]json.RawMessage
	if body, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		_ = json.Unmarshal(body, &fields)
		for _, k := range []string{"prompt", "messages", "text", "inputs"} {
			delete(fields, k)
		}
	}
	return hs, fields
}

func arrivedAt(r *http.Request) time.Time {
	if t, ok := r.Context().Value(arrivedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// Run runs the engine until ctx is done.
func (s *Server) Run(ctx context.Context) { s.eng.Run(ctx) }

// Trace returns the ground truth of the finished requests, oldest first.
func (s *Server) Trace() []TraceRequest {
	if s.trace == nil {
		return nil
	}
	reqs, _ := s.trace.finished()
	return reqs
}

// TraceDropped is how many finished requests the trace dropped to stay
// within Options.TraceLimit since it started or was reset.
func (s *Server) TraceDropped() int64 {
	if s.trace == nil {
		return 0
	}
	return s.trace.droppedCount()
}

// Lateness is how far the engine fell behind its schedule so far; a run
// measured while Late grew measured a starved simulator.
func (s *Server) Lateness() Lateness { return s.eng.Lateness() }

// ResetTrace forgets the finished requests.
func (s *Server) ResetTrace() {
	if s.trace != nil {
		s.trace.reset()
	}
}

// Serve runs the engine and serves HTTP/1.1 and cleartext HTTP/2 on ln until
// ctx is done, then closes every connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: s.Handler(), Protocols: protocols, ReadHeaderTimeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.eng.Run(ctx) }()
	crashed := false
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-s.died:
			crashed = true
		}
		hs.Close()
	}()
	err := hs.Serve(ln)
	cancel()
	wg.Wait()
	if crashed {
		return ErrCrashed
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Listen listens on addr (host:port, port 0 for any) for the simulator,
// with no TCP keep-alive probes on the connections it accepts (as most
// inference servers): thousands of streams connected together and queued
// together would be probed in one burst per round, which on loopback
// overflows the kernel's input queue (net.core.netdev_max_backlog) until
// every one is cut as dead. A client that goes away is seen at the next
// write to it.
func Listen(addr string) (net.Listener, error) {
	return (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", addr)
}

// Start listens on addr (host:port, port 0 for any) and serves in the
// background. The returned stop function ends the server and waits for it.
func Start(ctx context.Context, p *Profile, addr string, opt Options) (srv *Server, url string, stop func(), err error) {
	ln, err := Listen(addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: listening on %s: %w", addr, err)
	}
	srv = New(p, opt)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ctx, ln)
	}()
	return srv, "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

func (s *Server) loading() bool {
	return time.Since(s.start) < time.Duration(s.p.LoadS*float64(time.Second))
}

func (s *Server) fresh() uint64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Uint64()
}

func (s *Server) chance(rate float64) bool {
	if rate <= 0 {
		return false
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < rate
}

func (s *Server) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

func openAIError(w http.ResponseWriter, code int, msg string) {
	typ := map[int]string{400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError"}[code]
	writeJSON(w, code, map[string]any{"object": "error", "error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /health", s.health)
	m.HandleFunc("GET /v1/models", s.models)
	m.HandleFunc("POST /v1/completions", s.openAICompletions)
	m.HandleFunc("POST /v1/chat/completions", s.openAIChat)
	m.HandleFunc("POST /v1/responses", s.responses)
	m.HandleFunc("POST /v1/messages", s.messages)
	m.HandleFunc("GET /metrics", s.metrics)
	m.HandleFunc("GET /dcgm/metrics", s.dcgm)
	m.HandleFunc("GET /sim/trace", s.traceRoute)
	m.HandleFunc("DELETE /sim/trace", func(w http.ResponseWriter, r *http.Request) { s.ResetTrace(); w.WriteHeader(http.StatusNoContent) })
	// Every imitation's generation routes, whichever engine this is; then
	// the routes only the profile's engine has (imitate.go).
	for _, name := range Engines() {
		if serve := imitations[name].serve; serve != nil {
			serve(s, m)
		}
	}
	if s.im.own != nil {
		s.im.own(s, m)
	}
}

func (s *Server) version(def string) string {
	if s.p.Version != "" {
		return s.p.Version
	}
	return def
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.loading() {
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}})
		return
	}
	writeJSON(w, 200, map[string]any{"status": "ok"})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.loading() {
		openAIError(w, 503, "Loading model")
		return
	}
	m := map[string]any{"id": s.p.Model, "object": "model", "created": s.start.Unix(), "owned_by": s.p.Engine, "max_model_len": s.p.ContextLength}
	if h := s.p.Hardware; h != nil && s.im.modelMeta {
		m["meta"] = map[string]any{"n_params": h.ParamsB * 1e9, "size": h.ParamsB * 1e9 * h.weightBytes()}
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": []any{m}})
}

func (s *Server) traceRoute(w http.ResponseWriter, r *http.Request) {
	l := s.Lateness()
	var reqs []TraceRequest
	var dropped int64
	limit, chunkLimit := 0, 0
	if s.trace != nil {
		reqs, dropped = s.trace.finished()
		limit, chunkLimit = s.trace.limit, s.trace.chunkLimit
	}
	writeJSON(w, 200, map[string]any{"profile": s.p.Name, "requests": reqs, "dropped": dropped, "limit": limit, "chunk_limit": chunkLimit, "lateness": map[string]any{
		"steps": l.Steps, "late_steps": l.Late, "lateness_total_s": l.Total.Seconds(), "lateness_max_s": l.Worst.Seconds(),
	}})
}
