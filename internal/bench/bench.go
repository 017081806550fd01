// Package bench runs tokperf's jobs and returns their results as models:
// Sweep (one stage per load level, --until-saturated), Overhead (the raw
// endpoint against the chat API, paired), Check (smoke and accuracy),
// Selftest (how far the client stays accurate) and Experiment (start each
// server configuration, check it, sweep it, stop it). Each is a typed call;
// the command line only turns flags into these configs and renders what
// comes back.
//
//	run, err := bench.Sweep(ctx, bench.SweepConfig{Command: "sweep", Load: bench.Load{Concurrency: []int{1, 4}}}, env)
//	report.Render(os.Stdout, "text", run)
package bench

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/netstat"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
)

// Version is tokperf's version, written into every result file.
var Version = "0.1.0"

// Env is what a job may touch beyond its config; tests replace the network.
type Env struct {
	// Progress receives human progress lines (stage starts and ends);
	// nil discards them.
	Progress io.Writer
	// Started, when set, is told the setup once the target is known and
	// before the first request (the command line prints what is measured).
	Started func(record.Setup)
	// Getenv reads the environment (nil: none).
	Getenv func(string) string
	// Listen opens the embedded simulator's listener (nil: TCP).
	Listen func(addr string) (net.Listener, error)
	// Dial replaces the client's dialer (nil: the system's).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Live shows each stage's progress on Progress while it runs: plain
	// lines every LiveEvery (0: 5 s), or a bar redrawn in place.
	Live      ProgressMode
	LiveEvery time.Duration
	// SliceDone, when set, is told each time slice of a sliced run once it
	// is written (tests read the client's memory there).
	SliceDone func(record.Slice)
	// Force lets a named result file (-o) that is already there be
	// replaced (--force); without it the run refuses to start.
	Force bool
	// SimStall, when set, runs after each step of the embedded simulator
	// (sim.Options.Stall): tests starve it with a sleep, as a busy machine
	// would, to hold the verdicts to their validity gates.
	SimStall func()
}

func (e *Env) force() bool { return e != nil && e.Force }

func (e *Env) simStall() func() {
	if e == nil {
		return nil
	}
	return e.SimStall
}

func (e *Env) sliceDone() func(record.Slice) {
	if e == nil {
		return nil
	}
	return e.SliceDone
}

func (e *Env) progress() io.Writer {
	if e == nil || e.Progress == nil {
		return io.Discard
	}
	return e.Progress
}

func (e *Env) started(s record.Setup) {
	if e != nil && e.Started != nil {
		e.Started(s)
	}
}

func (e *Env) getenv(k string) string {
	if e == nil || e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// simHost is the machine's kernel counters the embedded simulator
// reports: this machine's over real sockets (nil: the simulator's
// default); none on a network of the caller's own (in memory, in virtual
// time), whose packets no kernel carries and whose runs must not vary
// with what else the machine does.
func (e *Env) simHost() func() (netstat.Counters, bool) {
	if e == nil || e.Listen == nil {
		return nil
	}
	return func() (netstat.Counters, bool) { return netstat.Counters{}, false }
}

func (e *Env) listen(addr string) (net.Listener, error) {
	if e == nil || e.Listen == nil {
		return sim.Listen(addr)
	}
	return e.Listen(addr)
}

func (e *Env) dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if e == nil {
		return nil
	}
	return e.Dial
}

