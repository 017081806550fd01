package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
)

// Every command's help is grouped, has examples, and is pinned by a golden
// file (go test ./internal/cli -run TestHelpGolden -update rewrites them).
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	for name := range commandTable {
		t.Run(name, func(t *testing.T) {
			out, errw, code := runCLI(t, "help", name)
			if code != 0 || errw != "" {
				t.Fatalf("exit %d: %s", code, errw)
			}
			if _, ok := commandHelp[name]; !ok {
				t.Errorf("%s has no entry in commandHelp", name)
			}
			if !strings.HasPrefix(out, "Usage: tokperf "+name) || !strings.Contains(out, "\nExamples:\n") {
				t.Errorf("help %s lacks its usage line or examples:\n%s", name, out)
			}
			golden(t, filepath.Join("help", name+".txt"), out)
		})
	}
}

// A command accepts exactly the flags its help lists, and each example in
// its help parses.
func TestHelpListsWhatParses(t *testing.T) {
	t.Parallel()
	for name := range commandTable {
		if name == "completion" {
			continue // no flags
		}
		out, _, _ := runCLI(t, "__flags", name)
		help, _, _ := runCLI(t, "help", name)
		for _, f := range strings.Fields(out) {
			if !strings.Contains(help, f+" ") && !strings.Contains(help, f+",") && !strings.Contains(help, f+"[") {
				t.Errorf("%s: flag %s parses but the help does not list it", name, f)
			}
		}
		_, examples, _ := strings.Cut(help, "\nExamples:\n")
		for _, line := range strings.Split(examples, "\n") {
			line, _, _ = strings.Cut(line, " #")
			line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "\\"))
			if !strings.HasPrefix(line, "tokperf ") || strings.HasPrefix(line, "tokperf completion") {
				continue
			}
			if err := parseOnly(t, shellWords(t, strings.TrimPrefix(line, "tokperf "))); err != "" {
				t.Errorf("help %s: example %q: %s", name, line, err)
			}
		}
	}
}

// parseOnly runs args up to their flags' parsing and returns the error
// (empty when they parsed).
func parseOnly(t *testing.T, args []string) string {
	t.Helper()
	var out, errw bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Getenv: func(string) string { return "" }}, parseOnly: true}
	if code := run(context.Background(), args, e); code != 0 {
		return strings.TrimSpace(errw.String())
	}
	return ""
}

// shellWords splits a command line as a POSIX shell would, for the quoting
// README and help examples use ('…', "…", \).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// Every tokperf command line in the README and in each guide under docs/
// goes through the parser.
func TestREADMECommandsParse(t *testing.T) {
	t.Parallel()
	n := 0
	for _, d := range guides(t) {
		for _, line := range commands(d.text) {
			rest, ok := strings.CutPrefix(line, "go run ./cmd/tokperf ")
			if !ok {
				continue
			}
			n++
			rest, _, _ = strings.Cut(rest, " > ")
			rest, _, _ = strings.Cut(rest, " | ")
			if err := parseOnly(t, shellWords(t, rest)); err != "" {
				t.Errorf("%s: %q: %s", d.name, line, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d tokperf command lines found in the README and the guides", n)
	}
}

// A misspelt command, a misspelt flag, a single-dash long flag and a bad
// duration each get one line that says what was meant.
func TestOneLineAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"swep"}, "did you mean sweep?"},
		{[]string{"help", "swep"}, "did you mean sweep?"},
		{[]string{"sweep", "--urll", "x"}, "unknown flag --urll: did you mean --url?"},
		{[]string{"sweep", "-url", "x"}, "long flags take two dashes: --url"},
		{[]string{"sweep", "--timeout", "5"}, "want a duration such as 30s, 5m or 1h30m"},
		{[]string{"sweep", "--wait-ready", "15m"}, "as --wait-ready=15m"},
		{[]string{"sweep", "-c", "1,x"}, `"x" is not a positive integer`},
		{[]string{"overhead", "--rate", "3"}, "unknown flag --rate"},
		{[]string{"check", "-c", "1,2"}, "check runs at one level"},
		{[]string{"run", "--header", "no colon"}, "want 'Name: value'"},
		{[]string{"run", "--header", "Content-Length: 3"}, "Content-Length is tokperf's own"},
		{[]string{"run", "--extra-body", "{bad"}, "not a JSON object"},
		{[]string{"run", "--extra-body", `{"stream":false}`}, `"stream" is tokperf's own to set`},
		{[]string{"run", "--extra-body", `nope={"a":1}`}, `endpoint "nope"`},
		{[]string{"sweep", "-c", "1,2", "--requests", "1,2,3"}, "--requests has 3 values for 2 stages"},
		{[]string{"sweep", "--percentiles", "42"}, "--percentiles 42: want some of 50, 90, 95, 99, 100"},
	} {
		_, errw, code := runCLI(t, tc.args...)
		first, _, _ := strings.Cut(errw, "\n")
		if code != exitUsage || !strings.Contains(first, tc.want) || strings.Contains(errw, "goroutine") {
			t.Errorf("%v: exit %d, first line %q, want %q", tc.args, code, first, tc.want)
		}
	}
}

