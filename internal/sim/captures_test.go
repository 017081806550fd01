package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// streamShape is what a stream's bytes say about its server, read the
// same way from a capture and from the simulator.
type streamShape struct {
	roleFirst bool            // a chat stream opens with a role-only chunk
	done      bool            // it ends with [DONE]
	objects   map[string]bool // "object" names
	ids       map[string]bool // id prefixes: "chatcmpl-", "cmpl-", "" for an empty id
	finishes  map[string]bool // the finish reasons it gives
	midFinish map[string]bool // what finish_reason holds before the end: null, ""
	usage     string          // where its counts are: none, last (the finishing chunk), after (a chunk of its own), every
	usageNull bool            // chunks without counts say "usage": null
	fields    map[string]bool // key paths of every event
}

func shapeOf(t *testing.T, body []byte) streamShape {
	t.Helper()
	sh := streamShape{objects: map[string]bool{}, ids: map[string]bool{}, finishes: map[string]bool{}, midFinish: map[string]bool{}, fields: map[string]bool{}, usage: "none"}
	var events []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			if line != "" && line[0] == '{' { // a JSON body or NDJSON
				data = line
			} else {
				continue
			}
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			sh.done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		events = append(events, m)
	}
	finished := false
	for i, e := range events {
		keyPaths(e, "", sh.fields)
		if o, ok := e["object"].(string); ok {
			sh.objects[o] = true
		}
		if id, ok := e["id"].(string); ok {
			p, _, found := strings.Cut(id, "-")
			if !found || id == "" {
				p = ""
			} else {
				p += "-"
			}
			sh.ids[p] = true
		}
		u, has := e["usage"]
		counts, _ := u.(map[string]any)
		if has && u == nil {
			sh.usageNull = true
		}
		choices, _ := e["choices"].([]any)
		for _, c := range choices {
			ch, _ := c.(map[string]any)
			switch f := ch["finish_reason"].(type) {
			case string:
				if f != "" {
					sh.finishes[f], finished = true, true
				} else {
					sh.midFinish[`""`] = true
				}
			case nil:
				sh.midFinish["null"] = true
			}
			if d, ok := ch["delta"].(map[string]any); ok && i == 0 {
				content, _ := d["content"].(string)
				_, tools := d["tool_calls"]
				sh.roleFirst = d["role"] != nil && content == "" && !tools && ch["finish_reason"] == nil
			}
		}
		if counts != nil && counts["completion_tokens"] != nil {
			switch {
			case len(choices) == 0:
				sh.usage = "after"
			case !finished:
				sh.usage = "every"
			case sh.usage == "none":
				sh.usage = "last"
			}
		}
	}
	return sh
}

