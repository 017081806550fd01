package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
)

// tokperf help version and tokperf version --help describe the command
// instead of calling it unknown.
func TestHelpVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "version"}, {"version", "--help"}, {"help", "--version"}} {
		out, errw, code := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "Usage: tokperf version") || errw != "" {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errw)
		}
	}
}

// A misspelt --format gets the format meant, on every command that takes one.
func TestFormatDidYouMean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"report htm", []string{"report", "r.jsonl", "--format", "htm"}, "did you mean html?"},
		{"compare jsn", []string{"compare", "a.jsonl", "b.jsonl", "--format", "jsn"}, "did you mean json?"},
		{"sweep markdwn", []string{"sweep", "--format", "markdwn"}, "did you mean markdown?"},
		{"check pgn", []string{"check", "--format", "pgn"}, "did you mean png?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errw, code := runCLI(t, tc.args...)
			first, _, _ := strings.Cut(errw, "\n")
			if code != exitUsage || !strings.Contains(first, tc.want) {
				t.Errorf("exit %d, first line %q, want %q", code, first, tc.want)
			}
		})
	}
}

// One request is "1 request" everywhere a run of one request speaks: the
// report, its warnings and the progress lines.
//
// Serial: t.Chdir.
func TestOneRequestSingular(t *testing.T) {
	t.Chdir(t.TempDir())
	out, errw, code := runVirtual(t, "run", "-c", "1", "--requests", "1", "--warmup", "0", "--output-tokens", "8", "-o", "r.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errw)
	}
	if !strings.Contains(out, "for 1 request\n") {
		t.Errorf("the server-timing line does not count one request (the seed profile reports its E2E):\n%s", out)
	}
	bad := regexp.MustCompile(`\b1 (\w+ )?requests\b|of 1 requests`)
	for _, s := range []string{out, errw} {
		if m := bad.FindString(s); m != "" {
			t.Errorf("%q in:\n%s", m, s)
		}
	}
}

// An environment's proxy is refused as a problem of the machine (exit 1),
// not of the command line, and the message names --proxy.
func TestProxyRefusedExit1(t *testing.T) {
	t.Parallel()
	var out, errw bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Getenv: func(k string) string {
		if k == "HTTP_PROXY" {
			return "http://proxy.test:3128"
		}
		return ""
	}}}
	code := run(context.Background(), []string{"run", "--url", "http://gpu-box:8000", "-c", "1", "--requests", "1"}, e)
	if code != exitCouldNotRun || !strings.Contains(errw.String(), "--proxy http://proxy.test:3128") || strings.Contains(errw.String(), "see: tokperf help") {
		t.Errorf("exit %d, want %d with a pointer to --proxy and no usage hint:\n%s", code, exitCouldNotRun, errw.String())
	}
}

// --proxy sends every request through the proxy on purpose, says that its
// latency is measured, and records it in the result file. The proxy and
// the simulator are on in-memory networks, told apart by the address dialled.
func TestProxyOnPurpose(t *testing.T) {
	t.Parallel()
	p, err := sim.LoadProfile("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		simNet, proxyNet := memnet.New(), memnet.New()
		srv := sim.New(p, sim.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go srv.Serve(ctx, simNet)
		var through atomic.Int64
		upstream := &http.Transport{DialContext: simNet.Dial, DisableCompression: true}
		proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			through.Add(1)
			out := r.Clone(r.Context())
			out.RequestURI = "" // a forward proxy: the request names the server
			resp, err := upstream.RoundTrip(out)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			maps.Copy(w.Header(), resp.Header)
			w.WriteHeader(resp.StatusCode)
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				w.Write(buf[:n])
				w.(http.Flusher).Flush()
				if err != nil {
					return
				}
			}
		})
		ps := &http.Server{Handler: proxy}
		go ps.Serve(proxyNet)
		defer ps.Close()
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == "proxy.test:3128" {
				return proxyNet.Dial(ctx, network, addr)
			}
			t.Errorf("dialled %s directly, not through the proxy", addr)
			return simNet.Dial(ctx, network, addr)
		}
		var out, errw bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Dial: dial, Getenv: func(string) string { return "" }}}
		res := filepath.Join(dir, "r.jsonl")
		code := run(context.Background(), []string{"run", "--url", "http://gpu-box.test:8000", "--proxy", "http://user:pw@proxy.test:3128",
			"-c", "2", "--requests", "6", "--warmup", "0", "--output-tokens", "8", "-o", res, "--format", "json"}, e)
		if code != 0 {
			b, _ := os.ReadFile(res)
			t.Fatalf("exit %d\n%s\n%s", code, errw.String(), b)
		}
		if !strings.Contains(errw.String(), "its latency is measured as the server's") {
			t.Errorf("no warning that the proxy's latency is measured:\n%s", errw.String())
		}
		if strings.Contains(errw.String()+out.String(), "pw@") {
			t.Errorf("the proxy's password is shown")
		}
		gen := 0
		for _, r := range srv.Trace() {
			if r.Route == "/v1/completions" {
				gen++
			}
		}
		if gen != 6 || through.Load() < int64(gen) {
			t.Errorf("%d generation requests reached the server, %d went through the proxy; want 6, all through it", gen, through.Load())
		}
		var doc struct {
			Setup struct{ Proxy string } `json:"setup"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Setup.Proxy != "http://proxy.test:3128" && !strings.HasPrefix(doc.Setup.Proxy, "http://") {
			t.Errorf("setup.proxy %q", doc.Setup.Proxy)
		}
	})
	b, err := os.ReadFile(filepath.Join(dir, "r.jsonl"))
	if err != nil || !bytes.Contains(b, []byte(`"proxy":"http://`)) || bytes.Contains(b, []byte("pw@")) {
		t.Errorf("the result file's header does not record the proxy without its password (%v)", err)
	}
}

// check takes --proxy too: the refusal's advice works on every command
// that speaks to a server.
func TestCheckTakesProxy(t *testing.T) {
	t.Parallel()
	if err := parseOnly(t, []string{"check", "--url", "http://gpu-box:8000", "--proxy", "http://proxy.test:3128"}); err != "" {
		t.Errorf("check --proxy: %s", err)
	}
}
