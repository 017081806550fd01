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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/infile"
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

// TLSConfig is the TLS of https:// targets: caFile, when given, a PEM
// bundle of the roots to trust instead of the system's; insecure skips
// verification (a self-signed test server).
func TLSConfig(caFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && !insecure {
		return nil, nil
	}
	c := &tls.Config{InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := infile.ReadAll(context.Background(), caFile, infile.Small)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in it", caFile)
		}
	}
	return c, nil
}

// NewClient is an HTTP client fit for measuring: no proxy, no compression,
// a pool as large as the concurrency, and no overall timeout (which would
// cut streams; deadlines are per request, through the context).
func NewClient(conns int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if conns < 1 {
		conns = 1
	}
	t := &http.Transport{
		Proxy:                 nil,
		DisableCompression:    true,
		MaxIdleConns:          conns + 16,
		MaxIdleConnsPerHost:   conns + 16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0,
		ForceAttemptHTTP2:     false,
		// A request's headers fit in 1 KB and a long body bypasses the
		// buffer; a response's chunk headers and SSE events are read
		// through 1 KB (longer events bypass it too). Thousands of
		// streams with 4 KB buffers each would not fit 60 MB.
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  1 << 10,
	}
	if dial == nil {
		dial = Dial
	}
	// One stream per connection: each can carry the kernel's arrival time
	// of what it reads.
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return withStamps(c), nil
	}
	return &http.Client{Transport: t, CheckRedirect: SameOrigin}
}

// SameOrigin follows a redirect only within the origin (scheme, host and
// port) of the first request: the API key and the user's headers, which
// every request carries, are never sent to another host or port.
// Detection and readiness probes use it; generation follows none.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from := via[0].URL
	if origin(req.URL) != origin(from) {
		return fmt.Errorf("redirects to another origin (%s): not followed, so that the API key and --header values are never sent there; give that URL as --url if it is the server", Redact(req.URL.String()))
	}
	return nil
}

// origin is scheme://host:port with the scheme's default port filled in.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// NewH2Client speaks cleartext HTTP/2 with prior knowledge (h2c), as
// servers on http:// URLs that offer HTTP/2 expect: many streams share a
// few connections.
func NewH2Client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if dial == nil {
		dial = Dial
	}
	// HTTP/2 with prior knowledge over plain TCP (h2c), as net/http
	// speaks it since Go 1.24: no TLS, no upgrade.
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	return &http.Client{CheckRedirect: SameOrigin, Transport: &http.Transport{
		Protocols:          &h2c,
		DisableCompression: true,
		DialContext:        dial,
		ForceAttemptHTTP2:  true,
	}}
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

// netTransport sends requests through net/http.
type netTransport struct {
	client  *http.Client
	url     string
	apiKey  string
	headers []Header
	h2c, h2 bool
}

func (t *netTransport) name() string {
	switch {
	case t.h2c:
		return "h2c (net/http)"
	case t.h2:
		return "h2 or http/1.1 by TLS ALPN (net/http)"
	}
	return "http/1.1 (net/http)"
}

func (t *netTransport) closeIdle() { t.client.CloseIdleConnections() }

