// Package foreign reads other benchmark tools' result files into tokperf's
// run model, so they can be reported and compared beside tokperf's own:
// vLLM `bench serve --save-result` JSON (one object, or one per line with
// --append-result), SGLang `bench_serving` JSONL, GuideLLM's benchmarks
// report JSON, and NVIDIA AIPerf's profile_export_aiperf.json (summary) and
// profile_export.jsonl (one record per request), and inference-perf's
// lifecycle reports (stage_N_ and summary_lifecycle_metrics.json). The format is told by
// content, never by the file's name.
//
// Each tool's figures are mapped onto tokperf's with the tool's own
// definition named (their ITL may be per chunk, their TPOT may include the
// first token), and a figure the file does not have is left blank, never
// guessed.
//
//	if tool, _ := foreign.Sniff(path); tool != "" {
//		run, err := foreign.Read(path) // an *analyze.Run with Source set
//	}
package foreign

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// The tools whose files are read.
const (
	VLLM       = "vllm"
	SGLang     = "sglang"
	GuideLLM   = "guidellm"
	AIPerf     = "aiperf"         // profile_export_aiperf.json
	AIPerfRecs = "aiperf-records" // profile_export.jsonl
	// InferencePerf is kubernetes-sigs/inference-perf's lifecycle report
	// (stage_N_lifecycle_metrics.json, summary_lifecycle_metrics.json).
	InferencePerf = "inference-perf"
)

// sniffBytes is how much of a file Sniff reads: the top-level keys every
// format starts with fit well within it.
const sniffBytes = 1 << 20

// Sniff says which tool wrote the file at path, from its first keys; ""
// when it is none of them (a tokperf result file, or anything else).
func Sniff(path string) (string, error) {
	f, err := infile.Open(context.Background(), path, infile.Stream)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, sniffBytes))
	if err != nil {
		return "", err
	}
	return Detect(head), nil
}