// ConfigError is a job's config that cannot work (a bad profile, an
// endpoint the engine lacks): the user's to fix, not the server's.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// Serve runs the simulated server with profile p on addr until ctx ends,
// its trace keeping the last traceLimit requests, counting prompts with
// tok when given; ready is told its URL once it listens.
func Serve(ctx context.Context, p *sim.Profile, addr string, traceLimit int, tok interface{ Count(string) int }, env *Env, ready func(url string)) error {
	ln, err := env.listen(addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	ready("http://" + ln.Addr().String())
	return sim.New(p, sim.Options{TraceLimit: traceLimit, Tokenizer: tok, Host: env.simHost()}).Serve(ctx, ln)
}

// Target is the server a job measures and how to speak to it.
type Target struct {
	URL string // base URL; empty: start the embedded simulator
	// SimProfile is the simulator's profile (name or YAML file) when URL is empty.
	SimProfile string
	// Virtual runs the stages on the embedded simulator's engine in
	// virtual time (no URL): no network, no client, no clock.
	Virtual  bool
	Endpoint string // generate, completions, chat, api-chat; empty: the engine's raw one
	Engine   string // overrides detection when set
	Model    string // empty: the first of /v1/models
	APIKey   string // empty: $OPENAI_API_KEY
	// CACert is a PEM bundle of the roots to trust for https://; Insecure
	// skips verification.
	CACert   string
	Insecure bool
	// WaitReady waits this long for a starting server (0: not at all).
	WaitReady   time.Duration
	CachePrompt bool // let llama.cpp reuse its prompt cache
	HTTP2       bool
	NetHTTP     bool // HTTP/1.1 through net/http instead of the lean client
	KeepText    bool // keep each output's text in its record
	UsageFinal  bool // OpenAI routes: the final usage only, no count per chunk
	// Tokenizer, when set, is the served model's: the embedded simulator
	// counts prompts with it, as a real server would.
	Tokenizer interface{ Count(string) int }
	GPUs      int // GPUs behind the server, for per-GPU figures
	GPUType   string
	// Hardware is the served model's stated size and precision, and
	// GPUHourUSD a GPU-hour's price (--model-params …, --gpu-hour-price).
	Hardware   *record.Hardware
	GPUHourUSD float64
	// Headers go on every request to the server (--header).
	Headers []Header
	// ExtraBody is merged into each generation request's body (--extra-body).
	ExtraBody []ExtraBody
	// GPUMetrics is an NVIDIA DCGM exporter's Prometheus endpoint to read
	// the server's GPUs from (a path starting with / is on the target),
	// instead of a local nvidia-smi.
	GPUMetrics string
	// CachePromptSet says the user chose CachePrompt (--cache-prompt);
	// otherwise conversations against llama.cpp turn it on, since they
	// exist to measure the cache.
	CachePromptSet bool
	// Proxy, when set, is an HTTP proxy every request goes through on
	// purpose (--proxy): its latency is then part of every figure.
	Proxy string
	// ResponseFormat is the structured output every request asks for
	// (--response-format); nil for none.
	ResponseFormat *record.ResponseFormat
}

// Header is an HTTP header the user asked for on every request.
type Header = backend.Header

// ExtraBody is a JSON object merged into request bodies.
type ExtraBody = record.ExtraBody

// headerTransport puts the user's headers on the session's own requests
// (detection, readiness, /metrics, /tokenize) as on the measured ones.
type headerTransport struct {
	base    http.RoundTripper
	headers []Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, h := range t.headers {
		if strings.EqualFold(h.Name, "Authorization") {
			r.Header.Del("Authorization")
		}
		r.Header.Add(h.Name, h.Value)
	}
	return t.base.RoundTrip(r)
}

// extraFor merges the extra bodies that apply to endpoint, later over
// earlier; nil when none does.
func extraFor(all []ExtraBody, endpoint string) (json.RawMessage, error) {
	var merged map[string]json.RawMessage
	for _, x := range all {
		if x.Endpoint != "" && x.Endpoint != endpoint {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(x.JSON, &fields); err != nil {
			return nil, configErr("--extra-body %s: %v", x.JSON, err)
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
		}
		maps.Copy(merged, fields)
	}
	if merged == nil {
		return nil, nil
	}
	return json.Marshal(merged)
}

// checkProxy refuses a target that the environment's proxy settings
// would send through a proxy: tokperf dials the server itself, and a
// proxy's own latency would read as the server's.
func checkProxy(target string, getenv func(string) string) error {
	u, err := url.Parse(target)
	if err != nil || target == "" {
		return nil
	}
	env := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	c := httpproxy.Config{HTTPProxy: env("HTTP_PROXY", "http_proxy"), HTTPSProxy: env("HTTPS_PROXY", "https_proxy"), NoProxy: env("NO_PROXY", "no_proxy")}
	p, err := c.ProxyFunc()(u)
	if err != nil || p == nil {
		return nil
	}
	// Not a usage error: the command line is right, the environment is
	// what stands in the way (exit 1).
	return fmt.Errorf("the environment's proxy (%s) applies to %s, and tokperf does not send through it unasked: "+
		"a proxy's latency would be measured as the server's; add %s to NO_PROXY or unset HTTP_PROXY/HTTPS_PROXY, "+
		"or give --proxy %s to measure through it on purpose", backend.Redact(p.String()), backend.Redact(target), u.Hostname(), backend.Redact(p.String()))
}

// Redact masks the credentials in a URL (user info, query values), for
// what tokperf prints or writes: backend.Redact, for the packages that do
// not speak HTTP.
func Redact(url string) string { return backend.Redact(url) }

// Session is a connection to the target: the embedded simulator started
// when there is no URL, the server detected, the setup so far.
type Session struct {
	Setup   record.Setup
	t       Target
	env     *Env
	base    string
	tls     *tls.Config
	client  *http.Client
	proxy   *url.URL // --proxy, or nil
	sim     *sim.Server
	cleanup []func()
	// readyBy ends --wait-ready's whole wait: readiness, detection and
	// the first generation together.
	readyBy time.Time
}

// Close stops what the session started.
func (s *Session) Close() {
	s.client.CloseIdleConnections()
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// Connect starts the embedded simulator if there is no URL, waits for a
// starting server if asked, detects the engine and picks model and
// endpoint. command names the job in the setup.
func Connect(ctx context.Context, command string, t Target, env *Env) (*Session, error) {
	s, err := newSession(command, t, env)
	if err != nil {
		return nil, err
	}
	t = s.t
	out := env.progress()
	if s.base == "" {
		if err := s.startSim(ctx); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Session, error) {
		s.Close()
		return nil, err
	}
	if t.WaitReady > 0 {
		s.readyBy = time.Now().Add(t.WaitReady)
		took, err := backend.WaitReady(ctx, s.client, s.base, t.APIKey, t.WaitReady)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "server answered /health and /v1/models after %.1f s\n", took.Seconds())
	}
	server, models, err := backend.Detect(ctx, s.client, s.base, t.APIKey)
	if err != nil {
		return fail(err)
	}
	if server.Doubt != "" && t.Engine == "" {
		fmt.Fprintf(out, "detection: %s\n", server.Doubt)
	}
	if t.Engine != "" && t.Engine != server.Engine {
		fmt.Fprintf(out, "--engine %s overrides the detected %q\n", t.Engine, server.Engine)
		server.Engine = t.Engine
	}
	s.Setup.Server = server
	if s.Setup.Model, err = s.model(ctx, models); err != nil {
		return fail(err)
	}
	s.Setup.Endpoint = t.Endpoint
	s.endpointWarnings(ctx, out)
	if s.Setup.Endpoint == "" {
		s.Setup.Endpoint = engine.DefaultEndpoint(server.Engine)
		if slices.Equal(server.Evidence, []string{backend.OwnedByEvidence}) {
			s.Setup.Endpoint = "completions" // only /v1/* is known to be there
		}
	}
	if t.GPUs > 0 {
		s.Setup.GPUs = t.GPUs
	}
	if t.GPUType != "" {
		s.Setup.GPU = t.GPUType
	}
	if t.Hardware != nil {
		s.Setup.Hardware = t.Hardware
	} else if s.Setup.Hardware == nil {
		s.Setup.Hardware = backend.ModelSize(ctx, s.client, s.base, t.APIKey, s.Setup.Model)
	}
	s.Setup.GPUHourUSD = t.GPUHourUSD
	return s, nil
}

// newSession is the session's client for t: its TLS, its proxy (--proxy,
// or a refusal of the environment's) and the user's headers.
func newSession(command string, t Target, env *Env) (*Session, error) {
	if t.APIKey == "" {
		t.APIKey = env.getenv("OPENAI_API_KEY")
	}
	tlsc, err := backend.TLSConfig(t.CACert, t.Insecure)
	if err != nil {
		return nil, &ConfigError{err}
	}
	if base, ok := backend.TrimV1(t.URL); ok {
		fmt.Fprintf(env.progress(), "--url %s ends in /v1, an OpenAI SDK's base URL: tokperf adds the /v1 routes itself, so the server's base is %s\n", backend.Redact(t.URL), backend.Redact(base))
		t.URL = base
	}
	s := &Session{t: t, env: env, base: t.URL, tls: tlsc, Setup: record.Setup{Command: command, URL: backend.Redact(t.URL)}}
	if t.Proxy != "" {
		if s.proxy, err = url.Parse(t.Proxy); err != nil || (s.proxy.Scheme != "http" && s.proxy.Scheme != "https") || s.proxy.Host == "" {
			return nil, configErr("--proxy %q is not an http(s) URL with a host", backend.Redact(t.Proxy))
		}
		s.Setup.Proxy = backend.Redact(t.Proxy)
	} else if err := checkProxy(t.URL, env.getenv); err != nil {
		return nil, err
	}
	s.client = backend.NewClient(8, env.dial())
	s.client.Transport.(*http.Transport).TLSClientConfig = tlsc
	if s.proxy != nil {
		s.client.Transport.(*http.Transport).Proxy = http.ProxyURL(s.proxy)
	}
	if len(t.Headers) > 0 {
		s.client.Transport = headerTransport{base: s.client.Transport, headers: t.Headers}
	}
	for _, h := range t.Headers {
		s.Setup.Headers = append(s.Setup.Headers, h.Name)
	}
	s.Setup.ExtraBody = t.ExtraBody
	s.Setup.ResponseFormat = t.ResponseFormat
	return s, nil
}

// startSim starts the embedded simulator with the target's profile, on
// loopback, until the session closes.
func (s *Session) startSim(ctx context.Context) error {
	p, err := sim.LoadProfile(s.t.SimProfile)
	if err != nil {
		return configErr("--sim-profile: %v", err)
	}
	ln, err := s.env.listen("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("starting the embedded simulator: %w", err)
	}
	s.sim = sim.New(p, sim.Options{NoTrace: true, Tokenizer: s.t.Tokenizer, Stall: s.env.simStall(), Host: s.env.simHost()})
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); s.sim.Serve(sctx, ln) }()
	s.cleanup = append(s.cleanup, func() { stop(); <-done })
	s.base = "http://" + ln.Addr().String()
	s.Setup.URL, s.Setup.Simulated, s.Setup.Profile, s.Setup.GPUs, s.Setup.GPU = s.base, true, p.Name, p.GPUs, p.GPU
	if h := p.Hardware; h != nil {
		// What the profile says it runs on, which its timing may belie.
		s.Setup.GPUs, s.Setup.GPU = cmp.Or(h.GPUs, p.GPUs), cmp.Or(h.GPU, p.GPU)
		s.Setup.Hardware = &record.Hardware{ParamsB: h.ParamsB, ActiveParamsB: h.ActiveParamsB, Precision: h.Precision, KVBytesPerToken: h.KVBytesPerToken, From: "the simulator's profile"}
	}
	fmt.Fprintf(s.env.progress(), "no --url: started the embedded simulator at %s (profile %s: %s); figures are simulated, not a real server's\n", s.base, p.Name, p.Description)
	return nil
}

