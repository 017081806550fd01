package cli

import "github.com/tokperf/tokperf/internal/bench"

// registerLive adds --live (run, sweep, soak): a live output of the run's
// own client-side metrics, listening only where asked.
func registerLive(fs *flagSet, live *string) {
	fs.StringVar(live, "live", "", "serve tokperf's own client-side metrics while the run goes on: prometheus=ADDR serves /metrics at ADDR (e.g. prometheus=127.0.0.1:9464): requests in flight, ended by status, errors, output tokens, TTFT and ITL histograms (tokperf_client_*); closed when the run ends")
}

// checkLive reads --live into liveOut.
func (f *loadFlags) checkLive() error {
	if f.live == "" {
		return nil
	}
	o, err := bench.ParseOutput(f.live)
	if err != nil {
		return usagef("%v", err)
	}
	f.liveOut = &o
	return nil
}
