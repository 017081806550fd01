package telemetry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `# HELP x a thing
# TYPE x counter
x 3
x{model="a"} 4
h_bucket{le="0.1"} 7
h_sum 1.5
h_count 7
g{a="}"} 2.5e3
`
	m, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m["x"] != 7 || m["h_sum"] != 1.5 || m["h_count"] != 7 || m["g"] != 2500 {
		t.Errorf("parsed %v", m)
	}
	if _, ok := m["h_bucket"]; ok {
		t.Error("buckets kept")
	}
	if _, err := Parse(strings.NewReader("x{a=\"b\" 1\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("unclosed labels: %v", err)
	}
}

// The real llama.cpp /metrics capture parses.
func TestParseLlamaCapture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", "llama-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if m["llamacpp:tokens_predicted_total"] != 2048 || m["llamacpp:prompt_tokens_total"] != 196 {
		t.Errorf("parsed %v", m)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("x 1\ny{a=\"b\"} 2\n# c\n"))
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", "llama-metrics.txt")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		Parse(strings.NewReader(string(in)))
	})
}

func TestParseGPULine(t *testing.T) {
	s, err := ParseGPULine("3, NVIDIA H100 80GB HBM3, 40500, 81559, 87, 612.33")
	if err != nil || s.Index != 3 || s.Name != "NVIDIA H100 80GB HBM3" || s.PowerW != 612.33 || s.MemUsedMiB != 40500 {
		t.Errorf("%+v %v", s, err)
	}
	if s, err := ParseGPULine("0, GPU, [N/A], 100, [N/A], [N/A]"); err != nil || s.PowerW != 0 {
		t.Errorf("N/A: %+v %v", s, err)
	}
	if _, err := ParseGPULine("garbage"); err == nil {
		t.Error("garbage accepted")
	}
}
