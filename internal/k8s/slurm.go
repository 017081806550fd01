package k8s

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Batch is one sharded benchmark as a Slurm job array: one array task per
// shard, each on a node of its own (--exclusive).
type Batch struct {
	Name    string // the job's name (default DefaultName)
	Command string // tokperf on the nodes (default DefaultCommand)
	Shards  int
	Bench   []string // as Job.Bench
	RunID   string   // default: Name and the time
	// Dir is a directory every node sees at the same path (NFS, Lustre):
	// the result files and the barrier go under Dir/RunID.
	Dir       string
	StartAt   time.Time // when the first stage starts (zero: when every task is at the barrier in Dir, which starts every stage)
	Partition string    // "": the cluster's default
	Time      string    // the array tasks' time limit, e.g. 1:00:00 ("": the partition's)
}

// IndexVarSlurm is the variable Slurm sets to an array task's index.
const IndexVarSlurm = "SLURM_ARRAY_TASK_ID"

var (
	slurmPath = lazyRegexp(`^/[A-Za-z0-9_./+-]*$`)
	slurmWord = lazyRegexp(`^[A-Za-z0-9_.,:+-]+$`)
)

// Fill sets the defaults of the fields left empty, the run id from now.
func (b *Batch) Fill(now time.Time) {
	j := Job{Name: b.Name, Command: b.Command, RunID: b.RunID}.withDefaults(now)
	b.Name, b.Command, b.RunID = j.Name, j.Command, j.RunID
}

// Check says what is wrong with b, naming the flag a user would change.
func (b Batch) Check() error {
	if err := checkShards(b.Shards); err != nil {
		return err
	}
	if err := checkBench(b.Bench); err != nil {
		return err
	}
	if err := checkRunID(b.RunID); err != nil {
		return err
	}
	switch {
	case !slurmWord().MatchString(b.Name):
		return fmt.Errorf("--name %q: want letters, digits and _.,:+-", b.Name)
	case b.Dir == "":
		return fmt.Errorf("--dir: give a directory every node sees at the same path, for the result files and the start barrier")
	case !slurmPath().MatchString(b.Dir):
		return fmt.Errorf("--dir %q: want an absolute path of letters, digits and _./+- (it goes into #SBATCH lines)", b.Dir)
	case b.Partition != "" && !slurmWord().MatchString(b.Partition):
		return fmt.Errorf("--partition %q: want letters, digits and _.,:+-", b.Partition)
	case b.Time != "" && !slurmWord().MatchString(b.Time):
		return fmt.Errorf("--time %q: want a Slurm time limit such as 90, 1:30:00 or 1-00:00:00", b.Time)
	case b.Command == "" || strings.ContainsAny(b.Command, "\n"):
		return fmt.Errorf("--command %q: want the path of tokperf on the nodes", b.Command)
	}
	return nil
}

// run is the directory of the run's files.
func (b Batch) run() string { return strings.TrimSuffix(b.Dir, "/") + "/" + b.RunID }

// ResultFile is the result file of shard i.
func (b Batch) ResultFile(i string) string { return b.run() + "/shard-" + i + ".jsonl" }

// Args are tokperf's arguments in array task index (a shell expression).
func (b Batch) Args(index string) []string {
	bench := append([]string(nil), b.Bench...)
	k := 0
	for i, s := range credentials(b.Bench) {
		if s != nil {
			// Marked for Write, which puts the variable in its place.
			k++
			bench[i] = s.before + "\x01" + strconv.Itoa(k) + "\x01"
		}
	}
	return append(bench, shardFlags(index, b.Shards, b.RunID, b.StartAt, b.run()+"/barrier", b.ResultFile(index))...)
}

// TaskArgs are tokperf's arguments in array task index, the index
// substituted, for the dry run of what each task is asked to run.
func (b Batch) TaskArgs(index int) []string { return b.Args(strconv.Itoa(index)) }

// Write writes the sbatch script.
func (b Batch) Write(w io.Writer) error {
	if err := b.Check(); err != nil {
		return err
	}
	var s strings.Builder
	fmt.Fprintf(&s, "#!/bin/bash\n# tokperf %s as %d shards (run %s), one array task per node.\n", b.Bench[0], b.Shards, b.RunID)
	fmt.Fprintf(&s, "#   sbatch --wait job.sbatch\n#   tokperf report %s\n", b.ResultFile("*"))
	if b.StartAt.IsZero() {
		fmt.Fprintf(&s, "# Each task waits at the barrier until all %d run: the partition must give %d nodes at once.\n", b.Shards, b.Shards)
	}
	fmt.Fprintf(&s, "#SBATCH --job-name=%s\n#SBATCH --array=0-%d\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --exclusive\n", b.Name, b.Shards-1)
	fmt.Fprintf(&s, "#SBATCH --output=%s/%s-%%a.out\n", strings.TrimSuffix(b.Dir, "/"), b.RunID)
	if b.Partition != "" {
		fmt.Fprintf(&s, "#SBATCH --partition=%s\n", b.Partition)
	}
	if b.Time != "" {
		fmt.Fprintf(&s, "#SBATCH --time=%s\n", b.Time)
	}
	fmt.Fprintf(&s, "set -euo pipefail\n")
	k := 0
	for _, c := range credentials(b.Bench) {
		if c != nil {
			// The credentials are not in the script: sbatch passes the
			// submitting shell's environment on.
			k++
			fmt.Fprintf(&s, ": \"${%s:?export it before sbatch: %s}\"\n", secretVar(k), c.what)
		}
	}
	fmt.Fprintf(&s, "mkdir -p %s\n", shellQuote(b.run()))
	// Every argument is quoted for the shell; the index is expanded.
	index := "${" + IndexVarSlurm + "}"
	words := []string{"exec", shellQuote(b.Command)}
	for _, a := range b.Args("\x00") {
		q := shellQuote(a)
		if strings.Contains(a, "\x00") { // ours: no quotes inside
			q = strings.ReplaceAll(strings.ReplaceAll(q, "\x00", `'"`+index+`"'`), "''", "")
		}
		if before, num, ok := strings.Cut(a, "\x01"); ok { // a credential, by its variable
			num = strings.TrimSuffix(num, "\x01")
			q = shellQuote(before) + `"${` + secretVar(atoi(num)) + `}"`
			q = strings.TrimPrefix(q, "''")
		}
		words = append(words, q)
	}
	s.WriteString(strings.Join(words, " ") + "\n")
	_, err := io.WriteString(w, s.String())
	return err
}

// shellQuote is s in single quotes, for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