// Detect tells the tool from the start of a file's content: the keys of
// its first JSON object (and of the objects directly in it). A cut-short
// start is fine: the keys read before the cut decide.
func Detect(head []byte) string {
	keys := firstKeys(pythonLiterals(head))
	has := func(k string) bool { _, ok := keys[k]; return ok }
	anySuffix := func(suffix string) bool {
		for k := range keys {
			if !strings.Contains(k, ".") && strings.HasSuffix(k, suffix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("type") && (has("format") || has("setup")):
		return "" // tokperf's own header
	case has("benchmarks") && (has("metadata") || has("config") || has("args")):
		return GuideLLM
	case has("successes") && (has("load_summary") || has("failures")) || has("successes.latency") && has("successes.throughput"):
		return InferencePerf
	case has("metadata.request_start_ns") || (has("metadata") && has("metrics") && has("metadata.benchmark_phase")):
		return AIPerfRecs
	case has("input_config") || has("time_to_first_token.unit") || has("request_throughput.unit"):
		return AIPerf
	case has("total_output_tokens_retokenized") || anySuffix("_e2e_latency_ms") || has("server_info"):
		return SGLang
	case (has("mean_ttft_ms") || has("median_ttft_ms") || has("output_throughput")) && (has("model_id") || has("endpoint_type") || has("num_prompts") || has("tokenizer_id") || anySuffix("_e2el_ms")):
		return VLLM
	}
	return ""
}

// firstKeys are the keys of the first JSON object in b, and of the
// objects directly inside it as "parent.key", read until b ends or stops
// being JSON.
func firstKeys(b []byte) map[string]struct{} {
	keys := map[string]struct{}{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		keys[k] = struct{}{}
		t, err = dec.Token()
		if err != nil {
			return keys
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' {
				for dec.More() {
					t, err := dec.Token()
					sub, ok := t.(string)
					if err != nil || !ok {
						return keys
					}
					keys[k+"."+sub] = struct{}{}
					if skipValue(dec) != nil {
						return keys
					}
				}
			} else if skipRest(dec) != nil {
				return keys
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return keys
			}
		}
	}
	return keys
}

// skipValue reads one whole value from dec.
func skipValue(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if _, ok := t.(json.Delim); ok {
		if err := skipRest(dec); err != nil {
			return err
		}
		_, err = dec.Token()
	}
	return err
}

// skipRest reads the rest of an open object or array, up to its closing
// delimiter (not read).
func skipRest(dec *json.Decoder) error {
	for dec.More() {
		if err := skipValue(dec); err != nil {
			return err
		}
	}
	return nil
}

// Read reads another tool's result file into a run, its format told by
// content. Errors name the file, the line and the field.
func Read(path string) (*analyze.Run, error) {
	f, err := infile.Open(context.Background(), path, infile.Stream)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadFrom(f, path)
}

// ReadStated is Read keeping every figure as the file states it: a
// detailed vLLM file's summaries, not tokperf's figures from its lists.
// tokperf explain sets them beside tokperf's own.
func ReadStated(path string) (*analyze.Run, error) {
	f, err := infile.Open(context.Background(), path, infile.Stream)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readFrom(f, path, true)
}

// ReadFrom is Read over r, with name for the messages and the run.
func ReadFrom(r io.Reader, name string) (*analyze.Run, error) { return readFrom(r, name, false) }

func readFrom(r io.Reader, name string, stated bool) (*analyze.Run, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(sniffBytes)
	tool := Detect(head)
	switch tool {
	case VLLM, SGLang:
		return readFlat(br, name, tool, stated)
	case AIPerfRecs:
		return readAIPerfRecords(br, name)
	case GuideLLM, AIPerf, InferencePerf:
		// Read whole, so bounded: a report decodes to a few times its size.
		if s, ok := r.(interface{ Size() int64 }); ok && s.Size() > infile.Whole {
			return nil, fmt.Errorf("reading %s: %d MiB, over the %d MiB a %s report may be: %w", name, s.Size()>>20, infile.Whole>>20, tool, infile.ErrTooLarge)
		}
		data, err := io.ReadAll(io.LimitReader(br, infile.Whole+1))
		if err == nil && int64(len(data)) > infile.Whole {
			err = fmt.Errorf("over the %d MiB a %s report may be: %w", infile.Whole>>20, tool, infile.ErrTooLarge)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		d := &doc{file: name, data: pythonLiterals(data), line: 1}
		o, err := d.root()
		if err != nil {
			return nil, err
		}
		switch tool {
		case GuideLLM:
			return guidellmRun(o)
		case InferencePerf:
			return inferencePerfRun(o, stated)
		}
		return aiperfRun(o)
	}
	return nil, fmt.Errorf("%s:1: not a result file of tokperf, vLLM, SGLang, GuideLLM, AIPerf or inference-perf", name)
}

// lines calls each with every non-empty line of r and its number. Lines
// may be long: a detailed vLLM or SGLang line holds every request's text.
func lines(r *bufio.Reader, name string, each func(line []byte, n int) error) error {
	n := 0
	for {
		b, err := readLine(r, maxLine)
		if errors.Is(err, infile.ErrTooLarge) {
			return fmt.Errorf("%s line %d: %w", name, n+1, err)
		}
		if len(b) > 0 {
			n++
			if t := bytes.TrimSpace(b); len(t) > 0 {
				if err := each(t, n); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s line %d: %w", name, n+1, err)
		}
	}
}

// maxLine caps one line of a JSON Lines file: a detailed vLLM line holds
// every request's text, a few hundred MB for the largest runs.
var maxLine = 512 << 20 // a variable for its test

// readLine is r.ReadBytes('\n') that fails with infile.ErrTooLarge rather than
// grow past limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, fmt.Errorf("a line over %d MiB: not a result line: %w", limit>>20, infile.ErrTooLarge)
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// pythonLiterals rewrites the bare NaN, Infinity and -Infinity that
// Python's json module writes (JSON has none) as strings, outside strings
// only, keeping every line where it was.
func pythonLiterals(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\' && i+1 < len(b):
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case !in:
			for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
				if bytes.HasPrefix(b[i:], []byte(lit)) {
					out = append(out, '"')
					out = append(out, lit...)
					out = append(out, '"')
					i += len(lit) - 1
					c = 0
					break
				}
			}
			if c == 0 {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// doc is one JSON value of a file, kept whole so an error can name the
// line of the field it is about.
type doc struct {
	file string
	data []byte
	line int // the line data starts on
}

func (d *doc) root() (obj, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d.data, &m); err != nil {
		return obj{}, d.syntax(err)
	}
	return obj{d: d, m: m}, nil
}

// syntax is a JSON syntax or type error with the line it happened on.
func (d *doc) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s:%d: not JSON: %v", d.file, d.line+bytes.Count(d.data[:min(int(se.Offset), len(d.data))], []byte("\n")), err)
	}
	return fmt.Errorf("%s:%d: not a JSON object: %v", d.file, d.line, err)
}

// lineOf is the line of the deepest part of path found in the document.
func (d *doc) lineOf(path []string) int {
	dec := json.NewDecoder(bytes.NewReader(d.data))
	off := find(dec, path)
	return d.line + bytes.Count(d.data[:min(int(off), len(d.data))], []byte("\n"))
}

// find reads one value from dec, returning the offset of the deepest key
// (or array element) of path it reaches.
func find(dec *json.Decoder, path []string) int64 {
	t, err := dec.Token()
	if err != nil {
		return 0
	}
	delim, ok := t.(json.Delim)
	if !ok {
		return 0
	}
	for i := 0; dec.More(); i++ {
		name := strconv.Itoa(i)
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return 0
			}
			name, _ = k.(string)
		}
		at := dec.InputOffset()
		if len(path) > 0 && name == path[0] {
			if deeper := find(dec, path[1:]); deeper > 0 {
				return deeper
			}
			return at
		}
		if skipValue(dec) != nil {
			return 0
		}
	}
	return 0
}

// obj is a JSON object of a document at a path, read field by field.
type obj struct {
	d    *doc
	path []string
	m    map[string]json.RawMessage
}

