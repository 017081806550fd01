package backend

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// answering serves only the routes given (each a JSON body), 404 for the
// rest: a gateway that passes part of a server through.
func answering(t *testing.T, routes map[string]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// vLLM and SGLang name themselves in /v1/models' owned_by (vLLM 0.x
// and SGLang 0.4+ both do): behind a gateway that passes only /v1/*, that
// is the engine, measured on its OpenAI routes (issue 37).
func TestDetectOwnedBy(t *testing.T) {
	t.Parallel()
	for owner, want := range map[string]string{"vllm": "vllm", "sglang": "sglang", "openai": "openai", "": "openai"} {
		t.Run(owner, func(t *testing.T) {
			t.Parallel()
			url := answering(t, map[string]string{"/v1/models": `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1735000000,"owned_by":"` + owner + `","root":"Qwen/Qwen2.5-7B-Instruct","parent":null,"max_model_len":32768}]}`})
			s, models, err := Detect(t.Context(), NewClient(2, nil), url, "")
			if err != nil || s.Engine != want || len(models) != 1 {
				t.Fatalf("detected %q (%v, %s), models %v, %v; want %s", s.Engine, s.Evidence, s.Doubt, models, err, want)
			}
			if owned := len(s.Evidence) == 1 && s.Evidence[0] == OwnedByEvidence; owned != (want != "openai") {
				t.Errorf("evidence %v", s.Evidence)
			}
		})
	}
}

// Newer SGLang answers /server_info and /model_info, not the get_ names:
// two identity routes agree, so it is SGLang (issue 37).
func TestDetectSGLangModelInfo(t *testing.T) {
	t.Parallel()
	url := answering(t, map[string]string{
		"/v1/models":   `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","owned_by":"sglang"}]}`,
		"/server_info": `{"model_path":"Qwen/Qwen2.5-7B-Instruct","tp_size":1,"dp_size":1,"max_total_num_tokens":500000,"version":"0.5.2"}`,
		"/model_info":  `{"model_path":"Qwen/Qwen2.5-7B-Instruct","tokenizer_path":"Qwen/Qwen2.5-7B-Instruct","is_generation":true,"preferred_sampling_params":null,"weight_version":"default","has_image_understanding":false,"has_audio_understanding":false,"model_type":"qwen2","architectures":["Qwen2ForCausalLM"]}`,
	})
	s, _, err := Detect(t.Context(), NewClient(2, nil), url, "")
	if err != nil || s.Engine != "sglang" || len(s.Evidence) != 2 || s.Version != "0.5.2" {
		t.Errorf("detected %q version %q on %v (%s), %v; want sglang 0.5.2 on /server_info and /model_info", s.Engine, s.Version, s.Evidence, s.Doubt, err)
	}
}

func TestTrimV1(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://host:8000/v1":               "http://host:8000",
		"http://host:8000/v1/":              "http://host:8000",
		"https://gw.example/openai/v1?k=s":  "https://gw.example/openai?k=s",
		"http://host:8000":                  "http://host:8000",
		"http://host:8000/v10":              "http://host:8000/v10",
		"http://host:8000/custom/v1/prefix": "http://host:8000/custom/v1/prefix",
	} {
		got, trimmed := TrimV1(in)
		if got != want || trimmed != (in != want) {
			t.Errorf("TrimV1(%q) = %q, %v; want %q", in, got, trimmed, want)
		}
	}
}
