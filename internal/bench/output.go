package bench

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
)

// recordSink takes each measured record of a stage as it finishes, from
// the runner's one records goroutine (never a request's own path).
type recordSink interface {
	// add takes one finished measured record; it must not keep r.
	add(r *record.Record)
}

// sinkFunc is a function as a recordSink.
type sinkFunc func(*record.Record)

func (f sinkFunc) add(r *record.Record) { f(r) }

var (
	_ recordSink = sinkFunc(nil)
	_ recordSink = (*live)(nil)
	_ recordSink = (*twinFeed)(nil)
	_ recordSink = (*slicing)(nil)
	_ recordSink = (*promOutput)(nil)
)

// Output is a live output asked with --live KIND=ADDR: the run's own
// client-side metrics, served while it goes on.
type Output struct {
	Kind string // a name of outputs: prometheus
	Addr string // where it listens: host:port
}

func (o Output) String() string { return o.Kind + "=" + o.Addr }

// output is a started live output: a sink of the stages' records that
// also counts the requests in flight, closed when the run ends.
type output interface {
	recordSink
	// inFlight is bumped by one as a measured request is sent and back
	// as it ends: an atomic, read only when the output is read.
	inFlight() *atomic.Int64
	// stage is told each stage as it starts.
	stage(p runner.Plan)
	// close stops serving, and returns once it has.
	close()
}

// outputs are the kinds of live output by name (--live KIND=ADDR), each
// started with its ADDR (where to listen, or where to send): a new kind is
// one entry and one file.
var outputs = map[string]func(addr string, env *Env) (output, error){
	"prometheus": startProm,
}

// ParseOutput reads --live's KIND=ADDR: a kind of outputs and a host:port
// to listen on.
func ParseOutput(s string) (Output, error) {
	kind, addr, ok := strings.Cut(s, "=")
	if _, known := outputs[kind]; !known {
		return Output{}, fmt.Errorf("--live %q: want KIND=ADDR, KIND one of %s (e.g. prometheus=127.0.0.1:9464)", s, strings.Join(slices.Sorted(maps.Keys(outputs)), ", "))
	}
	if !ok || addr == "" {
		return Output{}, fmt.Errorf("--live %q: say where to listen, e.g. %s=127.0.0.1:9464", s, kind)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return Output{}, fmt.Errorf("--live %q: %s is not host:port: %w", s, addr, err)
	}
	return Output{Kind: kind, Addr: addr}, nil
}

// startOutput starts the live output o, or returns nil when none is asked.
func startOutput(o *Output, env *Env) (output, error) {
	if o == nil {
		return nil, nil
	}
	out, err := outputs[o.Kind](o.Addr, env)
	if err != nil {
		return nil, fmt.Errorf("--live %s: %w", o, err)
	}
	return out, nil
}

// serve serves h on ln until stop is called, which returns once the
// server has stopped.
func serve(ln net.Listener, h http.Handler) (stop func()) {
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) // until Close; a listener that fails ends the output, not the run
	}()
	return func() {
		srv.Close()
		<-done
	}
}

// counted counts the measured requests in flight around a backend.
type counted struct {
	runner.Backend
	n *atomic.Int64
}

func (c counted) Do(ctx context.Context, clock record.Clock, req record.Request, rec *record.Record) {
	if rec.Warmup {
		c.Backend.Do(ctx, clock, req, rec)
		return
	}
	c.n.Add(1)
	defer c.n.Add(-1)
	c.Backend.Do(ctx, clock, req, rec)
}