// --header, --extra-body and --config arrive at the server: the simulator's
// trace shows the headers and the body fields of every request, the
// command line winning over the file.
func TestHeadersBodyAndConfigArrive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(cfg, []byte("# a saved run\nconcurrency: [2]\nrequests: 6\noutput-tokens: 4\nheader:\n  - 'X-Tenant: from-file'\nextra-body:\n  - {top_p: 0.5, seed: 11}\ntemperature: 0.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := sim.LoadProfile("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"--net-http=false", "--net-http"} {
		t.Run(client, func(t *testing.T) { headersArrive(t, p, cfg, dir, client) })
	}
}

func headersArrive(t *testing.T, p *sim.Profile, cfg, dir, client string) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		srv := sim.New(p, sim.Options{TraceWire: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		var out, errw bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Dial: n.Dial, Getenv: func(string) string { return "" }}}
		code := run(context.Background(), []string{"run", client, "--url", "http://sim.test", "--config", cfg, "--requests", "5", "--warmup", "0",
			"--header", "X-Trace: abc", "--extra-body", `{"top_p":0.9}`, "--extra-body", `chat={"chat_template_kwargs":{"enable_thinking":false}}`,
			"-o", filepath.Join(dir, strings.TrimLeft(client, "-")+".jsonl"), "--format", "json"}, e) // a file per client: -o does not replace
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errw.String())
		}
		trace := srv.Trace()
		var gen []sim.TraceRequest
		for _, r := range trace {
			if r.Route == "/v1/completions" {
				gen = append(gen, r)
			}
		}
		// The command line's --requests 5 wins over the file's 6; its
		// --header and --extra-body replace the file's.
		if len(gen) != 5 {
			t.Fatalf("%d generation requests reached the server, want 5 (the command line over the file's 6)", len(gen))
		}
		for _, r := range gen {
			if r.Headers["X-Trace"] != "abc" || r.Headers["X-Tenant"] != "" {
				t.Errorf("request %d headers %v: want X-Trace: abc and not the file's", r.ID, r.Headers)
			}
			if string(r.Body["top_p"]) != "0.9" || r.Body["chat_template_kwargs"] != nil || r.Body["seed"] != nil {
				t.Errorf("request %d body %v: want top_p 0.9, no chat-only field, not the file's seed", r.ID, r.Body)
			}
			if string(r.Body["temperature"]) != "0.3" || r.MaxTokens != 4 {
				t.Errorf("request %d: temperature %s, max tokens %d: want the file's 0.3 and 4", r.ID, r.Body["temperature"], r.MaxTokens)
			}
		}
		var doc struct {
			Setup struct {
				Headers   []string          `json:"headers"`
				ExtraBody []json.RawMessage `json:"extra_body"`
			}
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(doc.Setup.Headers, []string{"X-Trace"}) || len(doc.Setup.ExtraBody) != 2 || strings.Contains(out.String(), "abc") {
			t.Errorf("the setup records headers %v and extra body %s; want the name only, and both bodies", doc.Setup.Headers, doc.Setup.ExtraBody)
		}
		cancel()
		<-done
	})
}

// A config file's mistakes name the file, the line and the field.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"concurrency: [1, 4]\nrequets: 10\n", "bench.yaml:2: requets: not a flag of tokperf sweep: did you mean requests?"},
		{"timeout: 5\n", "bench.yaml:1: timeout: \"5\": want a duration such as 30s, 5m or 1h30m"},
		{"concurrency: [1, -4]\n", "bench.yaml:1: concurrency:"},
		{"config: other.yaml\n", "a config file cannot name another"},
		{"url: [\n", "bench.yaml"},
	} {
		path := filepath.Join(dir, "bench.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errw, code := runCLI(t, "sweep", "--config", path)
		if code != exitUsage || !strings.Contains(errw, tc.want) {
			t.Errorf("%q: exit %d, %q, want %q", tc.yaml, code, errw, tc.want)
		}
	}
}

// A named pipe given as --config is refused at once, not waited on for a
// writer that never comes (the open used to block, deaf to SIGINT).
func TestConfigPipe(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bench.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	var errw string
	var code int
	go func() { _, errw, code = runCLI(t, "sweep", "--config", path); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // wide for a busy machine; the bug hangs forever
		t.Fatal("--config with a named pipe hung")
	}
	if code != exitUsage || !strings.Contains(errw, "is a named pipe: want a regular file") {
		t.Errorf("exit %d, %q", code, errw)
	}
}

