package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
)

// ServerTokenizer tokenizes with the server's own routes (--tokenizer
// server): vLLM's and llama.cpp's /tokenize and /detokenize, so prompts are
// counted by exactly the served model's tokenizer. It fails at once, saying
// so, for an engine without such routes or a server whose route does not
// answer. A later failure is kept and returned by Err; the counts are then
// zero.
type ServerTokenizer struct {
	client       *http.Client
	tok, detok   string // the routes' URLs
	field, model string
	apiKey       string
	name         string

	mu  sync.Mutex
	err error
}

// NewServerTokenizer tokenizes through the server at base (its engine,
// model and key as detected).
func NewServerTokenizer(ctx context.Context, client *http.Client, base, engineName, model, apiKey string) (*ServerTokenizer, error) {
	e, _ := engine.Lookup(engineName)
	if e.Tokenize.Tokenize == "" {
		return nil, fmt.Errorf("the %s server has no tokenize route tokperf knows (vLLM and llama.cpp have one): give --tokenizer the model's tokenizer.json", engineName)
	}
	tu, err := routeURL(base, e.Tokenize.Tokenize)
	if err != nil {
		return nil, err
	}
	du, err := routeURL(base, e.Tokenize.Detokenize)
	if err != nil {
		return nil, err
	}
	t := &ServerTokenizer{client: client, tok: tu.String(), detok: du.String(), field: e.Tokenize.TextField, model: model, apiKey: apiKey,
		name: fmt.Sprintf("the server's %s (%s)", e.Tokenize.Tokenize, engineName)}
	// One round trip now: a server that does not answer is said here.
	ids, err := t.encode(ctx, "tokperf")
	if err == nil {
		_, err = t.decode(ctx, ids)
	}
	if err != nil {
		return nil, fmt.Errorf("--tokenizer server: %w", err)
	}
	return t, nil
}

// Name says whose tokenizer counted.
func (t *ServerTokenizer) Name() string { return t.name }

// Encode is the server's token ids for text, without special tokens.
func (t *ServerTokenizer) Encode(text string) []int {
	ids, err := t.encode(context.Background(), text)
	t.keep(err)
	return ids
}

// Decode is the server's text for ids.
func (t *ServerTokenizer) Decode(ids []int) string {
	s, err := t.decode(context.Background(), ids)
	t.keep(err)
	return s
}

// Count is the number of the server's tokens in text.
func (t *ServerTokenizer) Count(text string) int { return len(t.Encode(text)) }

// Err is the first failure of a call after the first.
func (t *ServerTokenizer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *ServerTokenizer) keep(err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
}

func (t *ServerTokenizer) encode(ctx context.Context, text string) ([]int, error) {
	// No BOS or other special tokens: the prompt's own tokens, as the
	// workload cuts them (vLLM: add_special_tokens; llama.cpp: add_special).
	body := map[string]any{t.field: text, "add_special": false}
	if t.field == "prompt" {
		body = map[string]any{t.field: text, "add_special_tokens": false}
		if t.model != "" {
			body["model"] = t.model
		}
	}
	var out struct {
		Tokens []int `json:"tokens"`
	}
	if err := t.post(ctx, t.tok, body, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

func (t *ServerTokenizer) decode(ctx context.Context, ids []int) (string, error) {
	body := map[string]any{"tokens": ids}
	if t.model != "" && t.field == "prompt" {
		body["model"] = t.model
	}
	var out map[string]any
	if err := t.post(ctx, t.detok, body, &out); err != nil {
		return "", err
	}
	s, ok := out[t.field].(string)
	if !ok {
		return "", fmt.Errorf("%s: the answer has no %q text", Redact(t.detok), t.field)
	}
	return s, nil
}

func (t *ServerTokenizer) post(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return redactErr(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", Redact(url), err)
	}
	return answer(url, resp.StatusCode, data, out)
}

// answer decodes a tokenizer server's answer data, with its HTTP code,
// into out; errors name the URL, redacted.
func answer(url string, code int, data []byte, out any) error {
	if code != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d: %.200s", Redact(url), code, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: %v", Redact(url), err)
	}
	return nil
}
