package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/memnet"
)

// sseObjects returns a stream's JSON events (SSE data or NDJSON lines).
func sseObjects(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "data:"))
		if line == "" || line == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// rawExchange sends one HTTP/1.1 request on a new connection and returns
// the response head and the payload of each chunk of its chunked body: one
// a flush of the server's writer. open reports whether the server
// left the connection open after the response.
func rawExchange(t *testing.T, n *memnet.Net, path, body string) (head string, chunks []string, open bool) {
	t.Helper()
	conn, err := n.Dial(context.Background(), "tcp", "sim")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	r := bufio.NewReader(conn)
	var h strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the head: %v", err)
		}
		if line == "\r\n" {
			break
		}
		h.WriteString(line)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a chunk size: %v", err)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			break
		}
		chunks = append(chunks, string(data[:size]))
	}
	// A closed connection reads EOF at once; an open one blocks until the
	// server ends, which in the bubble is only after fn returns.
	fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: sim\r\n\r\n")
	_, err = r.ReadString('\n')
	return h.String(), chunks, err == nil
}

func specTiny(t *testing.T) *Profile {
	p := mustProfile(t, "tiny")
	p.Spec = &Spec{Method: "MTP", Drafts: 3, Acceptance: 0.7}
	return p
}

// With usage_at_end, continuous_usage_stats is ignored: the chunks, several
// tokens each under speculation, carry no usage; the final chunk does.
func TestUsageAtEnd(t *testing.T) {
	t.Parallel()
	for _, atEnd := range []bool{false, true} {
		t.Run(fmt.Sprint("usage_at_end=", atEnd), func(t *testing.T) {
			p := specTiny(t)
			p.Wire.UsageAtEnd = atEnd
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				_, _, body := do(t, c, "POST", "/v1/completions", `{"prompt":"a b","max_tokens":40,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
				objs := sseObjects(t, body)
				packed, withUsage, tokens := 0, 0, 0
				for _, o := range objs[:len(objs)-1] {
					text := o["choices"].([]any)[0].(map[string]any)["text"].(string)
					tokens += countTokens(text)
					if countTokens(text) > 1 {
						packed++
					}
					if o["usage"] != nil {
						withUsage++
					}
				}
				final := objs[len(objs)-1]
				if u, _ := final["usage"].(map[string]any); u == nil || u["completion_tokens"] != 40.0 || len(final["choices"].([]any)) != 0 {
					t.Errorf("final chunk %v, want choices [] and usage of 40 tokens", final)
				}
				if tokens != 40 || packed == 0 {
					t.Errorf("%d tokens, %d chunks of several tokens; want 40 tokens, some packed", tokens, packed)
				}
				if want := len(objs) - 1; atEnd && withUsage != 0 || !atEnd && withUsage != want {
					t.Errorf("%d of %d token chunks carry usage", withUsage, want)
				}
			})
		})
	}
}

// events_per_write: 3 puts three events in each write (one HTTP chunk), the
// trace shows them leaving together, and the last goes at once.
func TestEventsPerWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		per  int
		want []int // data: events per write
	}{
		{0, []int{1, 1, 1, 1, 1, 1, 2}}, // the last write holds [DONE] too
		{3, []int{3, 3, 2}},
		{8, []int{8}},
	} {
		t.Run(fmt.Sprint(tc.per), func(t *testing.T) {
			p := mustProfile(t, "tiny")
			p.Wire.EventsPerWrite = tc.per
			serveVirtualNet(t, p, Options{}, nil, func(n *memnet.Net, s *Server) {
				_, chunks, _ := rawExchange(t, n, "/v1/completions", `{"prompt":"a b","max_tokens":7,"ignore_eos":true,"stream":true}`)
				var got []int
				for _, c := range chunks {
					got = append(got, strings.Count(c, "data: "))
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("events per write %v, want %v", got, tc.want)
				}
				tr := s.Trace()
				if len(tr) != 1 || len(tr[0].Chunks) != 7 {
					t.Fatalf("trace %+v", tr)
				}
				writes := map[int64]int{}
				for _, c := range tr[0].Chunks {
					writes[c.At.UnixNano()]++
				}
				if len(writes) != len(tc.want) {
					t.Errorf("trace chunks left in %d writes, want %d", len(writes), len(tc.want))
				}
			})
		})
	}
}

// omit_usage: no usage object on the OpenAI routes even when asked, no
// details on TGI's stream unless asked, no token ids from llama.cpp.
func TestOmitUsageEverywhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, engine, path, body string
		absent, present          string // a key path never / somewhere in the answer
	}{
		{"completions-stream", "vllm", "/v1/completions", `{"prompt":"a b","max_tokens":5,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, "usage", "choices[].text"},
		{"chat-stream", "vllm", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`, "usage", "choices[].delta.content"},
		{"chat", "vllm", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":5}`, "usage", "choices[].message.content"},
		{"tgi-stream", "tgi", "/generate_stream", `{"inputs":"a b","parameters":{"max_new_tokens":5}}`, "details.generated_tokens", "generated_text"},
		{"tgi-stream-details-asked", "tgi", "/generate_stream", `{"inputs":"a b","parameters":{"max_new_tokens":5,"details":true}}`, "", "details.generated_tokens"},
		{"llamacpp-stream", "llamacpp", "/completion", `{"prompt":"a b","n_predict":5,"stream":true}`, "tokens[]", "content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := withEngine(t, tc.engine)
			p.Wire.OmitUsage = true
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				_, _, body := do(t, c, "POST", tc.path, tc.body)
				keys := map[string]bool{}
				for _, o := range sseObjects(t, body) {
					keyPaths(o, "", keys)
				}
				if tc.absent != "" && keys[tc.absent] {
					t.Errorf("%q sent: %s", tc.absent, body)
				}
				if !keys[tc.present] {
					t.Errorf("%q missing: %s", tc.present, body)
				}
			})
		})
	}
}

