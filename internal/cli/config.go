package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/yamlfile"
)

// registerConfig adds --config, whose YAML file sets the flags the
// command line leaves unset.
func registerConfig(fs *flagSet, path *string) {
	fs.StringVar(path, "config", "", "a YAML file of flags, by their long names (concurrency: [1, 8], timeout: 5m); flags given on the command line win")
}

// maxConfigSize bounds a --config file: a few KB is a long one.
const maxConfigSize = 1 << 20

// applyConfig sets, from the YAML file at path, each flag the command line
// did not set. Errors name the file, the line and the field.
func applyConfig(fs *flagSet, path string) error {
	if path == "" {
		return nil
	}
	// Opened through infile: a named pipe or a device is refused, not
	// waited on.
	data, err := infile.ReadAll(context.Background(), path, maxConfigSize)
	if err != nil {
		return usagef("--config: %v", err)
	}
	var m map[string]any
	if err := yamlfile.Decode(path, data, &m); err != nil {
		return usagef("--config %v", err)
	}
	return applyKeys(fs, m, func(k string) string {
		return fmt.Sprintf("--config %s:%d: %s", path, yamlfile.Line(data, k), k)
	})
}

// keyName is a key of a --config or experiment file as the flag's name:
// snake case is kebab case (input_tokens is input-tokens), so either
// spelling works everywhere.
func keyName(k string) string { return strings.ReplaceAll(k, "_", "-") }

// applyKeys sets, from a mapping of flag names (kebab or snake case) to
// values, each flag the command line did not set; at(key) names where the
// key is, for errors ("FILE:LINE: key").
func applyKeys(fs *flagSet, m map[string]any, at func(k string) string) error {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	bad := func(k, format string, args ...any) error {
		return usagef("%s: %s", at(k), fmt.Sprintf(format, args...))
	}
	for _, k := range keys {
		name := keyName(k)
		f := fs.Lookup(name)
		switch {
		case name == "config":
			return bad(k, "a config file cannot name another")
		case f == nil:
			if near := closest(name, names); near != "" {
				return bad(k, "not a flag of tokperf %s: did you mean %s?", fs.Name(), near)
			}
			return bad(k, "not a flag of tokperf %s (tokperf help %s lists them)", fs.Name(), fs.Name())
		case fs.Changed(name):
			continue // the command line wins
		}
		values, err := configValues(f, m[k])
		if err != nil {
			return bad(k, "%v", err)
		}
		for _, v := range values {
			if err := fs.Set(name, v); err != nil {
				return bad(k, "%q: %s", v, valueWant(f, unwrapSet(err)))
			}
		}
	}
	return nil
}

// unwrapSet is the value's own complaint inside pflag's Set error.
func unwrapSet(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return fmt.Errorf("%s", msg[i+2:])
	}
	return err
}

// configValues turns a YAML value into what the flag's Set takes: a list
// is one comma-separated value for a list flag and one Set per item for a
// repeatable one; a mapping is its JSON (--extra-body).
func configValues(f *pflag.Flag, v any) ([]string, error) {
	repeatable := strings.Contains(f.Value.Type(), "JSON") || strings.Contains(f.Value.Type(), "Name:")
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("no value")
	case []any:
		var parts []string
		for _, item := range x {
			s, err := scalar(item)
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		}
		if repeatable {
			return parts, nil
		}
		return []string{strings.Join(parts, ",")}, nil
	default:
		s, err := scalar(x)
		return []string{s}, err
	}
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(x), nil
	case map[string]any:
		b, err := json.Marshal(x)
		return string(b), err
	}
	return "", fmt.Errorf("want a value or a list of values, not %T", v)
}

