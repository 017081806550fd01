// Package experiment runs server configurations one after another: it
// starts each one's command in its own process group with its output in a
// log file, and stops the whole group (SIGTERM, then SIGKILL after a grace
// period), waiting until its port is free again.
//
//	f, _ := experiment.Load("ab.yaml")
//	p, _ := experiment.Start(f.Configs[0], dir)
//	defer p.Stop(10 * time.Second)
package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/yamlfile"
)

// File is an experiment: the configurations to compare, the sweep each
// runs (and, optionally, the workloads, overhead, soak and baseline of the
// whole loop), and the checks each must pass.
type File struct {
	Configs []Config `yaml:"configs"`
	// Sweep holds the sweep's flags by their long names (kebab or snake
	// case: input-tokens or input_tokens), as a --config file does; each
	// configuration's own sweep: overrides them. Defaults is the same
	// block under another name (give one of the two).
	Sweep    Keys `yaml:"sweep"`
	Defaults Keys `yaml:"defaults"`
	// Workloads, when given, are two or more named workloads swept on each
	// configuration, each a block of sweep flags over the sweep's.
	Workloads []Keys `yaml:"workloads"`
	// Overhead is the paired raw-vs-chat measurement on each
	// configuration (its flags as tokperf overhead takes them); nil: none.
	Overhead Keys `yaml:"overhead"`
	// Soak is a long stage in time slices on each configuration, judged
	// for stability (its flags as tokperf soak takes them); nil: none.
	Soak     Keys      `yaml:"soak"`
	Baseline *Baseline `yaml:"baseline"`
	Check    Check     `yaml:"check"`
	// Repeat runs each configuration's sweep this many times (0 or 1:
	// once): within one server life, its levels interleaved, or with
	// Restart the configurations in turn (A B A B …), each repeat on a
	// freshly started server, since a restart changes the numbers too.
	Repeat  int  `yaml:"repeat"`
	Restart bool `yaml:"restart_between_repeats"`

	// Path and Data are the file, for errors that name its lines.
	Path string `yaml:"-"`
	Data []byte `yaml:"-"`
	// SweepAt is where the sweep's keys are in the file: "sweep" or
	// "defaults".
	SweepAt string `yaml:"-"`
}

// Keys are flags by their long names, as a --config file holds them; the
// command line turns them into a sweep (or overhead, soak) configuration.
type Keys map[string]any

// Config is one server configuration.
type Config struct {
	Name    string            `yaml:"name"`
	Command []string          `yaml:"command"` // program and arguments, run without a shell
	Shell   bool              `yaml:"shell"`   // run command[0] with sh -c instead
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	URL     string            `yaml:"url"`
	// ReadyTimeoutS bounds the wait for the server to answer (default 600).
	ReadyTimeoutS float64 `yaml:"ready_timeout_s"`
	// GraceS is how long SIGTERM has before SIGKILL (default 10).
	GraceS float64 `yaml:"grace_s"`
	// Sweep overrides the file's sweep keys for this configuration (a seed,
	// --extra-body for this server …).
	Sweep Keys `yaml:"sweep"`
}

// Baseline is what each configuration is compared with for fairness: a
// published baseline by name, or another tool's result file.
type Baseline struct {
	Name      string `yaml:"name"`      // tokperf baselines lists them
	File      string `yaml:"file"`      // another tool's result file (vLLM, SGLang, GuideLLM, AIPerf, inference-perf)
	Baselines string `yaml:"baselines"` // a YAML file of your own baselines
	GPUs      int    `yaml:"gpus"`      // behind each configuration, for the per-GPU arithmetic
	GPU       string `yaml:"gpu"`
	Claim     string `yaml:"claim"` // a ratio stated in words to check ("3x")
}

// Check gates a configuration on correctness before its speed counts.
type Check struct {
	// Mode is required (a configuration that fails is not compared: the
	// default) or report (the check is run and shown; nothing stops).
	Mode      string `yaml:"mode"`
	Questions int    `yaml:"questions"` // default 20; 0 in the file keeps the default
	// MinAccuracy is the share of right answers a configuration needs
	// (default 0.9; 0 in the file is 0: every configuration passes).
	MinAccuracy float64  `yaml:"-"`
	MinAcc      *float64 `yaml:"min_accuracy"`
	// Smoke and Accuracy switch the two halves of the check: sensible
	// output and determinism, and the questions with known answers (both
	// on by default).
	Smoke    *bool `yaml:"smoke"`
	Accuracy *bool `yaml:"accuracy"`
	Skip     bool  `yaml:"skip"`
}