func (o obj) at(key string) []string { return append(append([]string(nil), o.path...), key) }

// errorf is an error about field key of o, naming file:line:field.
func (o obj) errorf(key, format string, args ...any) error {
	p := o.at(key)
	return fmt.Errorf("%s:%d: %s: %s", o.d.file, o.d.lineOf(p), strings.Join(p, "."), fmt.Sprintf(format, args...))
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// num is field key as a number: ok false when it is absent or null. Python's
// "Infinity" and the string "inf" read as +Inf; "NaN" as absent.
func (o obj) num(key string) (v float64, ok bool, err error) {
	raw, there := o.m[key]
	if !there || !present(raw) {
		return 0, false, nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false, o.errorf(key, "want a number, got %s", raw)
		}
		switch strings.ToLower(s) {
		case "inf", "infinity", "+inf":
			return math.Inf(1), true, nil
		case "-inf", "-infinity":
			return math.Inf(-1), true, nil
		case "nan":
			return 0, false, nil
		}
		return 0, false, o.errorf(key, "want a number, got %q", s)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false, o.errorf(key, "want a number, got %s", short(raw))
	}
	return v, true, nil
}

// figure is field key as a finite, non-negative figure, NaN when absent.
func (o obj) figure(key string) (float64, error) {
	v, ok, err := o.num(key)
	if err != nil || !ok {
		return math.NaN(), err
	}
	if math.IsInf(v, 0) || v < 0 {
		return 0, o.errorf(key, "want a finite figure ≥ 0, got %g", v)
	}
	return v, nil
}

// count is field key as a whole count ≥ 0, -1 when absent.
func (o obj) count(key string) (int, error) {
	v, err := o.figure(key)
	if err != nil || math.IsNaN(v) {
		return -1, err
	}
	if v != math.Trunc(v) || v > 1e15 {
		return 0, o.errorf(key, "want a whole count, got %g", v)
	}
	return int(v), nil
}

// str is field key as a string, "" when absent or not a string.
func (o obj) str(key string) string {
	var s string
	if raw, ok := o.m[key]; ok && present(raw) {
		json.Unmarshal(raw, &s)
	}
	return s
}

// sub is field key as an object; ok false when absent or null.
func (o obj) sub(key string) (obj, bool, error) {
	raw, there := o.m[key]
	if !there || !present(raw) {
		return obj{}, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return obj{}, false, o.errorf(key, "want an object, got %s", short(raw))
	}
	return obj{d: o.d, path: o.at(key), m: m}, true, nil
}

// list is field key as a list of objects.
func (o obj) list(key string) ([]obj, error) {
	raw, there := o.m[key]
	if !there || !present(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, o.errorf(key, "want a list, got %s", short(raw))
	}
	out := make([]obj, 0, len(items))
	for i, it := range items {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(it, &m); err != nil {
			return nil, obj{d: o.d, path: o.at(key)}.errorf(strconv.Itoa(i), "want an object, got %s", short(it))
		}
		out = append(out, obj{d: o.d, path: append(o.at(key), strconv.Itoa(i)), m: m})
	}
	return out, nil
}

func short(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}

// dist is a distribution read from a summary: n samples (the requests it
// covers when the file does not count them), figures NaN where the file has
// none; N = 0 when it has no figure at all.
func dist(n int, mean, p50, p90, p99, max float64) stats.Dist {
	if math.IsNaN(mean) && math.IsNaN(p50) && math.IsNaN(p90) && math.IsNaN(p99) && math.IsNaN(max) || n <= 0 {
		return none()
	}
	return stats.Dist{N: n, Mean: mean, P50: p50, P90: p90, P95: math.NaN(), P99: p99, Max: max}
}

// blankExcept are the figures of blanks not in filled.
func blankExcept(filled ...string) []string {
	var out []string
	for _, b := range analyze.ForeignFigures {
		found := false
		for _, f := range filled {
			found = found || f == b
		}
		if !found {
			out = append(out, b)
		}
	}
	return out
}

// orZero is v, or 0 for a figure the file does not have.
func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// failed is the status of requests another tool counts as failed without
// saying how: not one of tokperf's statuses, so it is not taken for one.
const failed record.Status = "failed"

// merge keeps the union of the stages' blanks (a figure blank in one stage
// is blank in the table).
func merge(a, b []string) []string {
	for _, x := range b {
		found := false
		for _, y := range a {
			found = found || x == y
		}
		if !found {
			a = append(a, x)
		}
	}
	return a
}

// none is a distribution the file does not have: N = 0, figures NaN (blank
// in every table, null in JSON).
func none() stats.Dist { return stats.Describe(nil) }

// blankStage is a stage whose every distribution is blank until the
// file fills it.
func blankStage() summary.Stage {
	n := none()
	return summary.Stage{ClientQueue: n, ClientWait: n, TTFT: n, TTFO: n, E2E: n, TPOT: n, DecodeTokS: n, RequestTokS: n, ITL: n, ICL: n,
		ServerDecodeTokS: n, ServerE2E: n}
}
