package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

// A record's tool calls and tool-call tokens are written under tool_calls
// (id, name, args: short keys, a file may hold millions) and read back
// as they were.
func TestToolCallsRoundTrip(t *testing.T) {
	t.Parallel()
	r := records()[0]
	r.ToolCalls = []record.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "noop"}}
	r.ToolTokens, r.ToolSource = 3, record.SourceContinuous
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, header())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `"tool_calls":[{"id":"call_1","name":"get_weather","args":"{\"city\":\"Paris\"}"},{"name":"noop"}],"tool_tokens":3,"tool_source":"continuous"`
	if !strings.Contains(string(b), want) {
		t.Errorf("the file lacks %s:\n%s", want, b)
	}
	_, recs, _, err := ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]record.Record{r}, recs); diff != "" {
		t.Errorf("records (-wrote +read):\n%s", diff)
	}
}
