// Package k8s writes what runs one tokperf benchmark as N shards on a
// cluster's own batch machinery: a Kubernetes batch/v1 Indexed Job (one pod
// per shard, JOB_COMPLETION_INDEX → --shard), or a Slurm sbatch array
// script (SLURM_ARRAY_TASK_ID → --shard). It only writes text: no network,
// no cluster client, no Kubernetes library (the tests hold the manifest to
// k8s.io/api's types and the Kubernetes OpenAPI schema).
//
//	j := k8s.Job{Shards: 4, Image: "registry.example/tokperf:v1", Claim: "bench-results",
//		Bench: []string{"sweep", "--url", "http://vllm:8000", "-c", "64,256"}}
//	if err := j.Check(); err == nil {
//		j.Write(os.Stdout) // kubectl apply -f -
//	}
package k8s

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Defaults of a Job.
const (
	DefaultName    = "tokperf"
	DefaultCommand = "tokperf"
	DefaultCPU     = "2"
	DefaultMemory  = "2Gi"
	MountPath      = "/results" // where the claim is mounted in every pod
	IndexVar       = "JOB_COMPLETION_INDEX"
	indexField     = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	hostnameKey    = "kubernetes.io/hostname"
	// maxShards is the Job API's limit on the parallelism of an Indexed Job.
	maxShards = 100000
)

// Job is one sharded benchmark as a Kubernetes Indexed Job.
type Job struct {
	Name      string // the Job's name (default DefaultName)
	Namespace string // "": kubectl's current namespace
	Image     string // an image with the tokperf binary
	Command   string // the binary in the image (default DefaultCommand)
	Shards    int
	// Bench is the tokperf command every shard runs, "run" or "sweep"
	// and the user's flags, with the total load of all shards; the shard
	// flags are added to it (Args).
	Bench []string
	RunID string // shared by the shards of one run (default: Name and the time)
	// Claim is a PersistentVolumeClaim (ReadWriteMany) every shard
	// mounts at MountPath for its result file and the start barrier; ""
	// writes the results to stdout, for kubectl logs.
	Claim string
	// StartAt is when the first stage starts; zero: as soon as every
	// shard is at the barrier on the claim. With a claim every stage also
	// starts at the barrier; without one StartAt alone starts the shards,
	// so the benchmark must be one stage (a stage's length is not known
	// ahead).
	StartAt      time.Time
	NodeSelector []Label
	CPU, Memory  string // each a request and the same limit (guaranteed QoS)
	// Preferred relaxes the rule that no two shards share a node (required
	// anti-affinity) to a preference, for a cluster of fewer nodes than
	// shards.
	Preferred bool
	// APIKeySecret is a Secret whose key APIKeyKey holds the API key, given
	// to tokperf as $OPENAI_API_KEY (so the key is not in the manifest).
	APIKeySecret, APIKeyKey string
}

// Label is one key=value of a node selector.
type Label struct{ Key, Value string }

// ParseLabel reads key=value.
func ParseLabel(s string) (Label, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Label{}, fmt.Errorf("%q: want key=value, e.g. node.kubernetes.io/instance-type=c7i.4xlarge", s)
	}
	l := Label{k, v}
	return l, l.check()
}

// withDefaults is j with its defaults filled in.
func (j Job) withDefaults(now time.Time) Job {
	if j.Name == "" {
		j.Name = DefaultName
	}
	if j.Command == "" {
		j.Command = DefaultCommand
	}
	if j.CPU == "" {
		j.CPU = DefaultCPU
	}
	if j.Memory == "" {
		j.Memory = DefaultMemory
	}
	if j.RunID == "" {
		j.RunID = j.Name + "-" + now.UTC().Format("20060102-150405")
	}
	if j.APIKeySecret != "" && j.APIKeyKey == "" {
		j.APIKeyKey = "api-key"
	}
	return j
}

// Fill sets the defaults of the fields left empty, the run id from now.
func (j *Job) Fill(now time.Time) { *j = j.withDefaults(now) }

// Check says what is wrong with j, naming the flag a user would change.
func (j Job) Check() error {
	if err := checkShards(j.Shards); err != nil {
		return err
	}
	if err := checkBench(j.Bench); err != nil {
		return err
	}
	if err := checkName("--name", j.Name, j.Shards); err != nil {
		return err
	}
	if j.Namespace != "" {
		if err := checkLabelName("--namespace", j.Namespace); err != nil {
			return err
		}
	}
	switch {
	case j.Image == "":
		return fmt.Errorf("--image: give an image with the tokperf binary (its path in the image: --command)")
	case strings.ContainsAny(j.Image, " \t\n$"):
		return fmt.Errorf("--image %q: an image reference has no spaces or $", j.Image)
	case j.Command == "" || strings.ContainsAny(j.Command, "$\n"):
		return fmt.Errorf("--command %q: want the path of tokperf in the image", j.Command)
	case j.Claim == "" && j.StartAt.IsZero():
		return fmt.Errorf("with the results on stdout (--logs) there is no shared directory for a start barrier: give --start-in, e.g. --start-in 3m (time to apply and pull the image)")
	}
	if j.Claim != "" {
		if err := checkSubdomain("--pvc", j.Claim); err != nil {
			return err
		}
	}
	if err := checkRunID(j.RunID); err != nil {
		return err
	}
	for _, l := range j.NodeSelector {
		if err := l.check(); err != nil {
			return err
		}
	}
	if err := checkQuantity("--cpu", j.CPU); err != nil {
		return err
	}
	if err := checkQuantity("--memory", j.Memory); err != nil {
		return err
	}
	if j.APIKeySecret != "" {
		if err := checkSubdomain("--api-key-secret", j.APIKeySecret); err != nil {
			return err
		}
		if !configKey().MatchString(j.APIKeyKey) {
			return fmt.Errorf("--api-key-secret: key %q: want letters, digits, -, _ or .", j.APIKeyKey)
		}
	}
	return nil
}

