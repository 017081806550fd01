package k8s_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/k8s"
)

// credentialBench is a benchmark whose flags hold credentials: a URL's
// query key, an Authorization header, an X-Api-Key; X-Tenant is none.
var credentialBench = []string{"sweep", "--url", "http://gpu-1:8000/v1?key=S3CRET1", "--header", "Authorization: Bearer S3CRET2",
	"--header=X-Api-Key: S3CRET3", "--header", "X-Tenant: bench", "-c", "64"}

// The manifest holds no credential of the flags: each is a Secret's key,
// given to the container as a variable that its args name.
func TestJobCredentialsFromSecret(t *testing.T) {
	t.Parallel()
	j := k8s.Job{Image: "img", Shards: 2, StartAt: time.Unix(1.8e9, 0), Bench: credentialBench}
	j.Fill(time.Unix(1.8e9, 0))
	var out bytes.Buffer
	if err := j.Write(&out); err != nil {
		t.Fatal(err)
	}
	m := out.String()
	if strings.Contains(m, "S3CRET") {
		t.Fatalf("a credential is in the manifest:\n%s", m)
	}
	for _, want := range []string{`- "$(TOKPERF_SECRET_1)"`, `- "Authorization: $(TOKPERF_SECRET_2)"`, `- "--header=X-Api-Key: $(TOKPERF_SECRET_3)"`,
		`- "X-Tenant: bench"`, `name: "TOKPERF_SECRET_3"`, `name: "tokperf-credentials"`, "kubectl create secret generic tokperf-credentials --from-literal=url-1="} {
		if !strings.Contains(m, want) {
			t.Errorf("no %q in\n%s", want, m)
		}
	}
}

// The Slurm script holds no credential either: it takes them from the
// environment sbatch passes on, refuses to start without them, and the
// benchmark gets each whole.
func TestSlurmCredentialsFromEnvironment(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "bin")
	os.Mkdir(stub, 0o755)
	os.WriteFile(filepath.Join(stub, "tokperf"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\000' \"$a\"; done > \"$ARGS_OUT\"\n"), 0o755)
	b := k8s.Batch{Shards: 2, Dir: filepath.Join(dir, "shared"), Bench: credentialBench}
	b.Fill(time.Unix(1.8e9, 0))
	var script bytes.Buffer
	if err := b.Write(&script); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(script.String(), "S3CRET") {
		t.Fatalf("a credential is in the script:\n%s", script.String())
	}
	path := filepath.Join(dir, "job.sbatch")
	os.WriteFile(path, script.Bytes(), 0o644)
	env := append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID=1", "ARGS_OUT="+filepath.Join(dir, "args"))
	if out, err := (&exec.Cmd{Path: bash, Args: []string{bash, path}, Env: env}).CombinedOutput(); err == nil || !strings.Contains(string(out), "TOKPERF_SECRET_1: export it before sbatch") {
		t.Errorf("without the variables: %v\n%s", err, out)
	}
	env = append(env, "TOKPERF_SECRET_1=http://gpu-1:8000/v1?key=S3CRET1", "TOKPERF_SECRET_2=Bearer S3CRET2", "TOKPERF_SECRET_3=S3CRET3")
	if out, err := (&exec.Cmd{Path: bash, Args: []string{bash, path}, Env: env}).CombinedOutput(); err != nil {
		t.Fatalf("bash job.sbatch: %v\n%s\n%s", err, out, script.String())
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "args"))
	got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	if !slices.Equal(got[:len(credentialBench)], credentialBench) {
		t.Errorf("the benchmark got\n%q\nwant\n%q", got[:len(credentialBench)], credentialBench)
	}
}
