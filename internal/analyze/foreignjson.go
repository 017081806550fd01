package analyze

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// ForeignFigures are the JSON names of the scalar stage figures a mapping
// of another tool's file may fill; each mapping names in Source.Blank
// those it leaves unset.
var ForeignFigures = []string{"wall_s", "output_tokens", "prompt_tokens", "aggregate_tok_s", "steady_tok_s", "input_tok_s", "total_tok_s",
	"requests_per_s", "effective_concurrency", "tokens_per_chunk", "goodput_requests_per_s", "goodput_tok_s", "errors",
	"buffered_share", "client_queue_ms", "client_wait_ms", "ttft_ms", "ttfo_ms", "e2e_ms", "tpot_ms", "decode_tok_s",
	"request_tok_s", "itl_ms", "icl_ms"}

// MarshalJSON writes the run. A run read from another tool's file writes
// null, never 0, for what the file does not hold: a distribution with no
// samples, a stage figure its mapping left unset, a setup field the file
// does not state (METRICS.md §6).
func (r *Run) MarshalJSON() ([]byte, error) {
	type plain Run
	b, err := json.Marshal((*plain)(r))
	if err != nil || r.Source == nil {
		return b, err
	}
	held := map[string]bool{"stage": true, "requests": true, "ok": true}
	for _, k := range ForeignFigures {
		held[k] = !slices.Contains(r.Source.Blank, k)
	}
	var out bytes.Buffer
	err = rewriteJSON(&out, b, nil, func(path []string, raw []byte) bool {
		switch {
		case len(path) >= 2 && path[0] == "setup":
			return path[1] != "simulated" && (string(raw) == "0" || string(raw) == "false")
		case len(path) == 3 && path[0] == "stages":
			if bytes.HasPrefix(raw, []byte(`{"n":0,`)) {
				return true // a distribution the file does not have
			}
			return string(raw) == "0" && !held[path[2]]
		}
		return false
	})
	return out.Bytes(), err
}

// rewriteJSON copies the JSON value raw at path to w, keeping the order of
// every object's keys, writing null for each value null says to blank.
func rewriteJSON(w *bytes.Buffer, raw []byte, path []string, null func(path []string, raw []byte) bool) error {
	raw = bytes.TrimSpace(raw)
	if len(path) > 0 && null(path, raw) {
		w.WriteString("null")
		return nil
	}
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		w.Write(raw)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, err := dec.Token()
	if err != nil {
		return err
	}
	obj := open == json.Delim('{')
	w.WriteByte(raw[0])
	for i := 0; dec.More(); i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		key := strconv.Itoa(i)
		if obj {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ = t.(string)
			k, _ := json.Marshal(key)
			w.Write(k)
			w.WriteByte(':')
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := rewriteJSON(w, v, append(path[:len(path):len(path)], key), null); err != nil {
			return err
		}
	}
	if obj {
		w.WriteByte('}')
	} else {
		w.WriteByte(']')
	}
	return nil
}
