package backend

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

// The real native streams of llama.cpp and Ollama, read by the client.
func TestNativeCaptures(t *testing.T) {
	t.Parallel()
	type want struct {
		status   record.Status
		output   int
		source   record.TokenSource
		chunks   int
		finish   string
		prompt   int
		decodeMs float64
	}
	for _, tc := range []struct {
		file  string
		proto protocol
		want  want
	}{
		{"llama-native-completion.sse", llamaCpp{}, want{record.StatusOK, 6, record.SourceUsage, 6, "limit", 2, 9.947}},
		{"llama-native-completion-timings-per-token.sse", llamaCpp{}, want{record.StatusOK, 3, record.SourceUsage, 3, "limit", 2, 0}},
		{"ollama-generate.ndjson", ollama{}, want{record.StatusOK, 6, record.SourceUsage, 6, "length", 29, 1002.195405}},
		{"ollama-apichat.ndjson", ollama{chat: true}, want{record.StatusOK, 6, record.SourceUsage, 6, "length", 29, 899.548922}},
		{"llama-completions-usage.sse", &openAI{}, want{record.StatusOK, 6, record.SourceUsage, 6, "length", 2, 9.476}},
		{"llama-chat-usage.sse", &openAI{chat: true}, want{record.StatusOK, 6, record.SourceUsage, 6, "length", 29, 7.762}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rec := record.New(0)
			readStream(tc.proto, capture(t, tc.file), record.NewClock(), &rec, nil)
			got := want{rec.Status, rec.OutputTokens, rec.OutputSource, len(rec.Chunks), rec.FinishReason, rec.PromptTokens, 0}
			if rec.Server != nil {
				got.decodeMs = rec.Server.DecodeMs
			}
			if tc.want.decodeMs == 0 && rec.Server != nil {
				tc.want.decodeMs = rec.Server.DecodeMs // timings present, value not pinned
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v (error %q)", got, tc.want, rec.Error)
			}
		})
	}
}

