package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check's tool-call item: a server whose calls name a sent tool with the
// required arguments passes; one whose calls name a tool that was never
// sent fails, naming it; on an endpoint that sends no tools the item is
// not judged, which is no failure.
func TestCheckToolCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("name: tiny\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\ntools: {probability: 1, arguments_tokens: 5}\n"), 0o644)
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("name: tiny\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\ntools: {probability: 1}\nwire: {wrong_answers: true}\n"), 0o644)
	for _, tc := range []struct {
		profile, endpoint, want string
		code                    int
	}{
		{good, "chat", "ok   tool calls: get_", 0},
		{good, "responses", "ok   tool calls: get_", 0},
		{good, "messages", "ok   tool calls: get_", 0},
		{broken, "chat", `FAIL tool calls: call 1 names "get_`, exitVerdictFail},
		{good, "completions", "note tool calls not judged: the server answered with text", 0},
	} {
		out, errw, code := runVirtual(t, "check", "--sim-profile", tc.profile, "--endpoint", tc.endpoint, "--questions", "4", "-o", filepath.Join(dir, tc.endpoint+filepath.Base(tc.profile)+".jsonl"))
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s on %s: exit %d, want %d and %q\n%s\n%s", filepath.Base(tc.profile), tc.endpoint, code, tc.code, tc.want, out, errw)
		}
	}
}

// --endpoint responses and messages read the server's OpenAPI document
// (vLLM's and SGLang's /openapi.json): a route it lists goes on, its
// routes recorded in the result header; a route it leaves out is warned
// of before the run, and the run's 404s follow.
func TestEndpointRoutesDetected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.yaml")
	os.WriteFile(old, []byte("name: tiny\nengine: vllm\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\nwire: {no_routes: [/v1/messages]}\n"), 0o644)
	out := filepath.Join(dir, "r.jsonl")
	_, errw, code := runVirtual(t, "run", "--sim-profile", old, "--endpoint", "responses", "-c", "2", "--requests", "4", "-o", out)
	b, _ := os.ReadFile(out)
	if code != 0 || strings.Contains(errw, "does not list") || !strings.Contains(string(b), `"routes":["chat","completions","responses"]`) {
		t.Errorf("responses: exit %d, routes in the header: %v\n%s", code, strings.Contains(string(b), `"routes"`), errw)
	}
	_, errw, code = runVirtual(t, "run", "--sim-profile", old, "--endpoint", "/v1/messages", "-c", "2", "--requests", "4", "-o", filepath.Join(dir, "m.jsonl"))
	if code == 0 || !strings.Contains(errw, "warning: --endpoint messages: the server's OpenAPI document does not list its route (it lists chat, completions, responses)") {
		t.Errorf("messages: exit %d\n%s", code, errw)
	}
}
