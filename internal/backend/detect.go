package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Detect asks a server what it is (from the identity route each engine
// has) and which models it serves. It fails with one clear line when the
// server cannot be reached or is not ready.
func Detect(ctx context.Context, client *http.Client, base, apiKey string) (record.Server, []string, error) {
	base = strings.TrimSuffix(base, "/")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var models []string
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	code, err := getJSON(ctx, client, base+"/v1/models", apiKey, &list)
	switch {
	case err != nil:
		return record.Server{}, nil, fmt.Errorf("cannot reach %s: %v", Redact(base), err)
	case code == http.StatusServiceUnavailable:
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered 503: the server is not ready (still loading?)", Redact(base))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered %d: check --api-key or OPENAI_API_KEY", Redact(base), code)
	case code == http.StatusOK:
		for _, m := range list.Data {
			models = append(models, m.ID)
		}
	}
	probes := []struct {
		path, engine, versionKey string
	}{
		{"/server_info", "sglang", "version"},
		{"/version", "vllm", "version"},
		{"/info", "tgi", "version"},
		{"/props", "llamacpp", "build_info"},
		{"/api/version", "ollama", "version"},
	}
	for _, p := range probes {
		var info map[string]any
		code, err := getJSON(ctx, client, base+p.path, apiKey, &info)
		if err != nil || code != http.StatusOK || info == nil {
			continue
		}
		if p.engine == "tgi" && info["router"] == nil && info["model_id"] == nil {
			continue
		}
		if p.engine == "vllm" && len(info) != 1 {
			continue // /version on something else
		}
		s := record.Server{Engine: p.engine, Info: trim(info)}
		if v, ok := info[p.versionKey].(string); ok {
			s.Version = v
		}
		return s, models, nil
	}
	if code != http.StatusOK {
		return record.Server{}, nil, fmt.Errorf("%s/v1/models answered %d and no known identity route answered: is this an inference server?", Redact(base), code)
	}
	return record.Server{Engine: "openai"}, models, nil
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

// DefaultEndpoint is the raw generation endpoint of an engine.
func DefaultEndpoint(engine string) string {
	if engine == "sglang" {
		return "generate"
	}
	return "completions"
}
