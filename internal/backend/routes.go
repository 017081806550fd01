package backend

import (
	"context"
	"net/http"
	"slices"
)

// routeEndpoints are the generation routes a server's OpenAPI document
// may list, by the --endpoint that speaks them.
var routeEndpoints = map[string]string{
	"/v1/completions": "completions", "/v1/chat/completions": "chat",
	"/v1/responses": "responses", "/v1/messages": "messages",
}

// Routes are the endpoints (completions, chat, responses, messages) the
// server says it serves, read from its OpenAPI document: /openapi.json,
// which vLLM and SGLang (FastAPI) publish, or /api-doc/openapi.json (TGI).
// Nil when it publishes none (llama-server, Ollama): then nothing is
// known, and nothing is guessed.
func Routes(ctx context.Context, client *http.Client, base, apiKey string) []string {
	for _, doc := range []string{"/openapi.json", "/api-doc/openapi.json"} {
		u, err := routeURL(base, doc)
		if err != nil {
			return nil
		}
		var spec struct {
			Paths map[string]any `json:"paths"`
		}
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		code, err := getJSON(pctx, client, u.String(), apiKey, &spec)
		cancel()
		if err != nil || code != http.StatusOK || len(spec.Paths) == 0 {
			continue
		}
		out := []string{}
		for path := range spec.Paths {
			if e, ok := routeEndpoints[path]; ok {
				out = append(out, e)
			}
		}
		slices.Sort(out)
		return out
	}
	return nil
}