// Report says whether a failed check is shown without stopping.
func (c Check) Report() bool { return c.Mode == "report" }

// SmokeOn and AccuracyOn say which halves of the check run.
func (c Check) SmokeOn() bool    { return c.Smoke == nil || *c.Smoke }
func (c Check) AccuracyOn() bool { return c.Accuracy == nil || *c.Accuracy }

// WorkloadName is a workload's name (its name: key).
func WorkloadName(k Keys) string {
	s, _ := k["name"].(string)
	return s
}

// Load reads and checks an experiment file; errors name file, line and field.
func Load(path string) (*File, error) {
	data, err := infile.ReadAll(context.Background(), path, infile.Config)
	if err != nil {
		return nil, fmt.Errorf("reading the experiment: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks an experiment.
func Parse(file string, data []byte) (*File, error) {
	f := &File{}
	if err := yamlfile.Decode(file, data, f); err != nil {
		return nil, err
	}
	f.Path, f.Data = file, data
	return f, yamlfile.Locate(file, data, f.fill())
}

// Line is the line of a field of the file ("configs[1].sweep.seed").
func (f *File) Line(field string) int { return yamlfile.Line(f.Data, field) }

func (f *File) fill() error {
	if len(f.Configs) == 0 {
		return yamlfile.Fieldf("configs", "list at least one configuration")
	}
	if f.Repeat < 0 || f.Repeat > 100 {
		return yamlfile.Fieldf("repeat", "must be 0..100, got %d", f.Repeat)
	}
	if f.Restart && f.Repeat < 2 {
		return yamlfile.Fieldf("restart_between_repeats", "needs repeat: 2 or more")
	}
	f.SweepAt = "sweep"
	switch {
	case f.Sweep != nil && f.Defaults != nil:
		return yamlfile.Fieldf("defaults", "give sweep: or defaults:, not both (they are one block)")
	case f.Defaults != nil:
		f.Sweep, f.SweepAt = f.Defaults, "defaults"
	}
	if f.Sweep == nil {
		f.Sweep = Keys{}
	}
	names := map[string]bool{}
	for i := range f.Configs {
		c := &f.Configs[i]
		at := fmt.Sprintf("configs[%d]", i)
		switch {
		case c.Name == "":
			return yamlfile.Fieldf(at+".name", "is required")
		case names[c.Name]:
			return yamlfile.Fieldf(at+".name", "%q appears twice", c.Name)
		case len(c.Command) == 0:
			return yamlfile.Fieldf(at+".command", "is required: the program and its arguments")
		case c.Shell && len(c.Command) != 1:
			return yamlfile.Fieldf(at+".command", "with shell: true, give one command line")
		case c.ReadyTimeoutS < 0 || c.GraceS < 0:
			return yamlfile.Fieldf(at, "timeouts must not be negative")
		case !(c.ReadyTimeoutS <= maxWaitS):
			// Past ~292 years a time.Duration overflows: "not ready" at once.
			return yamlfile.Fieldf(at+".ready_timeout_s", "%g: want 0 (600) to %d (a day)", c.ReadyTimeoutS, maxWaitS)
		case !(c.GraceS <= maxWaitS):
			return yamlfile.Fieldf(at+".grace_s", "%g: want 0 (10) to %d (a day)", c.GraceS, maxWaitS)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" {
			return yamlfile.Fieldf(at+".url", "%q is not an http(s) URL with a host and port", c.URL)
		}
		if c.Dir != "" {
			// Else the start fails as "fork/exec …: no such file or
			// directory", naming the program, not the folder.
			if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
				return yamlfile.Fieldf(at+".dir", "%q is not a directory here (the command runs in it)", c.Dir)
			}
		}
		names[c.Name] = true
		if c.ReadyTimeoutS == 0 {
			c.ReadyTimeoutS = 600
		}
		if c.GraceS == 0 {
			c.GraceS = 10
		}
	}
	if len(f.Workloads) == 1 {
		return yamlfile.Fieldf("workloads", "give two or more workloads to compare, or none (the sweep's own)")
	}
	seen := map[string]bool{}
	for i, w := range f.Workloads {
		at := fmt.Sprintf("workloads[%d]", i)
		name := WorkloadName(w)
		switch {
		case name == "":
			return yamlfile.Fieldf(at+".name", "is required: a name for the workload, e.g. synthetic or sharegpt")
		case seen[name]:
			return yamlfile.Fieldf(at+".name", "%q appears twice", name)
		}
		seen[name] = true
	}
	switch f.Check.Mode {
	case "":
		f.Check.Mode = "required"
	case "required", "report":
	default:
		return yamlfile.Fieldf("check.mode", "%q: want required or report", f.Check.Mode)
	}
	f.Check.MinAccuracy = 0.9
	if f.Check.MinAcc != nil {
		f.Check.MinAccuracy = *f.Check.MinAcc
	}
	if f.Check.Questions < 0 || !(f.Check.MinAccuracy >= 0 && f.Check.MinAccuracy <= 1) {
		return yamlfile.Fieldf("check", "questions must not be negative, min_accuracy in [0, 1]")
	}
	if f.Check.Questions == 0 {
		f.Check.Questions = 20
	}
	if b := f.Baseline; b != nil {
		switch {
		case (b.Name == "") == (b.File == ""):
			return yamlfile.Fieldf("baseline", "give name: (a published baseline) or file: (another tool's result file)")
		case b.GPUs < 0:
			return yamlfile.Fieldf("baseline.gpus", "must not be negative")
		}
	}
	return nil
}

// maxWaitS bounds ready_timeout_s and grace_s: a day.
const maxWaitS = 86400

// Process is a started configuration.
type Process struct {
	Config Config
	Log    string // the log file of its stdout and stderr
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
}

// Start runs a configuration's command in its own process group, its
// output going to a log file in dir. ${TOKPERF} in the command is this
// program.
func Start(c Config, dir string) (*Process, error) {
	return StartLogged(c, filepath.Join(dir, safe(c.Name)+".log"))
}

// StartLogged is Start with the log file named: each repeat of a restarted
// configuration keeps its own log.
func StartLogged(c Config, logPath string) (*Process, error) {
	self, _ := os.Executable()
	args := make([]string, len(c.Command))
	for i, a := range c.Command {
		args[i] = strings.ReplaceAll(a, "${TOKPERF}", self)
	}
	var cmd *exec.Cmd
	if c.Shell {
		cmd = shellCommand(args[0])
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	OwnGroup(cmd)
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	out := newCapped(log, logKeep)
	cmd.Stdout, cmd.Stderr = out, out
	// A daemon that keeps the server's output open does not hold Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	Track(cmd.Process)
	p := &Process{Config: c, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

func safe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, name)
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, string) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, "exited with status 0"
		}
		return true, p.err.Error()
	default:
		return false, ""
	}
}