// model is the model to measure: --model, or the first the server lists
// (the one Ollama has loaded, of those it has on disk).
func (s *Session) model(ctx context.Context, models []string) (string, error) {
	if s.t.Model != "" {
		return s.t.Model, nil
	}
	if len(models) == 0 {
		return "", fmt.Errorf("%s lists no model at /v1/models: give --model", s.Setup.URL)
	}
	e, _ := engine.Lookup(s.Setup.Server.Engine)
	if e.Loaded == "" || len(models) == 1 {
		return models[0], nil
	}
	// Ollama lists every model it has on disk: the one in memory is the
	// one to measure, a cold one would be measured loading.
	loaded, err := backend.Loaded(ctx, s.client, s.base, s.t.APIKey, e.Loaded)
	if err != nil || len(loaded) == 0 {
		return "", fmt.Errorf("%s at %s lists %d models and has none loaded (%s): give --model (a first request would load it, and be measured loading)", e.Name, s.Setup.URL, len(models), e.Loaded)
	}
	fmt.Fprintf(s.env.progress(), "model %s: the one %s has loaded (%s), of %d it lists; --model picks another\n", loaded[0], e.Name, e.Loaded, len(models))
	return loaded[0], nil
}

func engineOr(e string) string {
	if e == "" {
		return "unidentified"
	}
	return e
}

