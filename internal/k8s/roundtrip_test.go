//go:build k8s

package k8s_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/tokperf/tokperf/internal/k8s"
)

// jobs are the shapes of Job tokperf writes, with benchmark arguments that
// a careless YAML writer or a forgotten $ escape would change.
var jobs = map[string]k8s.Job{
	"claim and barrier": {Shards: 4, Image: "registry.example/tokperf:v1", Claim: "bench-results",
		Bench: []string{"sweep", "--url", "http://vllm.default.svc:8000", "-c", "64,256,1024"}},
	"logs and start time": {Name: "bench", Namespace: "load", Shards: 2, Image: "tokperf", Command: "/usr/local/bin/tokperf", StartAt: start,
		Bench: []string{"run", "--url", "http://vllm:8000", "--rate", "400", "--duration", "10m"}},
	"every option": {Name: "b", Shards: 16, Image: "r.example:5000/t@sha256:" + strings.Repeat("a", 64), Claim: "nfs.results", RunID: "run_1.x",
		NodeSelector: []k8s.Label{{"node.kubernetes.io/instance-type", "c7i.4xlarge"}, {"pool", "load"}}, CPU: "1.5", Memory: "512M",
		Preferred: true, APIKeySecret: "openai", APIKeyKey: "key.txt",
		Bench: []string{"sweep", "--url", "https://api.example/v1", "--header", "X-Cost: $(HOME) $$ $", "--extra-body", `{"note":"on","n":"1e3"}`,
			"--model", "yes", "--seed", "012", "--gpu-type", "null", "--text", "é\n# not a comment"}},
}

func write(t *testing.T, j k8s.Job) []byte {
	t.Helper()
	j.Fill(start)
	var b bytes.Buffer
	if err := j.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decode reads a manifest into the Kubernetes API's own types, strictly:
// an unknown, misspelt or duplicated field, or a value of the wrong type,
// fails, as kubectl apply --validate=strict fails it.
func decode(t *testing.T, manifest []byte) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(manifest, &job); err != nil {
		t.Fatalf("decoding into batch/v1 Job: %v\n%s", err, manifest)
	}
	return &job
}

// The manifest decodes strictly into k8s.io/api's batch/v1 Job and encodes
// back to the same document: nothing tokperf writes is lost or read as
// something else.
func TestManifestRoundTrips(t *testing.T) {
	t.Parallel()
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			m := write(t, j)
			job := decode(t, m)
			back, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			written, err := yaml.YAMLToJSON(m)
			if err != nil {
				t.Fatal(err)
			}
			want, got := generic(t, written), prune(generic(t, back))
			canonicalQuantities(t, want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("written (-) and re-encoded by k8s.io/api (+) differ:\n%s", d)
			}
		})
	}
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// prune drops what the API types write for fields that were never set:
// empty objects (status: {}) and nulls.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			x = prune(x)
			if m, ok := x.(map[string]any); x == nil || (ok && len(m) == 0) {
				delete(t, k)
				continue
			}
			t[k] = x
		}
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}

// canonicalQuantities rewrites the resource quantities as the API writes
// them back (1.5 CPUs as 1500m): the same amount, spelt canonically.
func canonicalQuantities(t *testing.T, doc any) {
	t.Helper()
	c := doc.(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	for _, kind := range []string{"requests", "limits"} {
		m := c["resources"].(map[string]any)[kind].(map[string]any)
		for k, v := range m {
			q := resource.MustParse(v.(string))
			m[k] = q.String()
		}
	}
}

// The decoded Job is what a sharded benchmark needs: Indexed, one pod per
// shard all at once, none retried, no two on one node, the shard's index in
// its arguments, guaranteed QoS, the results where they are said to go.
func TestManifestMeaning(t *testing.T) {
	t.Parallel()
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			j.Fill(start)
			job := decode(t, write(t, j))
			s := job.Spec
			if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != int32(j.Shards) || *s.Parallelism != int32(j.Shards) || *s.BackoffLimit != 0 {
				t.Errorf("spec: mode %v, completions %v, parallelism %v, backoff %v", *s.CompletionMode, *s.Completions, *s.Parallelism, *s.BackoffLimit)
			}
			pod := s.Template.Spec
			if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
				t.Fatalf("restart policy %q, %d containers", pod.RestartPolicy, len(pod.Containers))
			}
			spread(t, job, j.Preferred)
			c := pod.Containers[0]
			if c.Image != j.Image || !slices.Equal(c.Command, []string{j.Command}) {
				t.Errorf("image %q command %q", c.Image, c.Command)
			}
			for _, idx := range []string{"0", strconv.Itoa(j.Shards - 1)} {
				if got, want := expand(t, c, idx), wantArgs(j, idx); !slices.Equal(got, want) {
					t.Errorf("shard %s runs\n%q\nwant\n%q", idx, got, want)
				}
			}
			guaranteed(t, c)
			results(t, j, pod, c)
			for _, l := range j.NodeSelector {
				if pod.NodeSelector[l.Key] != l.Value {
					t.Errorf("node selector %v, want %s=%s", pod.NodeSelector, l.Key, l.Value)
				}
			}
		})
	}
}

