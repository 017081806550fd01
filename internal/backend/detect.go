package backend

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// ProbeTimeout bounds each detection request: a server that accepts
// connections but never answers cannot hang tokperf.
var ProbeTimeout = 5 * time.Second

// probe is one identity route of an engine of the table.
type probe struct {
	engine.Probe
	engine string
}

// probes are every engine's identity routes, in the table's order.
var probes = func() []probe {
	var out []probe
	for _, e := range engine.Table() {
		for _, p := range e.Probes {
			out = append(out, probe{p, e.Name})
		}
	}
	return out
}()

// Detect asks a server what it is, from the identity route each engine has
// (all probed at once, each within ProbeTimeout), and which models it
// serves. It fails with one clear line when the server cannot be reached,
// does not answer, or is not ready.
func Detect(ctx context.Context, client *http.Client, base, apiKey string) (record.Server, []string, error) {
	type answer struct {
		code int
		msg  string // the start of an answer other than 200
		body map[string]any
		err  error
	}
	// Each route goes under the base URL's path, keeping its query (an
	// API key in it, say), as the generation route does.
	urls := make([]string, len(probes)+1)
	for i := range urls {
		route := "/v1/models"
		if i < len(probes) {
			route = probes[i].Path
		}
		u, err := routeURL(base, route)
		if err != nil {
			return record.Server{}, nil, err
		}
		urls[i] = u.String()
	}
	shown := Redact(urls[len(probes)]) // the /v1/models URL, for messages
	answers := make([]answer, len(probes)+1)
	var models struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
			defer cancel()
			if i == len(probes) {
				answers[i].code, answers[i].msg, answers[i].err = getBody(pctx, client, urls[i], apiKey, &models)
				return
			}
			answers[i].code, answers[i].err = getJSON(pctx, client, urls[i], apiKey, &answers[i].body)
		})
	}
	wg.Wait()
	m := answers[len(probes)]
	switch {
	case m.err != nil && errors.Is(m.err, context.DeadlineExceeded):
		return record.Server{}, nil, fmt.Errorf("%s accepted the connection but did not answer within %v", shown, ProbeTimeout)
	case errors.Is(m.err, errTooBig):
		return record.Server{}, nil, fmt.Errorf("%s answered %v", shown, m.err)
	case m.err != nil:
		return record.Server{}, nil, fmt.Errorf("cannot reach %s: %v%s", shown, m.err, why(m.err, base))
	case m.code == http.StatusBadRequest && strings.Contains(m.msg, "HTTP request to an HTTPS server"):
		return record.Server{}, nil, fmt.Errorf("%s answered 400: the port speaks TLS: give https:// (%.100s)", shown, m.msg)
	case m.code == http.StatusServiceUnavailable:
		return record.Server{}, nil, fmt.Errorf("%s answered 503: the server is not ready (still loading? try --wait-ready)", shown)
	case m.code == http.StatusProxyAuthRequired:
		return record.Server{}, nil, fmt.Errorf("%s: a proxy answered 407 (it wants its own credentials), not the server: give them in --proxy http://user:password@host:port, or reach the server without the proxy (NO_PROXY)", shown)
	case m.code == http.StatusUnauthorized || m.code == http.StatusForbidden:
		return record.Server{}, nil, fmt.Errorf("%s answered %d: check --api-key or OPENAI_API_KEY", shown, m.code)
	case m.code/100 == 5:
		// A failing listing is not an empty one ("lists no model").
		return record.Server{}, nil, fmt.Errorf("%s answered HTTP %d: %.200s", shown, m.code, m.msg)
	}
	var ids []string
	owner := ""
	for _, d := range models.Data {
		ids = append(ids, d.ID)
		owner = cmp.Or(owner, d.OwnedBy)
	}
	// An engine is taken on agreeing evidence: every route of it that
	// matched is recorded, and one with several identity routes needs two
	// (an SGLang-like /get_model_info alone is not SGLang).
	var found *record.Server
	for i, p := range probes {
		a := answers[i]
		if a.err != nil || a.code != http.StatusOK {
			continue
		}
		s, ok := p.identify(a.body)
		switch {
		case !ok:
		case found == nil:
			found = &s
			found.Evidence = []string{p.Path}
		case found.Engine == s.Engine:
			found.Evidence = append(found.Evidence, p.Path)
		}
	}
	if found != nil {
		e, _ := engine.Lookup(found.Engine)
		if need := min(len(e.Probes), 2); len(found.Evidence) >= need {
			return *found, ids, nil
		}
		// Too little to be sure: an OpenAI-compatible server, saying why.
		return record.Server{Engine: "openai", Evidence: found.Evidence, Info: found.Info,
			Doubt: fmt.Sprintf("it answers %s like %s but none of its other identity routes: taken as OpenAI-compatible (--engine %s if it is)", strings.Join(found.Evidence, ", "), found.Engine, found.Engine)}, ids, nil
	}
	if m.code != http.StatusOK {
		return record.Server{}, nil, fmt.Errorf("%s answered %d and no known identity route answered: is this an inference server?", shown, m.code)
	}
	if owner == "vllm" || owner == "sglang" {
		// vLLM and SGLang name themselves as the models' owner: behind a
		// gateway that passes only /v1/*, that is all there is to go by.
		return record.Server{Engine: owner, Evidence: []string{OwnedByEvidence},
			Doubt: fmt.Sprintf("/v1/models says owned_by %q and no identity route answered (a gateway passing only /v1/*?): taken as %s on its OpenAI routes", owner, owner)}, ids, nil
	}
	return record.Server{Engine: "openai"}, ids, nil
}

