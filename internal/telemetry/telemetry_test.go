package telemetry

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	f.Add([]byte("x +Inf\nx -Inf\ny NaN\nz{a=\"}\"} 1e308\nz 1e308\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Parse(strings.NewReader(string(in)))
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || math.IsNaN(v) {
				t.Fatalf("metric %q = %v", k, v)
			}
		}
	})
}

// TestParseNotFinite: +Inf and -Inf are not summed into a NaN.
func TestParseNotFinite(t *testing.T) {
	t.Parallel()
	m, err := Parse(strings.NewReader("x +Inf\nx -Inf\nx 2\ny NaN\n"))
	if err != nil || m["x"] != 2 || len(m) != 1 {
		t.Errorf("%v %v: want x=2 alone", m, err)
	}
	if s, err := ParseGPULine("0, GPU, NaN, 100, Inf, -Inf"); err != nil || s.MemUsedMiB != 0 || s.UtilPct != 0 || s.PowerW != 0 {
		t.Errorf("not finite readings: %+v %v", s, err)
	}
}

// FuzzParseGPULine: any line nvidia-smi might print (or a broken pipe
// might leave) is a sample or an error, and a sample holds finite,
// readable figures.
func FuzzParseGPULine(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "nvidia-smi.csv"))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f.Add(l)
	}
	f.Add("0, GPU, NaN, 100, Inf, -Inf")
	f.Add("garbage")
	f.Add(",,,,,")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseGPULine(line)
		if err != nil {
			return
		}
		for _, v := range []float64{s.MemUsedMiB, s.MemTotalMiB, s.UtilPct, s.PowerW} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %+v", line, s)
			}
		}
	})
}

func TestParseGPULine(t *testing.T) {
	t.Parallel()
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