// configCmd is tokperf config print: the effective configuration of a run
// or sweep, as a --config file.
func configCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f loadFlags
	var from string
	fs.group("Source")
	fs.StringVar(&from, "from", "", "print the configuration a result file was made with")
	f.register(fs, "sweep")
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		return parse(fs, args, e)
	}
	if len(args) == 0 || args[0] != "print" {
		return usagef("want tokperf config print [sweep flags] or tokperf config print --from RESULT.jsonl")
	}
	if err := parse(fs, args[1:], e); err != nil {
		return err
	}
	cfgPath := f.config
	if from != "" {
		run, err := bench.ReadRun(ctx, from, false)
		if err != nil {
			return err
		}
		if err := fromSetup(fs, run.Setup); err != nil {
			return err
		}
	}
	if err := applyConfig(fs, cfgPath); err != nil {
		return err
	}
	printConfig(e.stdout, fs, from)
	return nil
}

// fromSetup sets the flags a result file's setup records.
func fromSetup(fs *flagSet, s record.Setup) error {
	set := func(name string, v any) {
		if str := fmt.Sprint(v); str != "" && str != "0" && !fs.Changed(name) {
			_ = fs.Set(name, str)
		}
	}
	if !s.Simulated {
		set("url", s.URL)
	} else {
		set("sim-profile", s.Profile)
	}
	set("endpoint", s.Endpoint)
	set("model", s.Model)
	if s.Usage != "" {
		set("usage", s.Usage)
	}
	fromLoad(fs, s.Load, set)
	w := s.Workload
	set("input-tokens", firstOf(w.Input, strconv.Itoa(w.InputTokens)))
	set("output-tokens", firstOf(w.Output, strconv.Itoa(w.OutputTokens)))
	_ = fs.Set("ignore-eos", strconv.FormatBool(w.IgnoreEOS))
	set("seed", w.Seed)
	set("shared-prefix", w.SharedPrefix)
	if w.Agent != "" && w.Input != "agent trace" {
		set("agent", w.Agent) // a shape; a replayed trace's file is the user's to give
	}
	if u := s.Load.UntilSLO; u.Set() {
		set("until-slo", strings.TrimPrefix(fmt.Sprintf("%s%s", limit(",ttft_p99=", u.TTFTMs), limit(",tpot_p99=", u.TPOTMs)), ","))
	}
	set("temperature", s.Sampling.Temperature)
	set("gpus", s.GPUs)
	set("gpu-type", s.GPU)
	for _, x := range s.ExtraBody {
		v := string(x.JSON)
		if x.Endpoint != "" {
			v = x.Endpoint + "=" + v
		}
		_ = fs.Set("extra-body", v)
	}
	for name, ms := range map[string]float64{"slo-ttft": s.SLO.TTFTMs, "slo-tpot": s.SLO.TPOTMs, "slo-e2e": s.SLO.E2EMs} {
		if ms > 0 {
			set(name, fmt.Sprintf("%gms", ms))
		}
	}
	if s.Preset != nil {
		set("preset", s.Preset.Name)
	}
	fs.headersNotKept = s.Headers
	return nil
}

// limit is key and ms as a duration, or nothing for no limit.
func limit(key string, ms float64) string {
	if ms <= 0 {
		return ""
	}
	return fmt.Sprintf("%s%gms", key, ms)
}

