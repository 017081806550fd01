// Package baseline holds the published throughput figures a run can be
// compared against (embedded from baselines.yaml, or a user's file), and
// the comparison itself: both numbers, the ratio with its arithmetic, the
// per-GPU ratio when GPU counts differ, and whether the setups make the
// comparison fair (docs/METRICS.md §4).
//
//	all, _ := baseline.Builtin()
//	b := baseline.Find(all, "catid-qwen3.5-4gpu")
package baseline

import (
	_ "embed"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/tokperf/tokperf/internal/yamlfile"
)

// Baseline is one published result. A field the source does not give is
// empty, never guessed.
type Baseline struct {
	Name            string  `yaml:"name"`
	Source          string  `yaml:"source"`
	Model           string  `yaml:"model"`
	Quantization    string  `yaml:"quantization"`
	GPU             string  `yaml:"gpu"`
	GPUs            int     `yaml:"gpus"`
	Interconnect    string  `yaml:"interconnect"`
	Engine          string  `yaml:"engine"`
	Speculative     string  `yaml:"speculative"`
	Endpoint        string  `yaml:"endpoint"`
	InputTokens     int     `yaml:"input_tokens"`
	OutputTokens    int     `yaml:"output_tokens"`
	OutputTokensMax int     `yaml:"output_tokens_max"`
	Sampling        string  `yaml:"sampling"`
	PerGPU          bool    `yaml:"per_gpu"` // the figures are already per GPU
	Notes           string  `yaml:"notes"`
	Points          []Point `yaml:"points"`
}

// Point is one concurrency level of a baseline.
type Point struct {
	Concurrency   int     `yaml:"concurrency"`
	AggregateTokS float64 `yaml:"aggregate_tok_s"`
	DecodeTokS    float64 `yaml:"per_request_decode_tok_s"`
	Tokens        int     `yaml:"tokens"`
	WallS         float64 `yaml:"wall_s"`
	TPOTMs        float64 `yaml:"tpot_ms"`
}

//go:embed baselines.yaml
var builtin []byte

// Builtin is the registry shipped with tokperf.
func Builtin() []Baseline {
	bs, err := Parse("baselines.yaml (built in)", builtin)
	if err != nil {
		panic(err) // embedded at build time; a test parses it
	}
	return bs
}

// Load reads a user's baselines file.
func Load(path string) ([]Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading baselines: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a list of baselines; errors name file, line and field.
func Parse(file string, data []byte) ([]Baseline, error) {
	var bs []Baseline
	if err := yamlfile.Decode(file, data, &bs); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for i, b := range bs {
		f := fmt.Sprintf("[%d]", i)
		var err error
		switch {
		case b.Name == "":
			err = yamlfile.Fieldf(f+".name", "is required")
		case names[b.Name]:
			err = yamlfile.Fieldf(f+".name", "%q appears twice", b.Name)
		case b.GPUs < 0:
			err = yamlfile.Fieldf(f+".gpus", "must not be negative")
		case len(b.Points) == 0:
			err = yamlfile.Fieldf(f+".points", "needs at least one point")
		}
		for j, p := range b.Points {
			if err != nil {
				break
			}
			pf := fmt.Sprintf("%s.points[%d]", f, j)
			switch {
			case p.Concurrency < 1:
				err = yamlfile.Fieldf(pf+".concurrency", "must be at least 1, got %d", p.Concurrency)
			case !(p.AggregateTokS > 0):
				err = yamlfile.Fieldf(pf+".aggregate_tok_s", "must be positive, got %v", p.AggregateTokS)
			case p.DecodeTokS < 0 || p.Tokens < 0 || p.WallS < 0 || p.TPOTMs < 0:
				err = yamlfile.Fieldf(pf, "figures must not be negative")
			}
		}
		if err != nil {
			return nil, yamlfile.Locate(file, data, err)
		}
		names[b.Name] = true
	}
	return bs, nil
}

// Find returns the baseline with that name, or nil.
func Find(bs []Baseline, name string) *Baseline {
	for i := range bs {
		if bs[i].Name == name {
			return &bs[i]
		}
	}
	return nil
}

// Names lists the baselines' names, sorted.
func Names(bs []Baseline) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	sort.Strings(out)
	return out
}

// Point returns the baseline's point at concurrency c, or nil.
func (b *Baseline) Point(c int) *Point {
	for i := range b.Points {
		if b.Points[i].Concurrency == c {
			return &b.Points[i]
		}
	}
	return nil
}

// Normalize makes a setup value comparable: lower case, without a
// parenthesised remark ("(as quoted)") and extra spaces.
func Normalize(s string) string {
	if i := strings.Index(s, "("); i >= 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}
