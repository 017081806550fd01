package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
)

// A server that claims completion_tokens 9e15 (its stream otherwise a
// vLLM one) fails the run's requests as bad counts, with no absurd figure,
// and report reads the file run wrote (issue 37).
func TestImpossibleCountsRunAndReport(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm"}]}`)
		})
		mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 4 {
				fmt.Fprintf(w, `data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" w%d","finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":%d}}`+"\n\n", i, (i+1)*3_000_000_000_000_000)
			}
			io.WriteString(w, `data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":9000000000000000}}`+"\n\ndata: [DONE]\n\n")
		})
		srv := &http.Server{Handler: mux}
		go srv.Serve(n)
		var out, errw bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Dial: n.Dial, Getenv: func(string) string { return "" }, Listen: func(string) (net.Listener, error) { return n, nil }}}
		code := run(context.Background(), []string{"run", "--url", "http://vllm.test", "-c", "1", "--requests", "3", "--warmup", "0", "--output-tokens", "4", "-o", file}, e)
		if code == exitOK || strings.Contains(out.String(), "e+19") || !strings.Contains(out.String()+errw.String(), "bad_count") {
			t.Errorf("exit %d; want a failed run naming bad_count, no absurd figure\nstdout:\n%s\nstderr:\n%s", code, out.String(), errw.String())
		}
		srv.Close()
	})
	out, errw, code := runCLI(t, "report", file)
	if code != exitOK && code != exitSomeFailed {
		t.Errorf("report of run's own file: exit %d\n%s\n%s", code, out, errw)
	}
}

// report of an overhead file shows the raw and the chat route apart, the
// same rows the overhead command printed, not one row of both under the
// raw route's name (issue 37).
func TestReportOfOverheadKeepsRoutesApart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "o.jsonl")
	live, errw, code := runVirtual(t, "overhead", "-c", "1,2", "--requests", "8", "--output-tokens", "20", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, live, errw)
	}
	read, errw, code := runCLI(t, "report", file)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errw)
	}
	rows := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "| 1 |") || strings.HasPrefix(l, "| 2 |") {
				out = append(out, l)
			}
		}
		return out
	}
	if got, want := rows(read), rows(live); len(want) != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("report's rows:\n%s\nwant the overhead command's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A run against TGI (the simulator's, which ends outputs at EOS as TGI
// does: tokperf sends it no ignore_eos, it has none) neither claims
// ignore_eos in its header nor accuses the server of not honouring it
// (issue 37).
func TestTGIShortOutputNotAnAccusation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "tgi.yaml")
	if err := os.WriteFile(p, []byte("name: tgi-eos\nengine: tgi\nmodel: m\neos_probability: 0.1\ndecode: {linear: {a_ms: 4, c_ms: 0.1}}\nprefill: {per_token_us: 20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "run", "--sim-profile", p, "-c", "2", "--requests", "24", "--output-tokens", "100", "--seed", "3", "-o", filepath.Join(dir, "r.jsonl"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	all := out + errw
	if !strings.Contains(all, "EOS honoured (tgi has no ignore_eos)") || strings.Contains(all, "did not honour") || !strings.Contains(all, "tgi has no ignore_eos, so outputs end at the model's EOS") {
		t.Errorf("want the header and the warning to know TGI has no ignore_eos:\n%s", all)
	}
}
