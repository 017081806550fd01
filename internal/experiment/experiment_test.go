package experiment

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Commands run without a shell unless the file says shell: true.
func TestShellOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Name: "plain", Command: []string{"echo", "$HOME", "a;b"}}, "$HOME a;b"},
		{Config{Name: "shell", Command: []string{"echo one; echo two"}, Shell: true}, "one\ntwo"},
	} {
		p, err := Start(tc.c, dir)
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		b, _ := os.ReadFile(p.Log)
		if got := strings.TrimSpace(string(b)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.c.Name, got, tc.want)
		}
	}
}

// Stop ends the whole process group, children included, after the grace.
//
// Serial: real time: a stop within its grace and 5 s.
func TestStopKillsTheGroup(t *testing.T) {
	p, err := Start(Config{Name: "stubborn", Command: []string{"trap '' TERM; sleep 30 & sleep 30; wait"}, Shell: true}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if took := p.Stop(300 * time.Millisecond); took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("stopped after %v with a 300 ms grace", took)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("still running")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"configs: []\n", "f.yaml:1: configs: list at least one configuration"},
		{"configs:\n  - name: a\n    url: http://127.0.0.1:1\n", "configs[0].command: is required"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n  - name: a\n    command: [x]\n    url: http://h:2\n", `f.yaml:5: configs[1].name: "a" appears twice`},
		{"configs:\n  - name: a\n    command: [x, y]\n    shell: true\n    url: http://h:1\n", "with shell: true, give one command line"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nsweep: {seed: 1}\ndefaults: {seed: 2}\n", "f.yaml:6: defaults: give sweep: or defaults:, not both"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nworkloads:\n  - name: one\n", "f.yaml:6: workloads: give two or more"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nworkloads:\n  - name: one\n  - dataset: d.json\n", "f.yaml:7: workloads[1].name: is required"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\ncheck:\n  mode: maybe\n", "f.yaml:6: check.mode: \"maybe\": want required or report"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nbaseline:\n  gpus: 2\n", "f.yaml:6: baseline: give name: (a published baseline) or file:"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n    colour: red\n", "f.yaml:5:"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nrepeat: -1\n", "f.yaml:5: repeat: must be 0..100, got -1"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nrestart_between_repeats: true\n", "f.yaml:5: restart_between_repeats: needs repeat: 2 or more"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n    dir: /no/such/dir\n", `f.yaml:5: configs[0].dir: "/no/such/dir" is not a directory here`},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n    ready_timeout_s: 1e10\n", "f.yaml:5: configs[0].ready_timeout_s: 1e+10: want 0 (600) to 86400"},
		{"configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n    grace_s: 1e300\n", "configs[0].grace_s: 1e+300: want"},
	} {
		_, err := Parse("f.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("configs:\n  - name: a\n    command: [x]\n    url: http://h:1\n"))
	// Near the inputs that crashed or exhausted the YAML library: a tag
	// one deletion away from having no value, aliases, deep nesting.
	f.Add([]byte("configs:\n  - name: a\n    command: !tag x\n"))
	f.Add([]byte("configs:\n  - name: !t a\n    command: [!t x]\n"))
	f.Add([]byte("configs:\n  - &a {name: a, command: [x], url: 'http://h:1'}\n  - *a\n"))
	f.Add([]byte("configs: [[[[[[[[{name: a}]]]]]]]]\n"))
	f.Add([]byte("configs:\n  - name: a\n    command: [x]\n    url: http://h:1\nrepeat: 3\nrestart_between_repeats: true\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := Parse("fuzz.yaml", in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if len(e.Configs) == 0 || e.Sweep == nil || len(e.Workloads) == 1 || (e.Check.Mode != "required" && e.Check.Mode != "report") || e.Repeat < 0 || (e.Restart && e.Repeat < 2) {
			t.Fatalf("accepted an empty experiment: %+v", e)
		}
	})
}

// min_accuracy 0 in the file is 0 (every configuration passes the check),
// not the default; the default applies only when the field is absent.
func TestMinAccuracyZeroIsZero(t *testing.T) {
	t.Parallel()
	base := "configs:\n  - name: a\n    command: [sleep, '1']\n    url: http://127.0.0.1:1\n"
	for _, tc := range []struct {
		extra string
		want  float64
	}{{"", 0.9}, {"check:\n  min_accuracy: 0\n", 0}, {"check:\n  min_accuracy: 0.5\n", 0.5}} {
		f, err := Parse("x.yaml", []byte(base+tc.extra))
		if err != nil || f.Check.MinAccuracy != tc.want {
			t.Errorf("%q: min accuracy %v (%v), want %v", tc.extra, f.Check.MinAccuracy, err, tc.want)
		}
	}
}