func (t *netTransport) send(ctx context.Context, clock record.Clock, body []byte, rec *record.Record, arrive *arrivals) (*reply, error) {
	// Cancelling rctx cuts the response off: it bounds the drain after
	// the final event.
	rctx, cancel := context.WithCancel(ctx)
	for attempt := 0; ; attempt++ {
		hr, err := http.NewRequestWithContext(rctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "text/event-stream")
		hr.Header.Set("X-Request-Id", "tokperf-"+strconv.Itoa(rec.ID))
		if t.apiKey != "" {
			hr.Header.Set("Authorization", "Bearer "+t.apiKey)
		}
		for _, h := range t.headers {
			hr.Header.Add(h.Name, h.Value)
		}
		rec.Sent = clock.Now()
		arrive.conn = nil
		// A dial runs on a goroutine of its own and may finish after this
		// request took another connection, so its times are atomics and
		// only a new connection's are kept, when it is in hand.
		var dialStart, dialTime atomic.Int64
		hr = hr.WithContext(httptrace.WithClientTrace(hr.Context(), &httptrace.ClientTrace{
			ConnectStart: func(string, string) { dialStart.Store(int64(clock.Now())) },
			ConnectDone: func(string, string, error) {
				if t := dialStart.Load(); t > 0 {
					dialTime.Store(int64(clock.Now()) - t)
				}
			},
			GotConn: func(info httptrace.GotConnInfo) {
				rec.Sent = clock.Now()
				if !info.Reused {
					rec.Connect = time.Duration(dialTime.Load())
				}
				if sc, ok := info.Conn.(*stampConn); ok {
					arrive.conn = sc
				}
			},
		}))
		resp, err := t.client.Do(hr)
		if err == nil {
			return &reply{code: resp.StatusCode, location: resp.Header.Get("Location"), ctype: resp.Header.Get("Content-Type"), encoding: resp.Header.Get("Content-Encoding"), retryAfter: resp.Header.Get("Retry-After"), body: resp.Body, finish: func(reuse bool) {
				if reuse {
					t := time.AfterFunc(drainTime, cancel)
					io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
					t.Stop()
				}
				resp.Body.Close()
				cancel()
			}}, nil
		}
		// A connection that failed before any response byte is safe to
		// retry once on a new one (servers close idle keep-alives); the
		// retry is counted, never hidden.
		if attempt == 0 && ctx.Err() == nil && retryable(err) {
			rec.Retries++
			continue
		}
		cancel()
		return nil, redactErr(err)
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

// What is read of a response after its final event, so that a
// connection can go back to the pool (the chunked terminator): a server
// that sends more, or holds the response open, has its connection closed
// instead of holding the request's slot.
const (
	drainBytes = 4 << 10
	drainTime  = 50 * time.Millisecond
)

// leanTransport sends requests through tokperf's own HTTP/1.1 client.
type leanTransport struct {
	h1     *h1Client
	shown  string
	apiKey string
}

func (t *leanTransport) name() string { return "http/1.1 (tokperf)" }

func (t *leanTransport) closeIdle() { t.h1.closeIdle() }

func (t *leanTransport) send(ctx context.Context, clock record.Clock, body []byte, rec *record.Record, arrive *arrivals) (*reply, error) {
	wire := t.h1.request(body, rec.ID, t.apiKey)
	// A server learned to close every connection after a response gets a
	// new connection for every request, said in the record.
	rec.NoKeepAlive = t.h1.unkept.Load()
	var failed time.Duration // when the attempt on a closed kept connection began
	for attempt := 0; ; attempt++ {
		rec.Sent = clock.Now()
		c, dialed, err := t.h1.get(ctx, attempt > 0 || rec.NoKeepAlive)
		if err != nil {
			return nil, fmt.Errorf("POST %s: %w", t.shown, err)
		}
		rec.Sent = clock.Now()
		if dialed > 0 {
			rec.Connect = dialed
			if attempt > 0 {
				// Finding the kept connection closed is part of getting a
				// connection: in connect time, not the client's wait.
				rec.Connect = rec.Sent - failed
			}
		}
		arrive.conn = c
		// A cancelled request is cut off by a deadline in the past: every
		// read or write on the connection returns at once.
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		in := c.in
		_, werr := c.nc.Write(wire)
		// The head is read even after a failed write: a server may answer
		// early (413) and close before taking the whole request.
		h, err := c.head()
		if err != nil && werr != nil {
			err = werr
		}
		if err != nil {
			stop()
			t.h1.noteRetrans(c)
			c.nc.Close()
			// A kept-alive connection the server closed fails before any
			// response byte: safe to retry once on a new one (servers close
			// idle keep-alives); the retry is counted, never hidden.
			if attempt == 0 && dialed == 0 && c.in == in && ctx.Err() == nil {
				rec.Retries++
				failed = rec.Sent
				t.h1.closedOnReuse()
				continue
			}
			return nil, fmt.Errorf("POST %s: %w", t.shown, err)
		}
		if dialed == 0 {
			t.h1.reused.Add(1) // a kept connection served a response
		}
		rb := newH1Body(c, h)
		return &reply{code: h.code, location: h.location, ctype: h.ctype, encoding: h.encoding, retryAfter: h.retryAfter, body: rb, finish: func(reuse bool) {
			if reuse {
				c.nc.SetReadDeadline(time.Now().Add(drainTime))
				io.Copy(io.Discard, io.LimitReader(rb, drainBytes))
			}
			t.h1.noteRetrans(c)
			if stop() && reuse && rb.Done() && !h.close {
				c.nc.SetReadDeadline(time.Time{})
				t.h1.put(c)
			} else {
				c.nc.Close()
			}
		}}, nil
	}
}

// stamper times what a stream reads; record.Clock is one.
type stamper interface{ Now() time.Duration }

// arrivals times a response's chunks by when their bytes reached this
// machine, from the connection's receive timestamps where it has them,
// else by the clock when they were read (not when they were parsed: the
// events of one read share its time). Its times never go backwards within
// a request, whichever of the two gave them.
type arrivals struct {
	clock record.Clock
	conn  arriver       // nil where the connection is not known
	read  time.Duration // when the latest body bytes were read; 0 before any
	last  time.Duration // the latest time given
}

func (a *arrivals) Now() time.Duration {
	var at time.Duration
	if a.conn != nil {
		if t, ok := a.conn.arrivedAt(); ok {
			at = max(t.Sub(a.clock.Start()), 1)
		}
	}
	if at == 0 {
		at = a.read
	}
	if at == 0 {
		at = a.clock.Now()
	}
	at = max(at, a.last)
	a.last = at
	return at
}

// promptLimit is how soon after its bytes arrived a read must come for the
// events it brings together to count as the server's doing, not the
// client's lag.
const promptLimit = time.Millisecond

// lag counts the token chunks stamped with an arrival not their own: a
// token chunk whose read brought bytes after it too (another token chunk,
// a usage event, [DONE], a comment, half of the next event) is timed by
// that read, whose newest bytes are the later ones'. Whether it was is
// known at the next event (Events.Shared); whether the read was prompt
// (the server's coalescing, not the client's lag) is known at the chunk
// itself, while the read that brought it is the latest.
type lag struct{ pending, prompt bool }

// next notes the event Events.Next just returned, and whether the event
// before it shared its read (Events.Shared); call it for every event
// before anything else.
func (l *lag) next(shared bool, rec *record.Record) {
	if l.pending && shared {
		if l.prompt {
			rec.Coalesced++
		} else {
			rec.Buffered++
		}
	}
	l.pending = false
}

// chunk notes that the current event carried tokens, and whether the
// read that brought it was prompt.
func (l *lag) chunk(clock stamper) {
	a, ok := clock.(*arrivals)
	l.pending, l.prompt = true, ok && a.prompt()
}

// prompt says the events of the latest read arrived together, so their
// shared arrival is true (the server wrote them together): the read came
// within promptLimit of the arrival of its newest bytes, and either it
// was already waiting when they arrived (a read that waits returns the
// first bytes to come: earlier ones would have come alone) or the client
// had been away from reading for no more than promptLimit before it (so
// nothing can have waited longer). A chunk that arrived 8 ms before the
// next, read together with it by a client away for those 8 ms, is the
// client's lag. The arrival is the kernel's stamp where the read had one,
// and the read waited if the stamp is not before it began; without a
// stamp it is when the read returned, and the read waited if it returned
// waitMin or more after it began. False where the connection is unknown.
func (a *arrivals) prompt() bool {
	if a.conn == nil || a.read == 0 {
		return false
	}
	t, ok := a.conn.arrivedAt()
	start, prevEnd, kernel := a.conn.readWindow()
	if !ok || start.IsZero() || a.read-t.Sub(a.clock.Start()) > promptLimit {
		return false
	}
	waited := t.Sub(start) >= waitMin
	if kernel {
		waited = !t.Before(start.Add(-waitMin))
	}
	return waited || !prevEnd.IsZero() && start.Sub(prevEnd) <= promptLimit
}

// waitMin is how far a kernel stamp may fall before the read that waited
// for its bytes began (the two clocks are read microseconds apart), and,
// without a stamp, how long a read must have taken to have waited.
const waitMin = 50 * time.Microsecond

// arriver is a connection that knows when the bytes it read last reached
// this machine (a time with its monotonic reading, so that a clock in a
// test's virtual time reads it right too), and when that read began and
// the one before it ended.
type arriver interface {
	arrivedAt() (time.Time, bool)
	// readWindow is when the latest read that returned bytes began and
	// when the read before it ended (zero for the first); stamped false
	// when that read carried no kernel arrival time.
	readWindow() (start, prevEnd time.Time, stamped bool)
}

// readStamper notes in its arrivals when each read of a body returned
// bytes, and passes on the body's count of connection reads.
type readStamper struct {
	r  io.Reader
	a  *arrivals
	n  int
	rc readCounter // r, where it counts its own reads
}

func (s *readStamper) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n++
	if n > 0 {
		s.a.read = s.a.clock.Now()
	}
	return n, err
}

func (s *readStamper) Reads() int {
	if s.rc != nil {
		return s.rc.Reads()
	}
	return s.n
}

func retryable(err error) bool {
	s := err.Error()
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(s, "server closed idle connection") || strings.Contains(s, "connection reset")
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