// ResultFile is the result file of shard i on the claim ("" with the
// results on stdout).
func (j Job) ResultFile(i string) string {
	if j.Claim == "" {
		return ""
	}
	return MountPath + "/" + j.RunID + "/shard-" + i + ".jsonl"
}

// Args are the container's arguments: the benchmark with every $ escaped
// as $$ (Kubernetes expands $(VAR) in args), then the shard flags, with
// $(JOB_COMPLETION_INDEX) for the shard's index.
func (j Job) Args() []string {
	var args []string
	k := 0
	for i, a := range j.Bench {
		if s := credentials(j.Bench)[i]; s != nil {
			// The credential comes from the Secret, by its variable.
			k++
			a = strings.ReplaceAll(s.before, "$", "$$") + "$(" + secretVar(k) + ")"
			args = append(args, a)
			continue
		}
		args = append(args, strings.ReplaceAll(a, "$", "$$"))
	}
	index := "$(" + IndexVar + ")"
	out, barrier := "-", ""
	if j.Claim != "" {
		out, barrier = j.ResultFile(index), MountPath+"/"+j.RunID+"/barrier"
	}
	return append(args, shardFlags(index, j.Shards, j.RunID, j.StartAt, barrier, out)...)
}

// PodArgs are the arguments tokperf gets in the pod of shard index: Args
// as the kubelet expands them, $(JOB_COMPLETION_INDEX) its value and $$ a
// $, for the dry run of what each shard is asked to run.
func (j Job) PodArgs(index int) []string {
	vars := map[string]string{IndexVar: strconv.Itoa(index)}
	var args []string
	for _, a := range j.Args() {
		args = append(args, Expand(a, vars))
	}
	return args
}

// Expand is s as the kubelet expands a container's command and args:
// $(NAME) is the value of variable NAME when it is defined and stays as it
// is when not, $$ is one $, and any other $ is kept.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte('$')
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// shardFlags are the flags that make one process shard index (a variable
// the cluster sets) of a run: its share, the run it belongs to, when it
// starts and where its results go (a file, or - for stdout). With a shared
// directory every stage starts at the barrier there once every shard has
// arrived (startAt, when set, also holds the first stage to that time);
// without one (barrier ""), startAt alone starts the first and only stage.
func shardFlags(index string, shards int, runID string, startAt time.Time, barrier, out string) []string {
	args := []string{"--shard", index + "/" + strconv.Itoa(shards), "--run-id", runID}
	if barrier != "" {
		args = append(args, "--barrier", barrier)
	}
	if !startAt.IsZero() {
		args = append(args, "--start-at", startAt.UTC().Format(time.RFC3339))
	}
	return append(args, "-o", out)
}

// labels are the pod template's labels, which the anti-affinity selects.
func (j Job) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "tokperf", "app.kubernetes.io/instance": j.Name}
}

// secrets are the credentials in the benchmark's flags, in order.
func (j Job) secrets() []*secretArg {
	var out []*secretArg
	for _, s := range credentials(j.Bench) {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// secretName is the Secret the flags' credentials are read from: the API
// key's, or NAME-credentials.
func (j Job) secretName() string {
	if j.APIKeySecret != "" {
		return j.APIKeySecret
	}
	return j.Name + "-credentials"
}

// Write writes the Job's manifest as YAML, with a comment saying how to
// run it and collect the results.
func (j Job) Write(w io.Writer) error {
	if err := j.Check(); err != nil {
		return err
	}
	if _, err := io.WriteString(w, j.comment()); err != nil {
		return err
	}
	return writeYAML(w, j.manifest())
}

// comment is the manifest's head: what it runs and the commands that
// follow it.
func (j Job) comment() string {
	ns := ""
	if j.Namespace != "" {
		ns = " -n " + j.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# tokperf %s as %d shards (run %s), one pod per shard on different nodes.\n", j.Bench[0], j.Shards, j.RunID)
	if cs := j.secrets(); len(cs) > 0 {
		fmt.Fprintf(&b, "# The flags' credentials are not in this file: they are read from Secret %s, made first:\n#   kubectl%s create secret generic %s", j.secretName(), ns, j.secretName())
		for _, s := range cs {
			fmt.Fprintf(&b, " --from-literal=%s='<%s>'", s.key, s.what)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "#   kubectl%s apply -f job.yaml\n", ns)
	fmt.Fprintf(&b, "#   kubectl%s wait --for=condition=complete --timeout=2h job/%s\n", ns, j.Name)
	if j.Claim == "" {
		fmt.Fprintf(&b, "#   for i in $(seq 0 %d); do kubectl%s logs --tail=-1 -l job-name=%s,batch.kubernetes.io/job-completion-index=$i | grep '^{' > shard-$i.jsonl; done\n", j.Shards-1, ns, j.Name)
	} else {
		fmt.Fprintf(&b, "#   the result files: %s on claim %s (kubectl cp them from a pod that mounts it)\n", j.ResultFile("*"), j.Claim)
	}
	fmt.Fprintf(&b, "#   tokperf report shard-*.jsonl\n#   kubectl%s delete job %s\n", ns, j.Name)
	return b.String()
}