// endpointWarnings says what is known against the endpoint asked: an
// engine's own route on another engine, or a Responses or Messages
// route the server's OpenAPI document does not list (backend.Routes,
// recorded in the setup; a server that publishes none is not judged).
func (s *Session) endpointWarnings(ctx context.Context, out io.Writer) {
	ep, server := s.t.Endpoint, &s.Setup.Server
	if own := backend.EndpointEngine(ep); own != "" && own != server.Engine {
		fmt.Fprintf(out, "warning: --endpoint %s is %s's own route, and this server is %s: expect errors (--endpoint chat is the OpenAI chat API)\n", ep, own, engineOr(server.Engine))
	}
	if ep != "responses" && ep != "messages" {
		return
	}
	server.Routes = backend.Routes(ctx, s.client, s.base, s.t.APIKey)
	if server.Routes != nil && !slices.Contains(server.Routes, ep) {
		listed := strings.Join(server.Routes, ", ")
		if listed == "" {
			listed = "none of completions, chat, responses, messages"
		}
		fmt.Fprintf(out, "warning: --endpoint %s: the server's OpenAPI document does not list its route (it lists %s): expect 404s\n", ep, listed)
	}
}

// Backend makes a backend for an endpoint of the session's server, its
// pool sized for conns requests in flight; with WaitReady it also waits
// for a first 1-token generation to succeed.
func (s *Session) Backend(ctx context.Context, endpoint string, conns int) (*backend.Backend, error) {
	extra, err := extraFor(s.t.ExtraBody, endpoint)
	if err != nil {
		return nil, err
	}
	b, err := backend.New(backend.Config{URL: s.base, Endpoint: endpoint, Engine: s.Setup.Server.Engine, Model: s.Setup.Model,
		APIKey: s.t.APIKey, Conns: conns, Dial: s.env.dial(), TLS: s.tls, CachePrompt: s.t.CachePrompt, HTTP2: s.t.HTTP2, NetHTTP: s.t.NetHTTP, KeepText: s.t.KeepText, UsageFinal: s.t.UsageFinal,
		Headers: s.t.Headers, ExtraBody: extra, Proxy: s.proxy, Format: s.t.ResponseFormat})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if s.t.WaitReady > 0 {
		took, err := FirstGeneration(ctx, b, time.Until(s.readyBy))
		if err != nil {
			b.Close()
			return nil, err
		}
		fmt.Fprintf(s.env.progress(), "first 1-token generation on %s ok after %.1f s more\n", b.Route(), took.Seconds())
	}
	return b, nil
}

