package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every count and duration past its range is a usage error naming the flag
// and the range, before anything runs: never a hang, an out-of-memory
// crash or a makeslice panic.
func TestCountsHaveRanges(t *testing.T) {
	t.Parallel()
	const huge = "9000000000000000000"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"predict levels", []string{"predict", "r.jsonl", "-c", huge}, "-c 9000000000000000000: want 1 to 100000"},
		{"predict requests", []string{"predict", "r.jsonl", "-c", "8", "--requests", "10000000"}, "--requests 10000000: want 0 to 1000000"},
		{"predict max concurrency", []string{"predict", "r.jsonl", "--slo-ttft", "1s", "--max-concurrency", huge}, "--max-concurrency 9000000000000000000: want 1 to 100000"},
		{"run requests", []string{"run", "--requests", huge}, "--requests 9000000000000000000: want 0 to 10000000"},
		{"sweep repeat", []string{"sweep", "--repeat", "1000000000"}, "--repeat 1000000000: want 1 or more, at most 1000"},
		{"check questions", []string{"check", "--questions", "100000000"}, "--questions 100000000: want 0 to 100000"},
		{"check max tokens", []string{"check", "--max-tokens", huge}, "--max-tokens 9000000000000000000: want 1 to 1000000"},
		{"selftest tokens", []string{"selftest", "--tokens", huge}, "--tokens 9000000000000000000: want 2 to 1000000"},
		{"duration too short", []string{"run", "--duration", "1ns"}, "--duration 1ns: want 1s to 8760h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errw, code := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(errw, tc.want) {
				t.Errorf("exit %d, stderr %q, stdout %.200q; want exit %d and %q", code, errw, out, exitUsage, tc.want)
			}
		})
	}
}

// An API key file that is not one key (several lines, a space, a control
// character) is refused naming the file and what is wrong, before its key
// goes into a header.
func TestBadAPIKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"two keys", "sk-one\nsk-two\n", "2 lines: want the key alone"},
		{"a header line", "Bearer sk-one\n", "a byte 0x20"},
		{"a control character", "sk-\x1bone", "a byte 0x1b"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		os.WriteFile(path, []byte(tc.content), 0o600)
		_, errw, code := runCLI(t, "run", "--api-key-file", path)
		if code != exitUsage || !strings.Contains(errw, "--api-key-file "+path+": "+tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.name, code, errw, tc.want)
		}
	}
}