// A chat request that offers tools is answered with a call of a tool when
// the profile says tool_calls: true (one of the tools sent, or the one
// tool_choice names); the arguments' fragments join into JSON.
func TestToolCalls(t *testing.T) {
	t.Parallel()
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}},{"type":"function","function":{"name":"other"}}]`
	for _, tc := range []struct {
		name    string
		enabled bool
		extra   string
		tool    string // "" for a content answer
	}{
		{"a-sent-tool", true, "", "get_weather|other"},
		{"named-tool", true, `,"tool_choice":{"type":"function","function":{"name":"other"}}`, "other"},
		{"tool-choice-none", true, `,"tool_choice":"none"`, ""},
		{"profile-without-tool-calls", false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProfile(t, "tiny")
			p.Wire.ToolCalls = tc.enabled
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				req := `{"messages":[{"role":"user","content":"weather?"}],"max_tokens":6,"ignore_eos":true,` + tools + tc.extra
				_, _, body := do(t, c, "POST", "/v1/chat/completions", req+`,"stream":true}`)
				objs := sseObjects(t, body)
				var args, name, finish string
				content := 0
				for i, o := range objs {
					ch := o["choices"].([]any)[0].(map[string]any)
					if f, ok := ch["finish_reason"].(string); ok {
						finish = f
					}
					d := ch["delta"].(map[string]any)
					if s, _ := d["content"].(string); s != "" {
						content++
					}
					calls, _ := d["tool_calls"].([]any)
					if len(calls) == 0 {
						continue
					}
					call := calls[0].(map[string]any)
					fn := call["function"].(map[string]any)
					if n, _ := fn["name"].(string); n != "" {
						name = n
						if i != 1 || call["id"] == nil || call["type"] != "function" {
							t.Errorf("the call's head is in chunk %d: %v", i, call)
						}
					}
					args += fn["arguments"].(string)
				}
				var parsed struct{ Text string }
				if tc.tool == "" {
					if content != 6 || finish != "length" || name != "" {
						t.Errorf("%d content chunks, finish %q, tool %q; want 6 content chunks and no call", content, finish, name)
					}
					return
				}
				if err := json.Unmarshal([]byte(args), &parsed); err != nil || countTokens(parsed.Text) != 6 {
					t.Errorf("arguments %q (%v), want JSON with 6 words", args, err)
				}
				if !slices.Contains(strings.Split(tc.tool, "|"), name) || finish != "tool_calls" || content != 0 {
					t.Errorf("tool %q, finish %q, %d content chunks; want %s, tool_calls, none", name, finish, content, tc.tool)
				}
				_, _, whole := do(t, c, "POST", "/v1/chat/completions", req+`}`)
				var resp struct {
					Choices []struct {
						FinishReason string `json:"finish_reason"`
						Message      struct {
							ToolCalls []toolCall `json:"tool_calls"`
						}
					}
				}
				if err := json.Unmarshal(whole, &resp); err != nil || len(resp.Choices) != 1 || len(resp.Choices[0].Message.ToolCalls) != 1 || resp.Choices[0].FinishReason != "tool_calls" {
					t.Fatalf("non-streamed answer %s (%v)", whole, err)
				}
				call := resp.Choices[0].Message.ToolCalls[0]
				if !slices.Contains(strings.Split(tc.tool, "|"), call.Function.Name) || !json.Valid([]byte(call.Function.Arguments)) || !bytes.Contains(whole, []byte(`"type":"function"`)) {
					t.Errorf("non-streamed call %+v", call)
				}
			})
		})
	}
}
