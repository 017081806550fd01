package foreign

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadFrom holds every parser to bad input: an error or a run that
// renders as JSON, never a panic or a hang. Seeded with each tool's fixture.
func FuzzReadFrom(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"server_info":{},"completed":1,"request_rate":Infinity}`))
	f.Add([]byte(`{"benchmarks":[{"config":{"strategy":{"type_":"synchronous"}},"metrics":{"request_totals":{}}}],"config":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := ReadFrom(bytes.NewReader(b), "fuzz.json")
		if err != nil {
			return
		}
		if _, err := json.Marshal(run); err != nil {
			t.Fatalf("the run does not render as JSON: %v", err)
		}
	})
}
