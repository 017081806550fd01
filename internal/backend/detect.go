package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// ProbeTimeout bounds each detection request: a server that accepts
// connections but never answers cannot hang tokperf.
var ProbeTimeout = 5 * time.Second

// Detect asks a server what it is, from the identity route each engine has
// (all probed at once, each within ProbeTimeout), and which models it
// serves. It fails with one clear line when the server cannot be reached,
// does not answer, or is not ready.
func Detect(ctx context.Context, client *http.Client, base, apiKey string) (record.Server, []string, error) {
	base = strings.TrimSuffix(base, "/")
	type answer struct {
		code int
		body map[string]any
		err  error
	}
	type probe struct {
		engine.Probe
		engine string
	}
	var probes []probe
	for _, e := range engine.Table() {
		for _, p := range e.Probes {
			probes = append(probes, probe{p, e.Name})
		}
	}
	answers := make([]answer, len(probes)+1)
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
			defer cancel()
			if i == len(probes) {
				answers[i].code, answers[i].err = getJSON(pctx, client, base+"/v1/models", apiKey, &models)
				return
			}
			answers[i].code, answers[i].err = getJSON(pctx, client, base+probes[i].Path, apiKey, &answers[i].body)
		})
	}
	wg.Wait()
	m := answers[len(probes)]
	switch {
	case m.err != nil && errors.Is(m.err, context.DeadlineExceeded):
		return record.Server{}, nil, fmt.Errorf("%s accepted the connection but did not answer /v1/models within %v", Redact(base), ProbeTimeout)
	case m.err != nil:
		return record.Server{}, nil, fmt.Errorf("cannot reach %s: %v", Redact(base), m.err)
	case m.code == http.StatusServiceUnavailable:
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered 503: the server is not ready (still loading? try --wait-ready)", Redact(base))
	case m.code == http.StatusUnauthorized || m.code == http.StatusForbidden:
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered %d: check --api-key or OPENAI_API_KEY", Redact(base), m.code)
	}
	var ids []string
	for _, d := range models.Data {
		ids = append(ids, d.ID)
	}
	for i, p := range probes {
		a := answers[i]
		if a.err != nil || a.code != http.StatusOK || a.body == nil || !p.Is(a.body) {
			continue
		}
		s := record.Server{Engine: p.engine, Info: trim(a.body)}
		if v, ok := a.body[p.VersionKey].(string); ok {
			s.Version = v
		}
		return s, ids, nil
	}
	if m.code != http.StatusOK {
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered %d and no known identity route answered: is this an inference server?", Redact(base), m.code)
	}
	return record.Server{Engine: "openai"}, ids, nil
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

func getJSON(ctx context.Context, client *http.Client, u, apiKey string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode == http.StatusOK {
		json.Unmarshal(body, v)
	}
	return resp.StatusCode, nil
}

// WaitReady polls a freshly started server until it serves: /health answers
// 200 (503 or "Loading model" mean wait), then /v1/models does. It returns
// how long that took, or an error at the timeout.
func WaitReady(ctx context.Context, client *http.Client, base, apiKey string, timeout time.Duration) (time.Duration, error) {
	base = strings.TrimSuffix(base, "/")
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for _, path := range []string{"/health", "/v1/models"} {
		for {
			pctx, pcancel := context.WithTimeout(ctx, ProbeTimeout)
			var ignored any
			code, err := getJSON(pctx, client, base+path, apiKey, &ignored)
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

// Redact drops credentials and query from a URL, for output and files.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// DefaultEndpoint is the raw generation endpoint of an engine: its native
// one where tokperf speaks it, else OpenAI completions.
func DefaultEndpoint(name string) string { return engine.DefaultEndpoint(name) }
