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
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/yamlfile"
)

// Baseline is one published result. A field the source does not give is
// empty, never guessed.
type Baseline struct {
	Name            string  `yaml:"name" json:"name,omitempty"`
	Source          string  `yaml:"source" json:"source,omitempty"`
	Model           string  `yaml:"model" json:"model,omitempty"`
	Quantization    string  `yaml:"quantization" json:"quantization,omitempty"`
	GPU             string  `yaml:"gpu" json:"gpu,omitempty"`
	GPUs            int     `yaml:"gpus" json:"gpus,omitempty"`
	Interconnect    string  `yaml:"interconnect" json:"interconnect,omitempty"`
	Engine          string  `yaml:"engine" json:"engine,omitempty"`
	Speculative     string  `yaml:"speculative" json:"speculative,omitempty"`
	Endpoint        string  `yaml:"endpoint" json:"endpoint,omitempty"`
	InputTokens     int     `yaml:"input_tokens" json:"input_tokens,omitempty"`
	OutputTokens    int     `yaml:"output_tokens" json:"output_tokens,omitempty"`
	OutputTokensMax int     `yaml:"output_tokens_max" json:"output_tokens_max,omitempty"`
	Sampling        string  `yaml:"sampling" json:"sampling,omitempty"`
	PerGPU          bool    `yaml:"per_gpu" json:"per_gpu,omitempty"` // the figures are already per GPU
	Notes           string  `yaml:"notes" json:"notes,omitempty"`
	Points          []Point `yaml:"points" json:"points,omitempty"`
}

// Point is one concurrency level of a baseline.
type Point struct {
	Concurrency   int     `yaml:"concurrency" json:"concurrency,omitempty"`
	AggregateTokS float64 `yaml:"aggregate_tok_s" json:"aggregate_tok_s,omitempty"`
	DecodeTokS    float64 `yaml:"per_request_decode_tok_s" json:"per_request_decode_tok_s,omitempty"`
	Tokens        int     `yaml:"tokens" json:"tokens,omitempty"`
	WallS         float64 `yaml:"wall_s" json:"wall_s,omitempty"`
	TPOTMs        float64 `yaml:"tpot_ms" json:"tpot_ms,omitempty"`
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
	data, err := infile.ReadAll(context.Background(), path, infile.Config)
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