// OwnedByEvidence is the evidence of an engine known only by its models'
// owned_by: its native routes may not be there, so its OpenAI ones are
// measured.
const OwnedByEvidence = "/v1/models owned_by"

// TrimV1 is a --url without the /v1 an OpenAI SDK's base URL ends in
// (http://host:8000/v1): tokperf adds /v1/… to the server's base itself.
// It reports whether there was one.
func TrimV1(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, false
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(p, "/v1") {
		return raw, false
	}
	u.Path, u.RawPath = strings.TrimSuffix(p, "/v1"), ""
	return u.String(), true
}

// identify matches an identity route's answer to its engine.
func (p probe) identify(body map[string]any) (record.Server, bool) {
	if body == nil || !p.Is(body) {
		return record.Server{}, false
	}
	s := record.Server{Engine: p.engine, Info: trim(body)}
	if v, ok := body[p.VersionKey].(string); ok {
		s.Version = v
	}
	return s, true
}

// trim keeps the scalar fields of an identity answer, for the result header.
func trim(info map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range info {
		switch v.(type) {
		case string, float64, bool, nil:
			out[k] = v
		}
	}
	return out
}

// maxAnswer bounds an identity or model list answer: 1 MiB lists
// thousands of models.
const maxAnswer = 1 << 20

// errTooBig is an answer over maxAnswer, which is not read.
var errTooBig = fmt.Errorf("over %d MiB: not read (a model list that long, or not an inference server?)", maxAnswer>>20)

func getJSON(ctx context.Context, client *http.Client, u, apiKey string, v any) (int, error) {
	code, _, err := getBody(ctx, client, u, apiKey, v)
	return code, err
}

// getBody is getJSON that also returns the start of an answer other than
// 200, for messages.
func getBody(ctx context.Context, client *http.Client, u, apiKey string, v any) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", redactErr(err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", redactErr(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return resp.StatusCode, "", err
	}
	if len(body) > maxAnswer {
		// Cut, it would decode as nothing: "lists no model".
		return resp.StatusCode, "", errTooBig
	}
	if resp.StatusCode == http.StatusOK {
		json.Unmarshal(body, v)
		return resp.StatusCode, "", nil
	}
	return resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 200)])), nil
}

// WaitReady polls a freshly started server until it serves: /health answers
// 200 (503 or "Loading model" mean wait), then /v1/models does. It returns
// how long that took, or an error at the timeout.
func WaitReady(ctx context.Context, client *http.Client, base, apiKey string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for _, path := range []string{"/health", "/v1/models"} {
		for {
			pctx, pcancel := context.WithTimeout(ctx, ProbeTimeout)
			var ignored any
			u, err := routeURL(base, path)
			if err != nil {
				pcancel()
				return 0, err
			}
			code, err := getJSON(pctx, client, u.String(), apiKey, &ignored)
			pcancel()
			if err == nil && code == http.StatusOK {
				break
			}
			if err == nil && code == http.StatusNotFound && path == "/health" {
				break // no /health on this server: go on to /v1/models
			}
			last = fmt.Sprintf("%s: HTTP %d", path, code)
			if err != nil {
				last = fmt.Sprintf("%s: %v", path, err)
			}
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return time.Since(start), fmt.Errorf("%s not ready after %v (last: %s)", Redact(base), timeout, last)
			}
		}
	}
	return time.Since(start), nil
}

// Redact masks the credentials in a URL, for output and files: the user
// info and every query value (an API key is often one) become xxxxx; the
// query's names stay, so the URL still says what it held.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" || u.ForceQuery {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok {
				parts[i] = k + "=xxxxx"
			} else if p != "" {
				parts[i] = "xxxxx"
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// redactErr masks the URL that net/http puts in its errors.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = Redact(ue.URL)
	}
	return err
}

// DefaultEndpoint is the raw generation endpoint of an engine: its native
// one where tokperf speaks it, else OpenAI completions.
func DefaultEndpoint(name string) string { return engine.DefaultEndpoint(name) }

// Loaded lists the models a server has in memory now, from its route of
// them (engine.Loaded: Ollama's /api/ps), so a run can measure the loaded
// one rather than whichever /v1/models lists first (a cold one would be
// measured loading).
func Loaded(ctx context.Context, client *http.Client, base, apiKey, route string) ([]string, error) {
	u, err := routeURL(base, route)
	if err != nil {
		return nil, err
	}
	var ps struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	code, err := getJSON(pctx, client, u.String(), apiKey, &ps)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", Redact(u.String()), code)
	}
	var out []string
	for _, m := range ps.Models {
		if m.Model != "" {
			out = append(out, m.Model)
		} else if m.Name != "" {
			out = append(out, m.Name)
		}
	}
	return out, nil
}

// why names the likely cause of a failure to reach base, for the message:
// a scheme that does not match the port, a certificate not trusted.
func why(err error, base string) string {
	var unknown x509.UnknownAuthorityError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "; its certificate is signed by an authority this machine does not trust: give that authority with --ca-cert FILE, or --insecure to skip the check"
	case errors.As(err, &header), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "; the port answers plain HTTP, not TLS: give http:// instead of https://"
	case strings.HasPrefix(base, "http://") && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return "; it closed the connection at once: a TLS port? try https://"
	}
	return ""
}