// fromLoad sets the flags of a result file's load.
func fromLoad(fs *flagSet, l record.Load, set func(string, any)) {
	if len(l.Rates) > 0 || l.Rate > 0 {
		rates := l.Rates
		if len(rates) == 0 {
			rates = []float64{l.Rate}
		}
		var parts []string
		for _, r := range rates {
			parts = append(parts, strconv.FormatFloat(r, 'g', -1, 64))
		}
		set("rate", strings.Join(parts, ","))
		set("arrival", l.Arrival)
	}
	if len(l.Concurrency) > 0 {
		var parts []string
		for _, c := range l.Concurrency {
			parts = append(parts, strconv.Itoa(c))
		}
		set("concurrency", strings.Join(parts, ","))
	}
	set("requests", l.Requests)
	if len(l.RequestsPer) > 0 {
		var parts []string
		for _, n := range l.RequestsPer {
			parts = append(parts, strconv.Itoa(n))
		}
		set("requests", strings.Join(parts, ","))
	}
	if l.DurationS > 0 {
		set("duration", fmt.Sprintf("%gs", l.DurationS))
	}
	if l.TimeoutS > 0 {
		set("timeout", fmt.Sprintf("%gs", l.TimeoutS))
	}
	if l.Warmup != -1 && !fs.Changed("warmup") {
		_ = fs.Set("warmup", strconv.Itoa(l.Warmup))
	}
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bareYAML is a value that reads back as the same string in YAML.
var bareYAML = regexp.MustCompile(`^[A-Za-z0-9_./+-][A-Za-z0-9_.,:/+@-]*$`)

// printConfig writes every flag of fs as YAML, the ones set (on the
// command line, by --config or --from) first.
func printConfig(w io.Writer, fs *flagSet, from string) {
	if from != "" {
		fmt.Fprintf(w, "# the configuration of %s; rerun it with: tokperf sweep --config FILE\n", from)
	} else {
		fmt.Fprintln(w, "# tokperf sweep --config FILE (or run, overhead); flags on the command line win")
	}
	for _, h := range fs.headersNotKept {
		fmt.Fprintf(w, "# header: %s (its value is not kept in result files: add it)\n", h)
	}
	var set, rest []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "from" || f.Name == "api-key" {
			return
		}
		line := f.Name + ": " + yamlValue(f)
		if v := f.Value.String(); f.Value.Type() == "string" && isURL(v) {
			if r := bench.Redact(v); r != v {
				fmt.Fprintf(w, "# %s: its credentials (user info, query values) are printed as xxxxx: put them back\n", f.Name)
				line = f.Name + ": " + strconv.Quote(r)
			}
		}
		if f.Value.Type() == "'Name: value'" || strings.Contains(f.Value.Type(), "JSON") {
			line = repeatedYAML(f)
			if line == "" {
				return
			}
		}
		if h, ok := f.Value.(*headers); ok {
			for _, x := range *h {
				if secretHeader(x.Name) {
					fmt.Fprintf(w, "# header: %s looks like a credential: its value is printed as xxxxx: put it back\n", x.Name)
				}
			}
		}
		if fs.Changed(f.Name) {
			set = append(set, line)
		} else {
			rest = append(rest, "# "+line)
		}
	})
	for _, l := range set {
		fmt.Fprintln(w, l)
	}
	if len(rest) > 0 {
		fmt.Fprintln(w, "# defaults:")
	}
	for _, l := range rest {
		fmt.Fprintln(w, l)
	}
}

// secretHeader says whether a header's value is likely a credential:
// Authorization, Cookie, and names that end in Key, Token or Secret.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, end := range []string{"key", "token", "secret", "password"} {
		if strings.HasSuffix(n, end) {
			return true
		}
	}
	return false
}

// isURL says whether v is an http or https URL, whose query may hold a
// key.
func isURL(v string) bool {
	return strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://")
}

func yamlValue(f *pflag.Flag) string {
	v := f.Value.String()
	switch strings.ToLower(v) {
	case "true", "false":
		return v
	case "", "null", "yes", "no", "on", "off", "~":
		return strconv.Quote(v)
	}
	if bareYAML.MatchString(v) {
		return v
	}
	return strconv.Quote(v)
}

// repeatedYAML is a repeatable flag as a YAML list, or "" when it has no
// value.
func repeatedYAML(f *pflag.Flag) string {
	var items []string
	switch v := f.Value.(type) {
	case *headers:
		for _, h := range *v {
			value := h.Value
			if secretHeader(h.Name) {
				value = "xxxxx"
			}
			items = append(items, strconv.Quote(h.Name+": "+value))
		}
	case *extraBody:
		for _, x := range *v {
			s := string(x.JSON)
			if x.Endpoint != "" {
				s = x.Endpoint + "=" + s
			}
			items = append(items, strconv.Quote(s))
		}
	}
	if len(items) == 0 {
		return ""
	}
	return f.Name + ": [" + strings.Join(items, ", ") + "]"
}
