// Package backend speaks the inference servers' wire protocols: it sends one
// record.Request, reads the stream, and fills a record.Record with the
// arrival of every token-carrying chunk and the token counts with their
// source (docs/METRICS.md §1).
//
//	b, _ := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: "m"})
//	rec := record.New(1)
//	b.Do(ctx, clock, req, &rec)
package backend

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// Config selects a server, a protocol and the client's transport.
type Config struct {
	URL string // base URL, e.g. http://127.0.0.1:30000
	// Endpoint is generate (the engine's native raw endpoint), completions
	// or chat (OpenAI), or api-chat (Ollama's native chat).
	Endpoint string
	// Engine picks the native protocol of generate (an engine of the
	// table with Native set) and its habits on the other routes.
	Engine string
	// CachePrompt lets llama.cpp reuse its prompt cache (off: TTFT is honest).
	CachePrompt bool
	Model       string
	APIKey      string
	// Conns is the expected number of concurrent requests (sizes the pool).
	Conns int
	// Dial replaces the network dialer (tests use in-memory pipes).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// KeepText keeps each request's output text in its record.
	KeepText bool
	// HTTP2 speaks HTTP/2: h2c to http:// URLs, negotiated over TLS to
	// https:// ones; many streams share few connections.
	HTTP2 bool
	// UsageFinal asks OpenAI routes for the final usage only, not a count
	// on every chunk (continuous_usage_stats): fewer bytes per request,
	// and tokens per chunk are then assumed one where the text does not
	// tell (flagged).
	UsageFinal bool
	// TLS configures https:// connections (a CA bundle, or no
	// verification); nil is the system's roots.
	TLS *tls.Config
	// NetHTTP sends HTTP/1.1 requests through Go's net/http instead of
	// tokperf's own client (slower: to compare the two, or for a server
	// the lean client does not read right).
	NetHTTP bool
	// Headers go on every generation request (--header); an
	// Authorization among them replaces the API key's.
	Headers []Header
	// ExtraBody is a JSON object whose fields are merged into every
	// request body, over the protocol's own (--extra-body).
	ExtraBody json.RawMessage
	// Format is the structured output each request asks for
	// (--response-format); nil asks for none.
	Format *record.ResponseFormat
	// Proxy, when set, is an HTTP proxy to send every request through
	// (net/http's client then carries them; the proxy's latency is in
	// every figure).
	Proxy *url.URL
}

// Header is one HTTP header the user asked for.
type Header struct{ Name, Value string }

// userAuth reports whether the user's headers carry their own Authorization.
func userAuth(hs []Header) bool {
	for _, h := range hs {
		if strings.EqualFold(h.Name, "Authorization") {
			return true
		}
	}
	return false
}

// mergeBody sets extra's fields on the JSON object body.
func mergeBody(body []byte, extra json.RawMessage) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	var more map[string]json.RawMessage
	if err := json.Unmarshal(extra, &more); err != nil {
		return nil, fmt.Errorf("--extra-body: %v", err)
	}
	for k, v := range more {
		fields[k] = v
	}
	return json.Marshal(fields)
}

// Backend sends requests in one protocol.
type Backend struct {
	cfg   Config
	t     transport
	url   string // the full URL of the generation route
	shown string // url with its password masked, for messages
	proto protocol
	// endsEarly is why a stream of this engine may end without a finish,
	// on a route that cannot tell from the text (endsEarly); "" otherwise.
	endsEarly string
}

// transport carries one request to the server and its response back: the
// lean HTTP/1.1 client for plain http:// URLs, net/http for TLS, HTTP/2
// and --net-http. Backend.Do holds the one request lifecycle over either.
type transport interface {
	// send writes body on a connection and reads the response head. It
	// stamps rec.Sent when the connection is in hand, just before the
	// request is written (the wait for it is the client's own queue),
	// sets rec.Connect for a new connection and rec.Retries for a re-send,
	// and points arrive at the connection's arrival stamps. An error
	// means no response came.
	send(ctx context.Context, clock record.Clock, body []byte, rec *record.Record, arrive *arrivals) (*reply, error)
	closeIdle()
	name() string // the client and protocol, for the setup
}

// reply is a response whose head has come.
type reply struct {
	code     int
	location string // a redirect's target
	ctype    string // Content-Type
	encoding string // Content-Encoding
	// retryAfter is the Retry-After header, as sent (seconds or an
	// HTTP-date); read on 429 and 503.
	retryAfter string
	body       io.Reader
	// finish releases the connection once the body is read: with reuse,
	// after a normal end, the little left of the body (the chunked
	// terminator) is read so the connection goes back to the pool;
	// otherwise it is cut off.
	finish func(reuse bool)
}

