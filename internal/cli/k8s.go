package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/k8s"
	"github.com/tokperf/tokperf/internal/shard"
)

// k8sFlags are the flags of tokperf k8s job and tokperf k8s slurm.
type k8sFlags struct {
	shards                             int
	name, runID, command               string
	startIn                            time.Duration
	barrier                            bool
	image, namespace, pvc, cpu, memory string
	logs                               bool
	nodeSelector                       []string
	spread, apiKeySecret               string
	dir, partition, timeLimit          string
	jobOnly, slurmOnly                 []string // flag names, for the check that one was not given to the other
}

func (f *k8sFlags) register(fs *flagSet) {
	fs.group("Shards")
	fs.IntVar(&f.shards, "shards", 0, "processes, each on its own node, that share the benchmark's load (required)")
	fs.StringVar(&f.name, "name", k8s.DefaultName, "the Job's (or the Slurm job's) name")
	fs.StringVar(&f.runID, "run-id", "", "the id the shards of this run share (default: the name and the time, UTC; a new one for every manifest, so runs never share a barrier)")
	fs.DurationVar(&f.startIn, "start-in", 0, "the shards start their first stage this long after now, a time written into the manifest (apply it before then); with --pvc or --dir the later stages still start at the barrier")
	fs.BoolVar(&f.barrier, "barrier", false, "every stage starts once all the shards are there, at a barrier in the shared directory (always so with --pvc or --dir)")
	fs.StringVar(&f.command, "command", k8s.DefaultCommand, "tokperf's path in the image or on the nodes")
	fs.group("Kubernetes (k8s job)")
	fs.StringVar(&f.image, "image", "", "a container image with the tokperf binary (required)")
	fs.StringVar(&f.namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	fs.StringVar(&f.pvc, "pvc", "", "a ReadWriteMany PersistentVolumeClaim every shard mounts at "+k8s.MountPath+": the result files and the barrier")
	fs.BoolVar(&f.logs, "logs", false, "write each shard's results to stdout, for kubectl logs (no volume, so no barrier: needs --start-in and a benchmark of one stage; small runs: the kubelet rotates logs at 10 MiB by default)")
	fs.StringArrayVar(&f.nodeSelector, "node-selector", nil, "run the shards on nodes with this label, key=value (repeatable)")
	fs.StringVar(&f.cpu, "cpu", k8s.DefaultCPU, "CPUs of each shard, requested and the limit (guaranteed QoS: a load generator that shares its CPUs measures its own queueing)")
	fs.StringVar(&f.memory, "memory", k8s.DefaultMemory, "memory of each shard, requested and the limit")
	fs.StringVar(&f.spread, "spread", "required", "required: no two shards on one node (a shard waits for a free node); preferred: spread where the nodes allow")
	fs.StringVar(&f.apiKeySecret, "api-key-secret", "", "the Secret NAME[:KEY] (key default api-key) holding the API key, given to tokperf as $OPENAI_API_KEY")
	f.jobOnly = []string{"image", "namespace", "pvc", "logs", "node-selector", "cpu", "memory", "spread", "api-key-secret"}
	fs.group("Slurm (k8s slurm)")
	fs.StringVar(&f.dir, "dir", "", "a directory every node sees at the same path, for the result files and the barrier (required)")
	fs.StringVar(&f.partition, "partition", "", "the partition (default: the cluster's)")
	fs.StringVar(&f.timeLimit, "time", "", "the array tasks' time limit, e.g. 1:00:00 (default: the partition's)")
	f.slurmOnly = []string{"dir", "partition", "time"}
}

// k8sCmd is tokperf k8s job|slurm [flags] -- run|sweep [flags]: a manifest
// that runs the benchmark as --shards processes on as many nodes.
func k8sCmd(_ context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f k8sFlags
	f.register(fs)
	// The benchmark after -- is parsed too when only parsing is asked for
	// (the README's and the help's command lines).
	whole := *e
	whole.parseOnly = false
	pos, err := parseMixed(fs, args, &whole)
	if err != nil {
		return err
	}
	kind, bench, err := splitBench(pos, fs.ArgsLenAtDash())
	if err != nil {
		return err
	}
	if err := checkBench(bench, e); err != nil {
		return err
	}
	if e.parseOnly {
		return errParsed
	}
	if kind == "slurm" {
		return f.slurm(fs, bench, e)
	}
	return f.job(fs, bench, e)
}

// splitBench splits the positionals into job or slurm and the benchmark
// after --.
func splitBench(pos []string, dash int) (string, []string, error) {
	if len(pos) == 0 || (pos[0] != "job" && pos[0] != "slurm") {
		return "", nil, usagef("want tokperf k8s job or tokperf k8s slurm, then -- and the benchmark")
	}
	if dash != 1 {
		return "", nil, usagef("give the benchmark after --: tokperf k8s %s --shards 4 … -- sweep --url http://vllm:8000 -c 64,256", pos[0])
	}
	return pos[0], pos[1:], nil
}

// checkBench parses the benchmark's flags with run's or sweep's own (files
// they name are read on the nodes, not here) and refuses those the
// manifest sets itself.
func checkBench(bench []string, e *env) error {
	if len(bench) == 0 || (bench[0] != "run" && bench[0] != "sweep") {
		return usagef("after --: want run or sweep and its flags, with the total load of all shards")
	}
	fs := newFlags(bench[0])
	var f loadFlags
	f.register(fs, bench[0])
	inner := *e
	inner.parseOnly = false
	if err := parse(fs, bench[1:], &inner); err != nil {
		if ue := (*usageError)(nil); errors.As(err, &ue) {
			return usagef("after -- %s: %s", bench[0], ue.msg)
		}
		return err
	}
	for _, own := range []string{"shard", "start-at", "barrier", "run-id", "out"} {
		if fs.Lookup(own) != nil && fs.Changed(own) {
			return usagef("after --: --%s is the manifest's own to set for each shard", own)
		}
	}
	switch {
	case fs.Changed("api-key"):
		return usagef("after --: --api-key would be written into the manifest: put the key in a Secret and give --api-key-secret")
	case f.url == "":
		return usagef("after --: give --url, the server every shard measures (the embedded simulator is one per process)")
	}
	if u, err := url.Parse(f.url); err == nil {
		if ip, err := netip.ParseAddr(u.Hostname()); (err == nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			fmt.Fprintf(e.stderr, "warning: --url %s is each shard's own machine: give the server's address as the nodes see it\n", f.url)
		}
	}
	return nil
}

// given is the first of names set on the command line, or "".
func given(fs *flagSet, names []string) string {
	for _, n := range names {
		if fs.Changed(n) {
			return n
		}
	}
	return ""
}

// job prints the Kubernetes Job.
func (f *k8sFlags) job(fs *flagSet, bench []string, e *env) error {
	if n := given(fs, f.slurmOnly); n != "" {
		return usagef("--%s is for tokperf k8s slurm", n)
	}
	j := k8s.Job{Name: f.name, Namespace: f.namespace, Image: f.image, Command: f.command, Shards: f.shards, Bench: bench, RunID: f.runID,
		Claim: f.pvc, CPU: f.cpu, Memory: f.memory}
	switch {
	case f.pvc == "" && !f.logs:
		return usagef("say where the results go: --pvc CLAIM (a ReadWriteMany claim every shard mounts) or --logs (stdout, for kubectl logs)")
	case f.pvc != "" && f.logs:
		return usagef("give --pvc or --logs, not both")
	case f.spread != "required" && f.spread != "preferred":
		return usagef("--spread %q: want required or preferred", f.spread)
	}
	j.Preferred = f.spread == "preferred"
	if err := f.start(&j.StartAt, f.pvc != ""); err != nil {
		return err
	}
	for _, s := range f.nodeSelector {
		l, err := k8s.ParseLabel(s)
		if err != nil {
			return usagef("--node-selector %v", err)
		}
		j.NodeSelector = append(j.NodeSelector, l)
	}
	if f.apiKeySecret != "" {
		j.APIKeySecret, j.APIKeyKey, _ = strings.Cut(f.apiKeySecret, ":")
	}
	j.Fill(time.Now())
	if err := j.Check(); err != nil {
		return usagef("%v", err)
	}
	if err := shardsAccept(j.PodArgs, j.Shards, f.logs); err != nil {
		return err
	}
	return j.Write(e.stdout)
}

// start sets when the shards start: --start-in from now, or zero for the
// barrier, which needs a shared directory.
func (f *k8sFlags) start(at *time.Time, shared bool) error {
	switch {
	case f.startIn < 0:
		return usagef("--start-in must not be negative")
	case f.barrier && !shared:
		return usagef("--barrier needs a directory every shard sees: --pvc")
	case f.startIn > 0:
		*at = time.Now().Add(f.startIn).Truncate(time.Second)
	}
	return nil
}

// slurm prints the sbatch script.
func (f *k8sFlags) slurm(fs *flagSet, bench []string, e *env) error {
	if n := given(fs, f.jobOnly); n != "" {
		return usagef("--%s is for tokperf k8s job", n)
	}
	b := k8s.Batch{Name: f.name, Command: f.command, Shards: f.shards, Bench: bench, RunID: f.runID, Dir: f.dir, Partition: f.partition, Time: f.timeLimit}
	if err := f.start(&b.StartAt, true); err != nil {
		return err
	}
	b.Fill(time.Now())
	if err := b.Check(); err != nil {
		return usagef("%v", err)
	}
	if err := shardsAccept(b.TaskArgs, b.Shards, false); err != nil {
		return err
	}
	return b.Write(e.stdout)
}

// shardsAccept says, where the manifest is written, whether the first and
// the last shard accept what they are asked to run (the others differ
// from them in the index alone): their flags as tokperf parses them and
// what run and sweep check of a shard before they connect (its start, its
// stages). The files the benchmark names are read on the nodes, not here;
// the tests run the whole dry run (env.dryRun) on every shard's command.
func shardsAccept(args func(int) []string, shards int, logs bool) error {
	for _, i := range []int{0, shards - 1} {
		a := args(i)
		fs := newFlags(a[0])
		var f loadFlags
		f.register(fs, a[0])
		err := parse(fs, a[1:], &env{})
		var sh *shard.Config
		if err == nil {
			sh, err = f.shard.config(fs)
		}
		if err == nil {
			if n := len(f.load().Plans()); logs && n > 1 {
				return usagef("--logs: the %s has %d stages, and without a shared directory there is no barrier to start each of them together (--start-in times the first; a stage's length is not known ahead): give --pvc CLAIM, or one level per Job (one -c or one --rate)", a[0], n)
			}
			err = checkShard(sh, &f)
		}
		if err != nil {
			return usagef("shard %d/%d would refuse its command: %v", i, shards, err)
		}
	}
	return nil
}

// checkShard is what Sweep checks of a shard (nil: none) before it
// connects.
func checkShard(sh *shard.Config, f *loadFlags) error {
	return (&bench.SweepConfig{Target: bench.Target{URL: f.url}, Load: f.load(), Shard: sh}).CheckShard()
}