func sortedSet(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// captureCase pairs a capture with the request that makes the simulator,
// passing for the engine, answer the same question.
type captureCase struct {
	capture, engine, path, body string
	// framed: the file keeps the server's own framing ([DONE] or not);
	// false where a snapshot kept only its events (testdata/wire/README.md).
	framed bool
	// extra are fields the capture has that the simulator leaves out, and why.
	extra map[string]string
	// eos is the profile's chance to end at each token: the captures that
	// end at the end of a sequence need one.
	eos float64
}

var captureCases = []captureCase{
	{capture: "tgi-3.1.1-chat-stream.sse", engine: "tgi", path: "/v1/chat/completions",
		body: `{"messages":[{"role":"user","content":"a"}],"max_tokens":30,"stream":true}`, eos: 0.1},
	{capture: "tgi-3.1.1-chat-stream-usage.sse", engine: "tgi", path: "/v1/chat/completions",
		body: `{"messages":[{"role":"user","content":"a"}],"max_tokens":30,"stream":true,"stream_options":{"include_usage":true}}`, eos: 0.1},
	{capture: "tgi-3.1.2-chat-stream-usage-length.sse", engine: "tgi", path: "/v1/chat/completions",
		body:  `{"messages":[{"role":"user","content":"a"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		extra: map[string]string{"choices[].delta.tool_calls": "TGI 3.1.2 writes tool_calls: null on every delta; a client reads nothing from it"}},
	{capture: "tgi-2.3.1-completions-stream-usage.sse", engine: "tgi", path: "/v1/completions",
		body: `{"prompt":"a b","max_tokens":30,"stream":true}`, eos: 0.1,
		extra: map[string]string{"usage.completion_tokens_details": "TGI 2.3 writes null details", "usage.prompt_tokens_details": "TGI 2.3 writes null details"}},
	{capture: "vllm-completions-stream.sse", engine: "vllm", path: "/v1/completions", framed: true,
		body: `{"prompt":"a b","max_tokens":30,"stream":true}`, eos: 0.1},
	{capture: "sglang-generate-nonstream.json", engine: "sglang", path: "/generate", framed: true,
		body: `{"text":"a b","sampling_params":{"max_new_tokens":4}}`,
		extra: map[string]string{
			"meta_info.num_retractions": "retractions: the simulator never retracts", "meta_info.cached_tokens_details": "null unless hierarchical caching",
			"meta_info.dp_rank": "null without data parallelism", "meta_info.response_sent_to_client_ts": "a wall-clock stamp, no reading of it"}},
	{capture: "openai-completions-usage.sse", engine: "openai", path: "/v1/completions",
		body: `{"prompt":"a b","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`},
	{capture: "llama-chat-usage.sse", engine: "llamacpp", path: "/v1/chat/completions", framed: true,
		body: `{"messages":[{"role":"user","content":"a b"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`},
	{capture: "ollama-chat-usage.sse", engine: "ollama", path: "/v1/chat/completions", framed: true,
		body: `{"messages":[{"role":"user","content":"a b"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`},
	{capture: "tgi-2.0.3-generate-stream.sse", engine: "tgi", path: "/generate_stream", framed: true,
		body: `{"inputs":"a b","parameters":{"max_new_tokens":4}}`},
}

// The simulator's streams are shaped like the real captures of each engine
// it imitates: event sequence (a role-only first chunk or not), the final
// event ([DONE] or not), where the counts are, object names, id prefixes,
// finish reasons before and at the end, and field names both ways (every
// field the capture has, bar the named exceptions, and none it lacks).
// Each difference is named.
func TestSimulatorSpeaksLikeCaptures(t *testing.T) {
	t.Parallel()
	for _, tc := range captureCases {
		t.Run(tc.capture, func(t *testing.T) {
			real, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", tc.capture))
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			p := withEngine(t, tc.engine)
			p.EOSProbability = tc.eos
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				_, _, body = do(t, c, "POST", tc.path, tc.body)
			})
			for _, d := range shapeDiff(shapeOf(t, real), shapeOf(t, body), tc) {
				t.Errorf("%s on %s: %s\n%s", tc.engine, tc.path, d, body)
			}
		})
	}
}

// shapeDiff names every way sim differs from real.
func shapeDiff(real, sim streamShape, tc captureCase) []string {
	var out []string
	say := func(what string, r, s any) {
		if fmt.Sprint(r) != fmt.Sprint(s) {
			out = append(out, fmt.Sprintf("%s: the capture %v, the simulator %v", what, r, s))
		}
	}
	say("role-only first chunk", real.roleFirst, sim.roleFirst)
	if tc.framed {
		say("[DONE] at the end", real.done, sim.done)
	}
	say("objects", sortedSet(real.objects), sortedSet(sim.objects))
	say("id prefixes", sortedSet(real.ids), sortedSet(sim.ids))
	say("finish reasons", sortedSet(real.finishes), sortedSet(sim.finishes))
	say("finish_reason before the end", sortedSet(real.midFinish), sortedSet(sim.midFinish))
	say("usage placement", real.usage, sim.usage)
	say(`"usage": null on chunks without counts`, real.usageNull, sim.usageNull)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range sim.fields {
			if !yield(k) {
				return
			}
		}
	}) {
		if !real.fields[k] {
			out = append(out, fmt.Sprintf("the simulator sends %q, the capture never does", k))
		}
	}
	for k := range real.fields {
		if !sim.fields[k] && tc.extra[k] == "" {
			out = append(out, fmt.Sprintf("the capture has %q, the simulator never sends it", k))
		}
	}
	slices.Sort(out)
	return out
}
