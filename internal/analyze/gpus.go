package analyze

import (
	"regexp"
	"strings"
)

// GPUSpec is a GPU's published peak memory bandwidth and dense (no
// sparsity) tensor throughput, per GPU. The bound on a figure uses peaks,
// so a real server never reaches it: a figure above it is a miscount.
type GPUSpec struct {
	Name string  `json:"name"`
	TBs  float64 `json:"hbm_tb_s"` // memory bandwidth, TB/s (10^12 bytes)
	// BF16, FP8 and FP4 are dense TFLOPS; FP8 is INT8 TOPS on a GPU with
	// no FP8 (A100), FP4 0 on a GPU with no 4-bit units.
	BF16   float64 `json:"bf16_tflops"`
	FP8    float64 `json:"fp8_tflops"`
	FP4    float64 `json:"fp4_tflops,omitempty"`
	Source string  `json:"source"`
	match  *regexp.Regexp
}

// gpuSpecs are the common GPUs, each from its maker's datasheet. Where a
// sheet gives "with sparsity" figures only, the dense one is half.
// Patterns are tried in order, the more specific first; a name that
// could be either of two variants takes the faster, so the bound errs
// high, never low.
var gpuSpecs = []GPUSpec{
	{Name: "H100 PCIe", TBs: 2.0, BF16: 756, FP8: 1513, Source: "https://www.nvidia.com/en-us/data-center/h100/ (H100 PCIe: 2 TB/s; 1,513 BF16 and 3,026 FP8 TFLOPS with sparsity)",
		match: regexp.MustCompile(`h100.*pcie`)},
	{Name: "H100 SXM", TBs: 3.35, BF16: 989, FP8: 1979, Source: "https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM: 3.35 TB/s; 1,979 BF16 and 3,958 FP8 TFLOPS with sparsity)",
		match: regexp.MustCompile(`h100`)},
	{Name: "H200", TBs: 4.8, BF16: 989, FP8: 1979, Source: "https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM: 4.8 TB/s; 1,979 BF16 and 3,958 FP8 TFLOPS with sparsity)",
		match: regexp.MustCompile(`h200`)},
	{Name: "B200", TBs: 8, BF16: 2250, FP8: 4500, FP4: 9000, Source: "https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200, 8 GPUs: 64 TB/s; 36 PFLOPS FP16/BF16, 72 FP8, 144 FP4 with sparsity)",
		match: regexp.MustCompile(`(^|[^g])b200`)},
	{Name: "A100 SXM", TBs: 2.039, BF16: 312, FP8: 624, Source: "https://www.nvidia.com/en-us/data-center/a100/ (A100 80GB SXM: 2,039 GB/s; 312 BF16 TFLOPS, 624 INT8 TOPS dense; no FP8)",
		match: regexp.MustCompile(`a100`)},
	{Name: "L40S", TBs: 0.864, BF16: 362, FP8: 733, Source: "https://www.nvidia.com/en-us/data-center/l40s/ (864 GB/s; 733 BF16 and 1,466 FP8 TFLOPS with sparsity)",
		match: regexp.MustCompile(`l40s`)},
	{Name: "RTX PRO 6000 Blackwell", TBs: 1.792, BF16: 500, FP8: 1000, FP4: 2000, Source: "https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/ (1,597 GB/s server, 1,792 GB/s workstation; 4 PFLOPS FP4 with sparsity, FP8 and BF16 halving it)",
		match: regexp.MustCompile(`rtx.?pro.?6000`)},
	{Name: "MI300X", TBs: 5.3, BF16: 1307.4, FP8: 2614.9, Source: "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (5.3 TB/s; 1,307.4 BF16 and 2,614.9 FP8 TFLOPS dense)",
		match: regexp.MustCompile(`mi300x`)},
	{Name: "MI325X", TBs: 6, BF16: 1307.4, FP8: 2614.9, Source: "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html (6 TB/s; 1,307.4 BF16 and 2,614.9 FP8 TFLOPS dense)",
		match: regexp.MustCompile(`mi325x`)},
}

// LookupGPU is the published spec of a GPU named as nvidia-smi, DCGM or a
// user names it ("NVIDIA H100 80GB HBM3", "h200"); false when the table
// has none.
func LookupGPU(name string) (GPUSpec, bool) {
	n := strings.ToLower(name)
	for _, g := range gpuSpecs {
		if g.match.MatchString(n) {
			return g, true
		}
	}
	return GPUSpec{}, false
}

// GPUNames are the GPUs the table knows, for help and errors.
func GPUNames() []string {
	var out []string
	for _, g := range gpuSpecs {
		out = append(out, g.Name)
	}
	return out
}

// PrecisionBytes is the bytes a weight takes at a precision; false for
// one not known (a GGUF's mix: give the bits, e.g. int4).
func PrecisionBytes(p string) (float64, bool) {
	switch strings.ToLower(p) {
	case "fp32":
		return 4, true
	case "bf16", "fp16":
		return 2, true
	case "fp8", "int8", "w8a8":
		return 1, true
	case "fp4", "nvfp4", "mxfp4", "int4", "w4a16", "awq", "gptq":
		return 0.5, true
	}
	return 0, false
}

// TFLOPS is the GPU's dense peak at a precision's bytes per weight: the
// fastest unit the math can run on (4-bit weights on a GPU without 4-bit
// units are computed at 8 bits or wider, so the 8-bit peak bounds them).
func (g GPUSpec) TFLOPS(bytes float64) float64 {
	switch {
	case bytes <= 0.5 && g.FP4 > 0:
		return g.FP4
	case bytes <= 1:
		return g.FP8
	}
	return g.BF16
}