// spread checks that the anti-affinity term selects the Job's own pods on
// the node's hostname: no two shards on one node.
func spread(t *testing.T, job *batchv1.Job, preferred bool) {
	t.Helper()
	a := job.Spec.Template.Spec.Affinity.PodAntiAffinity
	var term corev1.PodAffinityTerm
	switch {
	case preferred && len(a.PreferredDuringSchedulingIgnoredDuringExecution) == 1 && len(a.RequiredDuringSchedulingIgnoredDuringExecution) == 0:
		term = a.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	case !preferred && len(a.RequiredDuringSchedulingIgnoredDuringExecution) == 1 && len(a.PreferredDuringSchedulingIgnoredDuringExecution) == 0:
		term = a.RequiredDuringSchedulingIgnoredDuringExecution[0]
	default:
		t.Fatalf("anti-affinity %+v, want one %s term", a, map[bool]string{true: "preferred", false: "required"}[preferred])
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(job.Spec.Template.Labels)) || sel.Empty() || term.TopologyKey != corev1.LabelHostname {
		t.Errorf("anti-affinity %v on %q does not keep the pods %v apart per node", sel, term.TopologyKey, job.Spec.Template.Labels)
	}
	other := labels.Set{"app.kubernetes.io/name": "tokperf", "app.kubernetes.io/instance": job.Name + "-other"}
	if sel.Matches(other) {
		t.Errorf("anti-affinity %v also repels another run's pods %v", sel, other)
	}
}

// expand is the container's arguments as the kubelet passes them: each
// $(VAR) of the container's environment replaced (the index from the
// annotation the Job controller writes), $$ made $, other $ kept.
func expand(t *testing.T, c corev1.Container, index string) []string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			if e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['"+batchv1.JobCompletionIndexAnnotation+"']" {
				t.Errorf("%s from %q, not the completion index annotation", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = index
		}
	}
	var out []string
	for _, a := range c.Args {
		var b strings.Builder
		for i := 0; i < len(a); i++ {
			switch {
			case strings.HasPrefix(a[i:], "$$"):
				b.WriteByte('$')
				i++
			case strings.HasPrefix(a[i:], "$(") && strings.Contains(a[i:], ")"):
				end := i + strings.Index(a[i:], ")")
				if v, ok := env[a[i+2:end]]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(a[i : end+1])
				}
				i = end
			default:
				b.WriteByte(a[i])
			}
		}
		out = append(out, b.String())
	}
	return out
}

// wantArgs is what shard index of j must run: the benchmark as given, then
// its share, the run, the start and the results.
func wantArgs(j k8s.Job, index string) []string {
	want := append(slices.Clone(j.Bench), "--shard", index+"/"+strconv.Itoa(j.Shards), "--run-id", j.RunID)
	if j.StartAt.IsZero() {
		want = append(want, "--barrier", "/results/"+j.RunID+"/barrier")
	} else {
		want = append(want, "--start-at", j.StartAt.Format(time.RFC3339))
	}
	if j.Claim == "" {
		return append(want, "-o", "-")
	}
	return append(want, "-o", "/results/"+j.RunID+"/shard-"+index+".jsonl")
}

// guaranteed checks the pod's QoS class would be Guaranteed: CPU and
// memory requested, each limit equal to its request.
func guaranteed(t *testing.T, c corev1.Container) {
	t.Helper()
	r := c.Resources
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("%s: request %v, limit %v: not guaranteed QoS", name, req.String(), lim.String())
		}
	}
}

// results checks that the result files are on the claim, mounted where the
// arguments write, or on stdout.
func results(t *testing.T, j k8s.Job, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if j.Claim == "" {
		if len(pod.Volumes) != 0 || len(c.VolumeMounts) != 0 {
			t.Errorf("results on stdout, yet volumes %v mounts %v", pod.Volumes, c.VolumeMounts)
		}
		return
	}
	if len(pod.Volumes) != 1 || len(c.VolumeMounts) != 1 || pod.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Volumes[0].PersistentVolumeClaim.ClaimName != j.Claim || c.VolumeMounts[0].Name != pod.Volumes[0].Name || c.VolumeMounts[0].MountPath != k8s.MountPath {
		t.Errorf("volumes %+v mounts %+v: claim %s not mounted at %s", pod.Volumes, c.VolumeMounts, j.Claim, k8s.MountPath)
	}
	if j.APIKeySecret != "" {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "OPENAI_API_KEY" })
		if i < 0 || !reflect.DeepEqual(c.Env[i].ValueFrom.SecretKeyRef, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: j.APIKeySecret}, Key: j.APIKeyKey}) {
			t.Errorf("env %+v: no OPENAI_API_KEY from secret %s key %s", c.Env, j.APIKeySecret, j.APIKeyKey)
		}
	}
}

// Whatever the benchmark's arguments, kubectl's YAML reader and the kubelet's
// expansion give tokperf exactly those arguments.
func FuzzManifestArgs(f *testing.F) {
	for _, s := range []string{"on", "1e3", "$(HOME)", "$$", "a: b", "- x", "#", "\"'\\", "é\u2028", "\t\r\n", "null", "~", "2026-12-01", "\x00\x7f"} {
		f.Add(s, "--model")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		j := k8s.Job{Name: "f", Command: "tokperf", CPU: "1", Memory: "1Gi", Shards: 3, Image: "tokperf", Claim: "c", RunID: "r", Bench: []string{"run", a, b}}
		var m bytes.Buffer
		if err := j.Write(&m); err != nil {
			if !utf8.ValidString(a) || !utf8.ValidString(b) {
				return // JSON, and so a manifest, carries text only
			}
			t.Fatal(err)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(m.Bytes(), &job); err != nil {
			t.Fatalf("decoding: %v\n%s", err, m.Bytes())
		}
		got := expand(t, job.Spec.Template.Spec.Containers[0], "1")
		if want := wantArgs(j, "1"); !slices.Equal(got, want) {
			t.Errorf("runs %q, want %q", got, want)
		}
	})
}
