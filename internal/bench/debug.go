package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// Debug serves the Go profiler (/debug/pprof/) and a count of goroutines
// and heap (/debug/vars as plain text) on addr until ctx ends, for looking
// into a long run; it returns the address it listens on.
func Debug(ctx context.Context, addr string, env *Env) (string, error) {
	ln, err := env.listen(addr)
	if err != nil {
		return "", fmt.Errorf("--debug-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/vars", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "goroutines %d\nheap_alloc_bytes %d\nheap_sys_bytes %d\ngc_cycles %d\n", runtime.NumGoroutine(), m.HeapAlloc, m.HeapSys, m.NumGC)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	context.AfterFunc(ctx, func() { srv.Close() })
	return ln.Addr().String(), nil
}