func TestTGIStream(t *testing.T) {
	t.Parallel()
	in := "data:{\"index\":1,\"token\":{\"id\":5,\"text\":\" a\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n" +
		"data:{\"index\":2,\"token\":{\"id\":6,\"text\":\" b\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n" +
		"data:{\"index\":3,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":-0.1,\"special\":true},\"generated_text\":\" a b\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":3,\"seed\":null,\"input_length\":4}}\n\n"
	rec := record.New(0)
	readStream(tgi{}, strings.NewReader(in), record.NewClock(), &rec, nil)
	var sizes []int
	for _, c := range rec.Chunks {
		sizes = append(sizes, c.Tokens)
	}
	if rec.Status != record.StatusOK || rec.OutputTokens != 3 || rec.PromptTokens != 4 || rec.FinishReason != "eos_token" || !cmp.Equal(sizes, []int{1, 1, 1}) {
		t.Errorf("status %q output %d prompt %d finish %q chunks %v", rec.Status, rec.OutputTokens, rec.PromptTokens, rec.FinishReason, sizes)
	}
	rec = record.New(0)
	readStream(tgi{}, strings.NewReader("data:{\"error\":\"Request failed during generation\",\"error_type\":\"generation\"}\n\n"), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusStreamError {
		t.Errorf("error event: status %q", rec.Status)
	}
	rec = record.New(0)
	readStream(tgi{}, strings.NewReader(in[:strings.Index(in, "data:{\"index\":3")]), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusIncomplete {
		t.Errorf("no details: status %q, want incomplete", rec.Status)
	}
}

func TestLlamaCppChunkSizes(t *testing.T) {
	t.Parallel()
	in := "data: {\"content\":\" a b\",\"tokens\":[1, 2],\"stop\":false}\n\n" +
		"data: {\"content\":\" c\",\"tokens\":[3],\"stop\":false}\n\n" +
		"data: {\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"eos\",\"tokens_predicted\":3,\"tokens_evaluated\":5,\"timings\":{\"prompt_ms\":4,\"predicted_n\":3,\"predicted_ms\":30}}\n\n"
	rec := record.New(0)
	readStream(llamaCpp{}, strings.NewReader(in), record.NewClock(), &rec, nil)
	var sizes []int
	for _, c := range rec.Chunks {
		sizes = append(sizes, c.Tokens)
	}
	// predicted_ms covers the tokens after the first: 2 of the 3 in 30 ms.
	if !cmp.Equal(sizes, []int{2, 1}) || rec.OutputTokens != 3 || rec.ChunkSource != record.SourceContinuous || math.Abs(rec.Server.DecodeTokS()-2/0.030) > 1e-9 {
		t.Errorf("chunks %v output %d chunk source %q server %+v", sizes, rec.OutputTokens, rec.ChunkSource, rec.Server)
	}
}

func FuzzTGIStream(f *testing.F) {
	seedCorpus(f)
	f.Add([]byte("data:{\"token\":{\"text\":\"a\"},\"details\":{\"generated_tokens\":1}}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rec := record.New(0)
		readStream(tgi{}, strings.NewReader(string(in)), record.NewClock(), &rec, nil)
		checkRecord(t, &rec)
	})
}

func FuzzLlamaCppStream(f *testing.F) {
	seedCorpus(f)
	f.Add([]byte("data: {\"content\":\"a\",\"tokens\":[1,2],\"stop\":true,\"tokens_predicted\":2}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rec := record.New(0)
		readStream(llamaCpp{}, strings.NewReader(string(in)), record.NewClock(), &rec, nil)
		checkRecord(t, &rec)
	})
}

func FuzzOllamaStream(f *testing.F) {
	for _, name := range []string{"ollama-generate.ndjson", "ollama-apichat.ndjson"} {
		if b, err := readCapture(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("{\"response\":\"a\",\"done\":false}\n{\"done\":true,\"eval_count\":1}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, chat := range []bool{false, true} {
			rec := record.New(0)
			readStream(ollama{chat: chat}, strings.NewReader(string(in)), record.NewClock(), &rec, nil)
			checkRecord(t, &rec)
		}
	})
}

// Ollama's native stream, as captured: one line a token while the lines
// match eval_count; where byte tokens were merged into one line (fewer
// lines than eval_count) the per-chunk counts are no longer claimed exact;
// and a stream Ollama cut for a repeated token says so.
func TestOllamaStreamShapes(t *testing.T) {
	t.Parallel()
	b, err := readCapture("ollama-generate.ndjson")
	if err != nil {
		t.Skip("capture not available:", err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	final := lines[len(lines)-1]
	pieces := lines[:len(lines)-1] // 6 pieces, eval_count 6
	read := func(in string) record.Record {
		rec := record.New(0)
		readStream(ollama{}, strings.NewReader(in), record.NewClock(), &rec, nil)
		return rec
	}
	t.Run("capture", func(t *testing.T) {
		rec := read(string(b))
		if rec.ChunkSource != record.SourceContinuous || rec.ChunkTokens() != 6 {
			t.Errorf("chunk source %q, %d chunk tokens; want exact, 6", rec.ChunkSource, rec.ChunkTokens())
		}
	})
	t.Run("byte-tokens-merged", func(t *testing.T) {
		// Two byte tokens of one character came as one line: 5 lines, 6 tokens.
		merged := strings.Join(append(pieces[:2:2], pieces[3:]...), "") + final
		rec := read(merged)
		if !rec.OK() || rec.OutputTokens != 6 || len(rec.Chunks) != 5 || rec.ChunkSource != record.SourceChunks {
			t.Errorf("%s, %d tokens in %d chunks, chunk source %q; want ok, 6 in 5, not exact", rec.Status, rec.OutputTokens, len(rec.Chunks), rec.ChunkSource)
		}
	})
	t.Run("repeat-limit", func(t *testing.T) {
		// Ollama aborts the generation with no final line after one token
		// repeated: 30 lines of " ash".
		cut := strings.Join(pieces[:5], "") + strings.Repeat(pieces[5], 30)
		rec := read(cut)
		if rec.Status != record.StatusIncomplete || !strings.Contains(rec.Error, "Ollama stops a stream when one token repeats 30 times: the last 30 pieces were all \" ash\"") {
			t.Errorf("%s %q; want incomplete with the repeat named", rec.Status, rec.Error)
		}
		// A stream cut after varied pieces gets no such hint.
		rec = read(strings.Join(pieces, ""))
		if rec.Status != record.StatusIncomplete || strings.Contains(rec.Error, "repeats") {
			t.Errorf("%s %q; want incomplete without the repeat hint", rec.Status, rec.Error)
		}
	})
}

// On Ollama's OpenAI routes a stream that ended before the finish names
// Ollama's repeat limit as the likely cause (the text is not read there).
func TestOllamaOpenAIIncompleteHint(t *testing.T) {
	t.Parallel()
	b, err := readCapture("ollama-completions.sse")
	if err != nil {
		t.Skip("capture not available:", err)
	}
	cut := string(b[:strings.Index(string(b), `"finish_reason":"length"`)])
	cut = cut[:strings.LastIndex(cut, "data: ")]
	for _, engine := range []string{"ollama", "vllm"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, cut)
		}))
		be, _ := New(Config{URL: srv.URL, Endpoint: "completions", Engine: engine, Model: "tiny"})
		rec := record.New(0)
		be.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 8}, &rec)
		be.Close()
		srv.Close()
		if hinted := strings.Contains(rec.Error, "Ollama stops a stream when one token repeats 30 times"); rec.Status != record.StatusIncomplete || hinted != (engine == "ollama") {
			t.Errorf("%s: %s %q; want incomplete, the Ollama hint only for Ollama", engine, rec.Status, rec.Error)
		}
	}
}
