package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repeat: with two configurations runs them in turn, A B A B, each repeat
// on a freshly started server, whether or not restart_between_repeats
// asks for it (a comparison pairs repeat i of each), folds each
// configuration's repeats into one run with its spread across them, and
// compares the configurations over the paired repeats.
func TestExperimentRepeatsRestarted(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{true, false} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			t.Parallel()
			experimentRepeats(t, restart)
		})
	}
}

func experimentRepeats(t *testing.T, restart bool) {
	bin := buildBinary(t)
	dir := t.TempDir()
	var yaml strings.Builder
	yaml.WriteString("configs:\n")
	for _, c := range []struct{ name, ms string }{{"a", "2"}, {"b", "4"}} {
		p := filepath.Join(dir, c.name+".yaml")
		os.WriteFile(p, []byte("name: "+c.name+"\nmodel: m\ndecode: {linear: {a_ms: "+c.ms+", c_ms: 0}}\nprefill: {per_token_us: 1}\njitter: 0.05\n"), 0o644)
		addr := freePort(t)
		fmt.Fprintf(&yaml, "  - name: %s\n    command: [\"${TOKPERF}\", \"sim\", \"--profile\", %q, \"--addr\", %q]\n    url: http://%s\n    ready_timeout_s: 20\n    grace_s: 2\n", c.name, p, addr, addr)
	}
	yaml.WriteString("sweep:\n  concurrency: [1, 2]\n  requests: 4\n  output_tokens: 20\ncheck:\n  skip: true\nrepeat: 2\n")
	if restart {
		yaml.WriteString("restart_between_repeats: true\n")
	}
	file := filepath.Join(dir, "exp.yaml")
	os.WriteFile(file, []byte(yaml.String()), 0o644)
	cmd := exec.Command(bin, "experiment", file, "-o", filepath.Join(dir, "out"), "--format", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr.String())
	}
	order := regexpAll(stderr.String(), `== (\w) \(repeat (\d) of 2\)`)
	if strings.Join(order, " ") != "a1 b1 a2 b2" {
		t.Errorf("order %v, want a1 b1 a2 b2 (A B A B, restarted)\n%s", order, stderr.String())
	}
	var res struct {
		Asked  struct{ Interleaved bool }
		Levels []struct {
			Cells []struct {
				Unit  string
				Units int
			}
		}
		Configs []struct {
			Name  string
			OK    bool
			Logs  []string
			Seeds []int64
			Run   struct {
				Stages  []struct{ Repeat int }
				Repeats []struct {
					Label   string
					N       int
					Figures []struct {
						Field  string
						Values []float64
						Lo, Hi *float64
					}
				}
			}
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !res.Asked.Interleaved || len(res.Levels) != 2 {
		t.Errorf("asked %+v, %d levels: want interleaved, two levels", res.Asked, len(res.Levels))
	}
	for _, lv := range res.Levels {
		if c := lv.Cells[1]; c.Unit != "repeats" || c.Units != 2 {
			t.Errorf("cell %+v: want the configurations compared over 2 paired repeats", c)
		}
	}
	for _, c := range res.Configs {
		if !c.OK || len(c.Run.Stages) != 4 || len(c.Run.Repeats) != 2 || c.Run.Repeats[0].N != 2 || c.Run.Repeats[0].Figures[0].Lo == nil || len(c.Run.Repeats[0].Figures[0].Values) != 2 {
			t.Errorf("%s: %+v", c.Name, c)
		}
		// Every repeat keeps its own server log and its own seed.
		if len(c.Logs) != 2 || c.Logs[0] == c.Logs[1] || len(c.Seeds) != 2 || c.Seeds[0] == c.Seeds[1] {
			t.Errorf("%s: logs %v, seeds %v: want one of each per repeat", c.Name, c.Logs, c.Seeds)
		}
		for _, l := range c.Logs {
			if b, err := os.ReadFile(l); err != nil || len(b) == 0 {
				t.Errorf("%s: log %s: %v (%d bytes)", c.Name, l, err, len(b))
			}
		}
	}
}

func regexpAll(s, pattern string) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// --repeat 3 on a sweep: the repeats as rows of their own, interleaved,
// and a line per level with the mean and interval across them.
func TestVirtualRepeat(t *testing.T) {
	t.Parallel()
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "1,4", "--repeat", "3", "--requests", "8", "--output-tokens", "20", "-o", t.TempDir()+"/r.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"| 1 #2 |", "| 4 #3 |", "repeats C=1 (3, mean [95% interval]): aggregate tok/s ", "repeats C=4 (3, mean [95% interval]): ", " CV "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Interleaved: C=1, C=4, C=1 #2, …
	if i, j := strings.Index(errw, "C=4: "), strings.Index(errw, "C=1 #2: "); i < 0 || j < 0 || i > j {
		t.Errorf("the repeats did not interleave:\n%s", errw)
	}
}