// config print masks what looks like a credential: the values of
// Authorization, Cookie and *-Key/*-Token headers, a URL's user info and
// query values; other headers are kept, and each mask is said.
func TestConfigPrintRedacts(t *testing.T) {
	t.Parallel()
	out, errw, code := runCLI(t, "config", "print", "--url", "http://user:pw@h:8000/v1?key=S3CRET",
		"--header", "Authorization: Bearer sk-S3CRET", "--header", "X-Api-Key: S3CRET", "--header", "Cookie: s=S3CRET",
		"--header", "X-Auth-Token: S3CRET", "--header", "X-Tenant: bench")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	if strings.Contains(out, "S3CRET") || strings.Contains(out, "pw@") {
		t.Errorf("a secret is printed:\n%s", out)
	}
	for _, want := range []string{`url: "http://xxxxx@h:8000/v1?key=xxxxx"`, `"Authorization: xxxxx"`, `"X-Api-Key: xxxxx"`, `"Cookie: xxxxx"`,
		`"X-Auth-Token: xxxxx"`, `"X-Tenant: bench"`, "# header: Authorization looks like a credential", "# url: its credentials"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// A level the plan cannot reach is refused at once, naming the fix: -c
// 10000000 --requests 2 used to be accepted and run 42 s of warm-up.
func TestConcurrencyBeyondPlan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"beyond its requests", []string{"-c", "10000000", "--requests", "2"}, "-c 10000000: more than the 1000000 requests one tokperf keeps in flight"},
		{"beyond one process", []string{"-c", "2000000", "--duration", "1s"}, "-c 2000000: more than the 1000000"},
		{"one stage of a list", []string{"-c", "1,64", "--requests", "8"}, "-c 64: a stage of 8 requests never has more than 8 in flight"},
		{"per stage", []string{"-c", "1,4", "--requests", "2,3"}, "-c 4: a stage of 3 requests never has more than 3 in flight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errw, code := runCLI(t, append([]string{"sweep"}, c.args...)...)
			if code != exitUsage || !strings.Contains(errw, c.want) {
				t.Errorf("exit %d, %q, want %q", code, errw, c.want)
			}
		})
	}
}

// config print writes a file that --config reads back to the same
// configuration; --from turns a result file's header into one.
func TestConfigPrintRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--sim-profile", "tiny", "-c", "1,3", "--requests", "3,6", "--output-tokens", "5", "--input-tokens", "12", "--seed", "9",
		"--timeout", "20s", "--extra-body", `{"top_p":0.8}`, "--slo-ttft", "250ms"}
	printed, errw, code := runCLI(t, append([]string{"config", "print"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	cfg := filepath.Join(dir, "printed.yaml")
	os.WriteFile(cfg, []byte(printed), 0o644)
	again, errw, code := runCLI(t, "config", "print", "--config", cfg)
	if code != 0 || again != printed {
		t.Fatalf("config print of its own output differs (exit %d, %s):\n%s\n---\n%s", code, errw, printed, again)
	}
	// Run it, then turn the result file back into a configuration.
	out := filepath.Join(dir, "r.jsonl")
	if _, errw, code := runVirtual(t, "sweep", "--config", cfg, "-o", out); code != 0 {
		t.Fatalf("sweep --config: exit %d: %s", code, errw)
	}
	from, errw, code := runCLI(t, "config", "print", "--from", out)
	if code != 0 {
		t.Fatalf("config print --from: exit %d: %s", code, errw)
	}
	for _, want := range []string{"concurrency: 1,3", "requests: 3,6", "output-tokens: 5", "input-tokens: 12", "seed: 9", "timeout: 20s", `extra-body: ["{\"top_p\":0.8}"]`, "slo-ttft: 250ms", "sim-profile: tiny"} {
		if !strings.Contains(from, "\n"+want+"\n") {
			t.Errorf("config print --from lacks %q:\n%s", want, from)
		}
	}
}

// The completion scripts hold every command's flags and are valid shell.
func TestCompletion(t *testing.T) {
	t.Parallel()
	out, errw, code := runCLI(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	for _, want := range []string{"--until-saturated", "--extra-body", "sweep)", "--against"} {
		if !strings.Contains(out, want) {
			t.Errorf("bash completion lacks %q", want)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, b)
		}
	}
	fish, _, code := runCLI(t, "completion", "fish")
	if code != 0 || !strings.Contains(fish, "__fish_seen_subcommand_from sweep' -l url") {
		t.Errorf("fish completion (exit %d) lacks sweep's --url", code)
	}
}
