package report

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// PresetLine is the header's line of a run's preset: what it set, which
// of the user's flags won, and where its figures come from.
func PresetLine(p *record.Preset) string {
	s := "preset " + p.Name + ": set " + strings.Join(p.Set, ", ")
	if len(p.Set) == 0 {
		s = "preset " + p.Name + ": set nothing"
	}
	if len(p.Kept) > 0 {
		s += "; yours kept: " + strings.Join(p.Kept, ", ")
	}
	return s + " (source: " + p.Source + ")"
}

// ShapeLines are a run's preset figures and verdicts, one line each:
// InferenceX's per-level figures, MLPerf's Server verdict per stage.
func ShapeLines(r *analyze.Run) []string {
	sh := r.Shape
	if sh == nil {
		return nil
	}
	var out []string
	if len(sh.Levels) > 0 {
		out = append(out, "preset "+sh.Preset+", as InferenceX reports a level (tok/s per GPU = input and output tok/s / GPUs; interactivity = 1000 / median TPOT ms):")
	}
	for _, l := range sh.Levels {
		gpu := "tok/s per GPU unknown (give --gpus)"
		if l.TokSPerGPU > 0 {
			gpu = fmt.Sprintf("%.1f tok/s per GPU (%.1f output)", l.TokSPerGPU, l.OutputTokSPerGPU)
		}
		out = append(out, fmt.Sprintf("  C=%d: %s, interactivity %.1f tok/s per user", l.Concurrency, gpu, l.InteractivityTokS))
	}
	for _, v := range sh.Verdicts {
		out = append(out, fmt.Sprintf("preset %s, %s: %s", sh.Preset, v.Stage, v.Text))
	}
	return out
}