// natives are the engines' own raw generation protocols (--endpoint
// generate), by engine name; each protocol file registers its own, and
// the engine table says which engines have one (Engine.Native).
var natives = map[string]newProtocol{}

// newProtocol makes a protocol for one backend's configuration: an
// engine whose route carries the model (Triton's
// /v2/models/{model}/generate_stream) builds it from cfg.Model, and the
// OpenAI routes read their engine's habits from the table once here, not
// on every request.
type newProtocol func(cfg *Config) protocol

// endpoints are the other generation endpoints, by --endpoint name: the
// OpenAI routes, which any engine may serve, and an engine's own second
// route (Ollama's api-chat), each registered by its protocol's file with
// the engine it belongs to ("" for any).
var endpoints = map[string]endpoint{}

type endpoint struct {
	engine string
	proto  newProtocol
}

// protocol is one wire format: the route, how to build the body, the
// framing of the stream it answers with, and what each event of it means.
// Each implementation has a `var _ protocol = …` beside it.
type protocol interface {
	route() string
	body(cfg *Config, req *record.Request) ([]byte, error)
	// framing is how the stream is cut into events, and the Content-Types
	// it is accepted under.
	framing() framing
	// read fills s's record from its events (a loop over s.Next) and
	// reports whether the stream reached its finish; readStream sets the
	// final status from that. With s.text non-nil it also keeps the output
	// text.
	read(s *stream) bool
}

// endsEarly is a native protocol whose server may end a stream, without
// its final event, on purpose (Ollama's repeat limit): the protocol tells
// that from the text, and on the engine's other routes, whose text is not
// read, the record's error names it as the likely cause.
type endsEarly interface{ endsEarly() string }

// New makes a backend for cfg.Endpoint.
func New(cfg Config) (*Backend, error) {
	if err := checkFormat(cfg.Format, cfg.Endpoint); err != nil {
		return nil, err
	}
	p, why, err := pick(cfg)
	if err != nil {
		return nil, err
	}
	return newBackend(cfg, p, why)
}

// pick finds cfg's protocol in the registries, and why a stream of its
// engine may end early where that protocol cannot tell (endsEarly).
func pick(cfg Config) (p protocol, why string, err error) {
	own := false // the engine's own protocol, not one any server may speak
	if cfg.Endpoint == "generate" {
		native := natives[cfg.Engine]
		if native == nil {
			return nil, "", fmt.Errorf("the %s server has no native generate endpoint that tokperf speaks: use --endpoint completions (or --engine %s)", engineName(cfg.Engine), engine.NativeList())
		}
		p, own = native(&cfg), true
	} else {
		ep, ok := endpoints[cfg.Endpoint]
		if !ok {
			return nil, "", fmt.Errorf("unknown endpoint %q (want %s)", cfg.Endpoint, endpointList())
		}
		p, own = ep.proto(&cfg), ep.engine != "" && ep.engine == cfg.Engine
	}
	if native := natives[cfg.Engine]; native != nil && !own {
		if e, ok := native(&cfg).(endsEarly); ok {
			why = e.endsEarly()
		}
	}
	return p, why, nil
}

// newBackend makes a backend speaking p to cfg's server.
func newBackend(cfg Config, p protocol, endsEarly string) (*Backend, error) {
	u, err := routeURL(cfg.URL, p.route())
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, url: u.String(), shown: Redact(u.String()), proto: p, endsEarly: endsEarly}
	apiKey := cfg.APIKey
	if userAuth(cfg.Headers) {
		apiKey = ""
	}
	if !cfg.HTTP2 && !cfg.NetHTTP && cfg.Proxy == nil && u.Scheme == "http" {
		h1 := newH1Client(u, cfg.Conns, cfg.Dial)
		for _, h := range cfg.Headers {
			h1.headers = append(h1.headers, "\r\n"+h.Name+": "+h.Value...)
		}
		if userAuth(cfg.Headers) {
			h1.basic = ""
		}
		b.t = &leanTransport{h1: h1, shown: b.shown, apiKey: apiKey}
		return b, nil
	}
	client := NewClient(cfg.Conns, cfg.Dial)
	client.Transport.(*http.Transport).TLSClientConfig = cfg.TLS
	if cfg.Proxy != nil {
		client.Transport.(*http.Transport).Proxy = http.ProxyURL(cfg.Proxy)
	}
	switch {
	case cfg.HTTP2 && u.Scheme == "http":
		client = NewH2Client(cfg.Dial)
	case cfg.HTTP2:
		client.Transport.(*http.Transport).ForceAttemptHTTP2 = true // negotiated by TLS ALPN
	}
	// Redirects are reported, not followed (see response).
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	b.t = &netTransport{client: client, url: b.url, apiKey: apiKey, headers: cfg.Headers, h2c: cfg.HTTP2 && u.Scheme == "http", h2: cfg.HTTP2}
	return b, nil
}

