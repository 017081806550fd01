package backend

import (
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// llama-server's /v1/models states the model's parameters and its file's
// bytes: the size read is those, with the bytes a weight takes (a GGUF
// Q4_K_M's 0.65); a list with no meta (vLLM's), a meta of zeros, or
// another model's meta among several gives none.
func TestModelSizeFromTheServer(t *testing.T) {
	t.Parallel()
	llama, err := os.ReadFile(filepath.Join("testdata", "identity", "llamacpp-v1-models.json"))
	if err != nil {
		t.Fatal(err)
	}
	vllm, err := os.ReadFile(filepath.Join("testdata", "identity", "vllm-v1-models.json"))
	if err != nil {
		t.Fatal(err)
	}
	two := `{"data":[{"id":"a","meta":{"n_params":7e9,"size":14e9}},{"id":"b","meta":{"n_params":1e9,"size":1e9}}]}`
	for _, tc := range []struct {
		name, body, model string
		params, bytes     float64 // 0: none
	}{
		{"llama.cpp", string(llama), "Llama-3.2-1B-Instruct-Q4_K_M.gguf", 1.235814432, 799862912.0 / 1235814432},
		{"llama.cpp, the one model by another name", string(llama), "default", 1.235814432, 799862912.0 / 1235814432},
		{"vLLM", string(vllm), "", 0, 0},
		{"zeros", `{"data":[{"id":"m","meta":{"n_params":0,"size":0}}]}`, "m", 0, 0},
		{"the named one of two", two, "b", 1, 1},
		{"none named of two", two, "c", 0, 0},
		{"not JSON", `<html>`, "m", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/models" {
					http.NotFound(w, r)
					return
				}
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got := ModelSize(t.Context(), srv.Client(), srv.URL, "", tc.model)
			switch {
			case tc.params == 0 && got != nil:
				t.Errorf("a size from %s: %+v", tc.name, got)
			case tc.params > 0 && (got == nil || math.Abs(got.ParamsB-tc.params) > 1e-12 || math.Abs(got.BytesPerParam-tc.bytes) > 1e-12 || got.From == ""):
				t.Errorf("%+v; want %v B parameters of %v bytes, and where they came from", got, tc.params, tc.bytes)
			}
		})
	}
}