// Done is closed when the process ends.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the process group: SIGTERM, then SIGKILL after grace. It
// returns how long the group took to end.
func (p *Process) Stop(grace time.Duration) time.Duration {
	start := time.Now()
	SignalGroup(p.cmd.Process, false)
	select {
	case <-p.done:
	case <-time.After(grace):
		SignalGroup(p.cmd.Process, true)
		<-p.done
	}
	// Children that outlived their leader go too.
	SignalGroup(p.cmd.Process, true)
	Untrack(p.cmd.Process)
	return time.Since(start)
}

// PortFree waits until nothing accepts connections at the URL's host and
// port, up to timeout.
func PortFree(rawURL string, timeout time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", u.Host, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return errors.New(u.Host + " still accepts connections")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Tail is the last lines of a log file.
func Tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// GPUMemory is the memory used on all GPUs now, from nvidia-smi, in MiB;
// false when there is no nvidia-smi.
func GPUMemory() (float64, bool) {
	out, err := exec.Command("nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0, false
	}
	total := 0.0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(line), 64); err == nil {
			total += v
		}
	}
	return total, true
}

// WaitGPUFree waits until the GPUs hold no more than baseline MiB (plus a
// little), as after a server's memory is released, up to timeout.
func WaitGPUFree(baseline float64, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		used, ok := GPUMemory()
		if !ok || used <= baseline*1.02+256 {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("GPUs still hold %.0f MiB (%.0f before the server started)", used, baseline)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