// Under is route under the base URL's path, its query kept
// (http://h/m?key=S and /metrics: http://h/m/metrics?key=S), for every URL
// derived from the target's: /metrics, the clock probe, a DCGM path. A
// base that does not parse gets route appended, for the request to fail
// naming it.
func Under(base, route string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + route
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	u.RawPath = ""
	return u.String()
}

// routeURL puts route under the base URL's path, keeping its query.
func routeURL(base, route string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %v", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("URL %q: want http://host[:port][/path] or https://…", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	u.RawPath = ""
	return u, nil
}

// EndpointEngine is the engine whose own route an endpoint is (Ollama's
// api-chat), "" for one any server may serve or an unknown one.
func EndpointEngine(name string) string { return endpoints[name].engine }

// endpointList names the endpoints for messages: "generate, api-chat, chat or completions".
func endpointList() string {
	names := []string{"generate"}
	for name := range endpoints {
		names = append(names, name)
	}
	slices.Sort(names[1:])
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func engineName(e string) string {
	if e == "" {
		return "unidentified"
	}
	return e
}

// Client names the HTTP client and protocol the requests use, for the
// result file's setup.
func (b *Backend) Client() string { return b.t.name() }

// Negotiated is the TLS an https:// target negotiates with this backend's
// transport: one HEAD request on the generation route, through the same
// client the requests use, reports the version, ALPN and HTTP version.
// Its connection is closed after it: a server may hold a response open
// after it is complete, and a request sent behind it would wait for that.
// Nil, with nothing sent, for http:// targets.
func (b *Backend) Negotiated(ctx context.Context) (*record.TLS, error) {
	t, ok := b.t.(*netTransport)
	if !ok || t.h2c || !strings.HasPrefix(t.url, "https://") {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, t.url, nil)
	if err != nil {
		return nil, err
	}
	req.Close = true
	if t.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, redactErr(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	resp.Body.Close()
	if resp.TLS == nil {
		return nil, nil
	}
	return &record.TLS{Version: tls.VersionName(resp.TLS.Version), ALPN: resp.TLS.NegotiatedProtocol, Proto: resp.Proto, Cipher: tls.CipherSuiteName(resp.TLS.CipherSuite)}, nil
}

// Route is the generation route's path.
func (b *Backend) Route() string { return b.proto.route() }

// Close releases idle connections.
func (b *Backend) Close() { b.t.closeIdle() }

// Retransmits are the TCP segments the client's own connections sent
// again so far, read from each connection's TCP_INFO as its request ended;
// false where none could be read (net/http's connections, not Linux).
func (b *Backend) Retransmits() (int64, bool) {
	t, ok := b.t.(*leanTransport)
	if !ok || !t.h1.tcpInfo.Load() {
		return 0, false
	}
	return t.h1.retrans.Load(), true
}

// Do sends req and fills rec; it never returns an error: failures are the
// record's status.
func (b *Backend) Do(ctx context.Context, clock record.Clock, req record.Request, rec *record.Record) {
	body, err := b.proto.body(&b.cfg, &req)
	if err == nil && b.cfg.ExtraBody != nil {
		body, err = mergeBody(body, b.cfg.ExtraBody)
	}
	if err != nil {
		rec.Sent, rec.Done = clock.Now(), clock.Now()
		rec.Status, rec.Error = record.StatusHTTPError, err.Error()
		return
	}
	arrive := &arrivals{clock: clock}
	resp, err := b.t.send(ctx, clock, body, rec, arrive)
	if err != nil {
		rec.Done = clock.Now()
		fail(ctx, rec, err)
		return
	}
	b.response(resp, clock, arrive, &req, rec)
	// After a normal end only the chunked body's terminator follows (an
	// error's body is short): it is read, within drainBytes and drainTime,
	// so the connection goes back to the pool. A failed stream is cut off.
	resp.finish(rec.Status == record.StatusOK || rec.Status == record.StatusHTTPError)
	if b.endsEarly != "" && rec.Status == record.StatusIncomplete {
		rec.Error += " (" + b.endsEarly + ")"
	}
	if err := ctx.Err(); err != nil && rec.Status != record.StatusOK {
		fail(ctx, rec, err)
	}
}

// response reads a response whose head has come: the message of a failed
// one, else the stream into rec.
func (b *Backend) response(resp *reply, clock record.Clock, arrive *arrivals, req *record.Request, rec *record.Record) {
	code, location, ctype, body := resp.code, resp.location, resp.ctype, resp.body
	rec.FirstByte = arrive.Now()
	if f := b.proto.framing(); code/100 == 2 && !f.accepts(ctype) {
		// A page from a proxy or a whole JSON answer is not a stream: read
		// as one it would end "incomplete", which hides what happened. One
		// read shows how it starts (a server holding it open cannot hold
		// the request: the connection is closed after this).
		msg := make([]byte, 200)
		n, _ := body.Read(msg)
		msg = msg[:n]
		rec.Done = clock.Now()
		rec.Status, rec.HTTPCode = record.StatusBadContentType, code
		rec.Error = fmt.Sprintf("HTTP %d with Content-Type %q, not a stream (want %s): %s", code, ctype, f.name, strings.TrimSpace(string(msg)))
		return
	}
	if e := resp.encoding; code/100 == 2 && e != "" && !strings.EqualFold(e, "identity") {
		// tokperf asks for no compression; a compressed stream would read
		// as malformed chunks, hiding why.
		rec.Done = clock.Now()
		rec.Status, rec.HTTPCode = record.StatusStreamError, code
		rec.Error = fmt.Sprintf("the stream is compressed (Content-Encoding: %.40s) though none was asked for: turn compression off for it at the server or the proxy in front of it (compressed, its chunks arrive late and in batches)", e)
		return
	}
	if code/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		rec.Done = clock.Now()
		rec.Status, rec.HTTPCode = record.StatusHTTPError, code
		rec.Error = fmt.Sprintf("HTTP %d: %s", code, strings.TrimSpace(string(msg)))
		if code == 429 || code == 503 {
			rec.RetryAfter = RetryAfter(resp.retryAfter, time.Now())
		}
		if code/100 == 3 && location != "" {
			// A redirect is not followed: the detour would be inside TTFT.
			rec.Error = fmt.Sprintf("HTTP %d: the server redirects to %.200s; tokperf does not follow redirects: use that URL", code, location)
		}
		return
	}
	rec.HTTPCode = code
	// The protocol stamps Done at the arrival of the stream's final event
	// ([DONE], or the engine's last object) and stops reading there; what
	// a server sends after it is not the request's time.
	rec.Done = record.Unset
	if rec.Chunks == nil {
		// One chunk per token at most, plus one: no regrowth on the hot path.
		rec.Chunks = make([]record.Chunk, 0, min(req.MaxTokens+1, 4096))
	}
	s := &stream{clock: arrive, rec: rec, body: readStamper{r: body, a: arrive}, max: req.MaxTokens}
	s.body.rc, _ = body.(readCounter)
	if b.cfg.KeepText {
		var text strings.Builder
		s.text = &text
		s.read(b.proto, &s.body)
		rec.Text = text.String()
	} else {
		s.read(b.proto, &s.body)
	}
	if rec.Done == record.Unset {
		rec.Done = clock.Now() // the stream ended or failed before a final event
	}
}

// MaxRetryAfter caps the wait a server's Retry-After can ask for: a
// benchmark that sleeps an hour because a proxy said so measures nothing.
const MaxRetryAfter = 60 * time.Second

// RetryAfter is the wait a Retry-After header asks for at now: a number of
// seconds, or an HTTP-date (RFC 9110 §10.2.3), capped at MaxRetryAfter; 0
// when absent, malformed or in the past.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) { // NaN, negative, zero
			return 0
		}
		d = time.Duration(min(s, MaxRetryAfter.Seconds()) * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(min(d, MaxRetryAfter), 0)
}

// fail sets the status for an error that ended a request.
func fail(ctx context.Context, rec *record.Record, err error) {
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.Is(context.Cause(ctx), record.ErrTimeout):
		rec.Status, rec.Error = record.StatusTimeout, record.ErrTimeout.Error()
	case ctx.Err() != nil:
		rec.Status, rec.Error = record.StatusCancelled, "cancelled"
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns):
		rec.Status, rec.Error = record.StatusConnectError, err.Error()
	default:
		rec.Status, rec.Error = record.StatusStreamError, err.Error()
	}
}

// finish sets the final status of a stream that was read to its end.
func finish(rec *record.Record, sawFinish bool, readErr error) {
	switch {
	case rec.Status != "":
	case readErr != nil:
		rec.Status, rec.Error = record.StatusStreamError, readErr.Error()
	case !sawFinish:
		rec.Status, rec.Error = record.StatusIncomplete, "stream ended before the finish"
	default:
		rec.Status = record.StatusOK
	}
}
