package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// tokenIDs gives the simulator's tokens ids, as a real server's /tokenize
// does: a token is a word, as the simulator counts prompts when it has no
// Options.Tokenizer (with one that encodes, /tokenize gives its ids).
type tokenIDs struct {
	mu    sync.Mutex
	ids   map[string]int
	words []string
}

func (v *tokenIDs) encode(text string) []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids == nil {
		v.ids = map[string]int{}
	}
	var out []int
	for _, w := range strings.Fields(text) {
		id, ok := v.ids[w]
		if !ok {
			id = len(v.words)
			v.ids[w] = id
			v.words = append(v.words, w)
		}
		out = append(out, id)
	}
	return out
}

func (v *tokenIDs) decode(ids []int) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	words := make([]string, len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(v.words) {
			return "", false
		}
		words[i] = v.words[id]
	}
	return strings.Join(words, " "), true
}

// tokenizeRoutes are the tokenize and detokenize routes of the engines
// that have them, with the field that holds the text: vLLM's "prompt"
// (/tokenize {"prompt"} → {"count", "tokens"}, /detokenize {"tokens"} →
// {"prompt"}) and llama.cpp's "content" (/tokenize {"content"} →
// {"tokens"}, /detokenize {"tokens"} → {"content"}).
func (s *Server) tokenizeRoutes(m *http.ServeMux, field string) {
	text, out := field, field
	m.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			writeJSON(w, 400, map[string]any{"error": err.Error()})
			return
		}
		t, ok := req[text].(string)
		if !ok {
			writeJSON(w, 400, map[string]any{"error": text + " is required"})
			return
		}
		var ids []int
		if s.enc != nil {
			ids = s.enc.Encode(t)
		} else {
			ids = s.tokens.encode(t)
		}
		if ids == nil {
			ids = []int{}
		}
		writeJSON(w, 200, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.p.ContextLength})
	})
	m.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			writeJSON(w, 400, map[string]any{"error": err.Error()})
			return
		}
		var t string
		ok := true
		if s.enc != nil {
			t = s.enc.Decode(req.Tokens)
		} else {
			t, ok = s.tokens.decode(req.Tokens)
		}
		if !ok {
			writeJSON(w, 400, map[string]any{"error": "unknown token id"})
			return
		}
		writeJSON(w, 200, map[string]any{out: t})
	})
}