// FirstGeneration retries a 1-token request until one succeeds: the last
// step of waiting for a server, since one can answer /health before it
// generates.
func FirstGeneration(ctx context.Context, b *backend.Backend, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	// One deadline for every attempt: an attempt's own 30 s may not
	// outlast the wait (it overran it by up to 30 s).
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	clock := record.NewClock()
	last := "none finished"
	for {
		rec := record.New(-1)
		rctx, rcancel := context.WithTimeout(dctx, 30*time.Second)
		b.Do(rctx, clock, record.Request{Prompt: "ready?", MaxTokens: 1}, &rec)
		rcancel()
		if rec.OK() {
			return time.Since(start), nil
		}
		if rec.Error != "" && dctx.Err() == nil {
			last = rec.Error
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
			if err := ctx.Err(); err != nil {
				return time.Since(start), fmt.Errorf("waiting for a first generation: %w", err)
			}
			return time.Since(start), fmt.Errorf("no 1-token generation succeeded within %v (last: %s)", timeout.Round(time.Millisecond), last)
		}
	}
}

// create opens the result file (default under ./tokperf-results/) with a
// header for setup, on a clock the caller started. A default name is the
// second the run started, with -2, -3 … where another run of that second
// holds it; a named file already there is replaced only with force.
func create(out, command string, setup record.Setup, clock record.Clock, force bool, stdout ...io.Writer) (string, *results.Writer, error) {
	h := results.Header{
		Tool: "tokperf", Version: Version, Created: time.Now().UTC(), StartUnixNs: clock.Start().UnixNano(),
		Setup: setup, Machine: machine(),
	}
	if out == "-" {
		if len(stdout) == 0 || stdout[0] == nil {
			return "", nil, configErr("-o -: no standard output to write the results to")
		}
		w, err := results.NewWriter(stdout[0], "stdout", h)
		return out, w, err
	}
	if out == "" {
		return createUnique(filepath.Join("tokperf-results", time.Now().Format("20060102-150405")+"-"+command), h)
	}
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() && !force {
		return "", nil, configErr("-o %s: a file is there already; give --force to replace it, or another -o", out)
	}
	w, err := results.Create(out, h)
	return out, w, err
}

// createUnique creates base.jsonl, or base-N.jsonl with the first N free.
func createUnique(base string, h results.Header) (string, *results.Writer, error) {
	for n := 1; ; n++ {
		out := base + ".jsonl"
		if n > 1 {
			out = fmt.Sprintf("%s-%d.jsonl", base, n)
		}
		w, err := results.CreateNew(out, h)
		if errors.Is(err, fs.ErrExist) && n < 1000 {
			continue
		}
		return out, w, err
	}
}

// sink writes records to w and keeps its first error, which it says on
// warn at once (a full disk was told only at the run's end, hundreds of
// requests later). It is safe for concurrent use (a sliced stage writes
// its slices from a goroutine of its own).
type sink struct {
	w    *results.Writer
	warn io.Writer
	mu   sync.Mutex
	err  error
}

func (s *sink) write(rec record.Record) { s.keep(s.w.Write(rec)) }

func (s *sink) keep(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.err == nil {
		s.err = err
		if s.warn != nil {
			fmt.Fprintf(s.warn, "tokperf: %v: the run goes on, its summary whole, but its result file holds nothing from here on\n", err)
		}
	}
}

// close writes the end line; the first error of the file wins.
func (s *sink) close(interrupted bool) error {
	err := s.w.Close(interrupted)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return err
}

func machine() record.Machine {
	host, _ := os.Hostname()
	return record.Machine{Hostname: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}
