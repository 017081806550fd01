//go:build k8s

package k8s_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tokperf/tokperf/internal/cli"
)

// guideCommands are the tokperf k8s command lines of the sh blocks of
// docs/distributed.md, the guide to running tokperf on a cluster, as
// arguments, and the guide.
func guideCommands(t *testing.T, sub string) ([][]string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "distributed.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		for _, line := range strings.Split(block[1], "\n") {
			if rest, ok := strings.CutPrefix(line, "go run ./cmd/tokperf k8s "+sub+" "); ok {
				rest, _, _ = strings.Cut(rest, " > ")
				cmds = append(cmds, append([]string{"k8s", sub}, strings.Fields(rest)...))
			}
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("docs/distributed.md shows no tokperf k8s %s", sub)
	}
	return cmds, string(b)
}

func run(t *testing.T, args []string) []byte {
	t.Helper()
	var out, errw bytes.Buffer
	code := cli.Run(context.Background(), args, strings.NewReader(""), &out, &errw)
	// The one warning a command may give: a --url of the machine itself,
	// as the guide's run on a one-node cluster has (and shows).
	warned := regexp.MustCompile(`^warning: --url \S+ is each shard's own machine[^\n]*\n$`).Match(errw.Bytes())
	if code != 0 || (errw.Len() > 0 && !warned) {
		t.Fatalf("tokperf %q: exit %d\n%s", args, code, errw.String())
	}
	return out.Bytes()
}

// The guide's tokperf k8s job commands print manifests that decode
// strictly into batch/v1 Jobs and pass the schema, and the kubectl lines
// beside them name that Job and its results.
func TestGuideJobs(t *testing.T) {
	t.Parallel()
	cmds, readme := guideCommands(t, "job")
	sch := compileJobSchema(t)
	for _, args := range cmds {
		m := run(t, args)
		job := decode(t, m)
		if err := validate(t, sch, m); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		if !strings.Contains(readme, "job/"+job.Name) {
			t.Errorf("the guide waits for no job/%s", job.Name)
		}
		c := job.Spec.Template.Spec.Containers[0]
		if len(job.Spec.Template.Spec.Volumes) == 0 {
			loop := "for i in " + seq(int(*job.Spec.Completions)) + "; do kubectl logs --tail=-1 -l job-name=" + job.Name + ","
			if !strings.Contains(readme, loop) {
				t.Errorf("the guide does not collect the logs of %s's shards with %q", job.Name, loop)
			}
			continue
		}
		runID := c.Args[slices.Index(c.Args, "--run-id")+1]
		claim := job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
		if !strings.Contains(readme, ":/results/"+runID+" ") || !strings.Contains(readme, "report "+runID+"/shard-*.jsonl") {
			t.Errorf("the guide copies and reports no /results/%s", runID)
		}
		examples(t, claim)
	}
}

func seq(n int) string {
	var s []string
	for i := range n {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, " ")
}

// examples checks the claim and the copying pod the guide applies: they
// decode strictly into the core/v1 types, pass the schema, and are the
// claim the Job mounts, ReadWriteMany, mounted at /results.
func examples(t *testing.T, claim string) {
	t.Helper()
	read := func(name string, v any) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return b
	}
	var pvc corev1.PersistentVolumeClaim
	var pod corev1.Pod
	pvcYAML, podYAML := read("k8s-results-pvc.yaml", &pvc), read("k8s-results-pod.yaml", &pod)
	if pvc.Name != claim || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("examples/k8s-results-pvc.yaml: claim %s, modes %v; the Job mounts %s, shared by every node", pvc.Name, pvc.Spec.AccessModes, claim)
	}
	v, m := pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts
	if len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != claim || len(m) != 1 || m[0].MountPath != "/results" {
		t.Errorf("examples/k8s-results-pod.yaml does not mount %s at /results: %+v %+v", claim, v, m)
	}
	for _, f := range []struct {
		def  string
		yaml []byte
	}{{"io.k8s.api.core.v1.PersistentVolumeClaim", pvcYAML}, {"io.k8s.api.core.v1.Pod", podYAML}} {
		if err := validate(t, compileSchema(t, "api__v1_openapi.json", f.def), f.yaml); err != nil {
			t.Errorf("%s: %v", f.def, err)
		}
	}
}

// The guide's tokperf k8s slurm commands print scripts bash reads, and the
// guide reports the files they write.
func TestGuideSlurm(t *testing.T) {
	t.Parallel()
	cmds, readme := guideCommands(t, "slurm")
	for _, args := range cmds {
		script := run(t, args)
		if bash, err := exec.LookPath("bash"); err == nil {
			cmd := exec.Command(bash, "-n")
			cmd.Stdin = bytes.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v %s\n%s", err, out, script)
			}
		}
		files := regexp.MustCompile(`tokperf report (\S+)`).FindSubmatch(script)
		if files == nil || !strings.Contains(readme, "report "+string(files[1])) {
			t.Errorf("the guide does not report the script's files %s", files)
		}
	}
}
