package cli

import (
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// hwFlags are what the model is and what a GPU-hour costs: the inputs of
// the physical bound and of the cost per token (METRICS.md §3, §5).
type hwFlags struct {
	price                     float64
	params, active, precision string
	kvBytes                   float64
}

func (f *hwFlags) register(fs *flagSet) {
	fs.Float64Var(&f.price, "gpu-hour-price", 0, "`USD` one GPU costs an hour: the cost per million output tokens (GPUs × price × wall time / tokens)")
	fs.StringVar(&f.params, "model-params", "", "the model's parameters, `N`: 70B, 397B …; the physical bound on its tok/s (with --precision and --gpu-type)")
	fs.StringVar(&f.active, "active-params", "", "parameters active per token of a mixture of experts, `N`: 17B … (default: all of --model-params)")
	fs.StringVar(&f.precision, "precision", "", "the weights' precision, `P`: bf16, fp16, fp8, int8, fp4, int4 …")
	fs.Float64Var(&f.kvBytes, "kv-bytes", 0, "KV cache `BYTES` per token of context, all layers (default: unknown, the bound leaves KV reads out)")
}

// hardware is the stated model (nil when no size is given) or a usage
// error naming the flag at fault.
func (f *hwFlags) hardware() (*record.Hardware, error) {
	switch {
	case f.price < 0:
		return nil, usagef("--gpu-hour-price %g: want USD per GPU-hour, ≥ 0", f.price)
	case f.kvBytes < 0:
		return nil, usagef("--kv-bytes %g: want bytes, ≥ 0", f.kvBytes)
	case f.params == "" && (f.active != "" || f.precision != ""):
		return nil, usagef("--active-params and --precision need --model-params")
	case f.params == "":
		return nil, nil
	}
	hw := &record.Hardware{Precision: strings.ToLower(f.precision), KVBytesPerToken: f.kvBytes}
	var err error
	if hw.ParamsB, err = billions("--model-params", f.params); err != nil {
		return nil, err
	}
	if f.active != "" {
		if hw.ActiveParamsB, err = billions("--active-params", f.active); err != nil {
			return nil, err
		}
		if hw.ActiveParamsB > hw.ParamsB {
			return nil, usagef("--active-params %s is more than --model-params %s", f.active, f.params)
		}
	}
	if _, ok := analyze.PrecisionBytes(hw.Precision); !ok {
		return nil, usagef("--precision %q: want bf16, fp16, fp32, fp8, int8, fp4, nvfp4, mxfp4 or int4", f.precision)
	}
	return hw, nil
}

// billions reads a parameter count: 70B, 397b, 1.5T, 500M, or a bare
// number of billions.
func billions(flag, s string) (float64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	scale := 1.0
	switch {
	case strings.HasSuffix(t, "T"):
		scale, t = 1000, strings.TrimSuffix(t, "T")
	case strings.HasSuffix(t, "B"):
		t = strings.TrimSuffix(t, "B")
	case strings.HasSuffix(t, "M"):
		scale, t = 0.001, strings.TrimSuffix(t, "M")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v > 1e6 {
		return 0, usagef("%s %q: want a parameter count such as 70B, 1.5T or 500M", flag, s)
	}
	return v * scale, nil
}

// apply states the hardware and the price for runs read from files (where
// given, over what the files say) and accounts each run again.
func (f *hwFlags) apply(runs []*analyze.Run) error {
	hw, err := f.hardware()
	if err != nil {
		return err
	}
	for _, r := range runs {
		if hw != nil {
			r.Setup.Hardware = hw
		}
		if f.price > 0 {
			r.Setup.GPUHourUSD = f.price
		}
		r.Account()
	}
	return nil
}
