package sim

import (
	"encoding/json"
	"net/http"
)

// nativeRequest holds the fields of SGLang's and TGI's /generate, which
// share a path and differ by body ("text"/"input_ids" or "inputs").
type nativeRequest struct {
	Text           json.RawMessage `json:"text"`
	InputIDs       []int           `json:"input_ids"`
	SamplingParams struct {
		MaxNewTokens *int     `json:"max_new_tokens"`
		MinNewTokens int      `json:"min_new_tokens"`
		IgnoreEOS    bool     `json:"ignore_eos"`
		Temperature  *float64 `json:"temperature"`
	} `json:"sampling_params"`
	Stream bool `json:"stream"`

	Inputs     *string    `json:"inputs"`
	Parameters *tgiParams `json:"parameters"`
}

type tgiParams struct {
	MaxNewTokens *int     `json:"max_new_tokens"`
	Details      bool     `json:"details"`
	Temperature  *float64 `json:"temperature"`
	Seed         *int64   `json:"seed"`
}

func nativeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "code": code}})
}
