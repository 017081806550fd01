package backend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tokperf/tokperf/internal/record"
)

// Triton's route carries the model, which only its configuration knows:
// the protocol is made from it, and the body is TensorRT-LLM's inputs.
func TestTritonRouteCarriesTheModel(t *testing.T) {
	t.Parallel()
	b, err := New(Config{URL: "http://127.0.0.1:1/base", Endpoint: "generate", Engine: "triton", Model: "llama 3"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if want := "http://127.0.0.1:1/base/v2/models/llama%203/generate_stream"; b.url != want {
		t.Errorf("URL %s, want %s", b.url, want)
	}
	for _, temp := range []float64{0, 0.7} {
		body, err := b.proto.body(&b.cfg, &record.Request{Prompt: "hi", MaxTokens: 7, Temperature: temp})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got["text_input"] != "hi" || got["max_tokens"] != 7.0 || got["stream"] != true || (got["temperature"] != nil) != (temp > 0) {
			t.Errorf("temperature %v: body %s", temp, body)
		}
	}
}

// The real capture is one event and the stream's end: an answer, counted
// one token an event (an estimate, so flagged as chunks). An error event
// after the 200 fails the request; a body cut before its end does too.
func TestTritonStream(t *testing.T) {
	t.Parallel()
	rec := record.New(0)
	var text strings.Builder
	readStream(triton{}, capture(t, "triton-trtllm-generate-stream.sse"), record.NewClock(), &rec, &text)
	if rec.Status != record.StatusOK || rec.OutputTokens != 1 || rec.OutputSource != record.SourceChunks || rec.ChunkSource != record.SourceChunks ||
		!strings.HasPrefix(text.String(), "If I had to write a haiku") || rec.FinishReason != "" {
		t.Errorf("capture: %s %q, %d tokens from %q, text %q", rec.Status, rec.Error, rec.OutputTokens, rec.OutputSource, text.String())
	}
	two := "data: {\"model_name\":\"m\",\"text_output\":\" a\"}\n\ndata: {\"model_name\":\"m\",\"text_output\":\" b\"}\n\n"
	rec = record.New(0)
	readStream(triton{}, strings.NewReader(two), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusOK || rec.OutputTokens != 2 || len(rec.Chunks) != 2 || rec.Done != rec.Chunks[1].At {
		t.Errorf("two events: %s %q, %d tokens in %d chunks", rec.Status, rec.Error, rec.OutputTokens, len(rec.Chunks))
	}
	rec = record.New(0)
	readStream(triton{}, strings.NewReader(two+"data: {\"error\":\"Executor failed process requestId 7\"}\n\n"), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusStreamError || !strings.Contains(rec.Error, "Executor failed") {
		t.Errorf("error event: %s %q", rec.Status, rec.Error)
	}
	rec = record.New(0)
	readStream(triton{}, io.MultiReader(strings.NewReader(two), iotest.ErrReader(io.ErrUnexpectedEOF)), record.NewClock(), &rec, nil)
	if rec.Status == record.StatusOK {
		t.Errorf("cut body: %s %q, want a failure", rec.Status, rec.Error)
	}
	rec = record.New(0)
	readStream(triton{}, strings.NewReader(""), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusIncomplete {
		t.Errorf("no event: %s %q, want incomplete", rec.Status, rec.Error)
	}
}

// A Triton server answers its /v2 server metadata and has no /v1/models
// on its HTTP port: it is detected as itself by /v2 alone, with no model
// listed (the run then asks for --model); an answer at /v2 that is not
// Triton's is not taken for it, and leaves nothing known.
func TestDetectTritonByV2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v2, want string // "" for no engine: an error
	}{
		{`{"name":"triton","version":"2.41.0","extensions":["classification","sequence","model_repository","schedule_policy","model_configuration","system_shared_memory","cuda_shared_memory","binary_tensor_data","parameters","statistics","trace","logging"]}`, "triton"},
		{`{"name":"kserve-other","version":"1"}`, ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v2":
				w.Write([]byte(tc.v2))
			default:
				http.NotFound(w, r)
			}
		}))
		s, models, err := Detect(t.Context(), srv.Client(), srv.URL, "")
		srv.Close()
		if (err != nil) != (tc.want == "") || s.Engine != tc.want || len(models) != 0 {
			t.Errorf("/v2 %s: detected %q (%v) with models %v, want %s", tc.v2, s.Engine, err, models, tc.want)
		}
		if tc.want == "triton" && s.Version != "2.41.0" {
			t.Errorf("version %q, want /v2's", s.Version)
		}
	}
}
