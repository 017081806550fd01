//go:build k8s

package k8s_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// The schema check holds the manifest to the OpenAPI v3 schema of batch/v1
// that Kubernetes publishes (api/openapi-spec/v3 of the k8s.io/kubernetes
// module whose release matches k8s.io/api: v1.37.2 for v0.37.2), fetched
// by .ci/k8s-schema.sh through the Go module proxy. TOKPERF_K8S_OPENAPI
// names the directory of such files; without them here the test is skipped, unless
// TOKPERF_REQUIRE_SCHEMA=1 (CI), when it fails.
const jobSchema = "io.k8s.api.batch.v1.Job"

// kubernetesRelease is the Kubernetes release of the k8s.io/api the tests
// build with (v0.37.2 → v1.37.2).
func kubernetesRelease(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/api").Output()
	v := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(v, "v0.") {
		t.Fatalf("go list -m k8s.io/api: %q %v", v, err)
	}
	return "v1." + strings.TrimPrefix(v, "v0.")
}

// schemaFile is the path of one group's OpenAPI file, such as
// apis__batch__v1_openapi.json; TOKPERF_K8S_OPENAPI names their directory.
func schemaFile(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("TOKPERF_K8S_OPENAPI"); dir != "" {
		return filepath.Join(dir, name)
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(cache)), "k8s.io", "kubernetes@"+kubernetesRelease(t), "api", "openapi-spec", "v3", name)
}

// compileJobSchema compiles the Job schema, strict as kubeconform's
// -strict: an object with properties takes no others (the published
// schema leaves additionalProperties open, the API server prunes or, with
// --validate=strict, refuses unknown fields).
func compileJobSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSchema(t, "apis__batch__v1_openapi.json", jobSchema)
}

// compileSchema compiles the schema def of the OpenAPI file name, strict;
// nil when the file is missing and not required.
func compileSchema(t *testing.T, name, def string) *jsonschema.Schema {
	t.Helper()
	path := schemaFile(t, name)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		if os.Getenv("TOKPERF_REQUIRE_SCHEMA") == "1" {
			t.Fatalf("%s is missing and TOKPERF_REQUIRE_SCHEMA=1: run .ci/k8s-schema.sh", path)
		}
		t.Logf("%s is missing: .ci/k8s-schema.sh fetches it; no schema check", path)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defs := spec.Components.Schemas
	if defs[def] == nil {
		t.Fatalf("%s has no %s", path, def)
	}
	for _, s := range defs {
		closeObjects(s)
	}
	root, _ := json.Marshal(map[string]any{"$defs": defs, "$ref": "#/$defs/" + def})
	root = bytes.ReplaceAll(root, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(root))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("file:///"+name, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///" + name)
	if err != nil {
		t.Fatalf("compiling the schema of %s: %v", def, err)
	}
	return sch
}

// closeObjects sets additionalProperties: false on every object schema
// with properties that does not keep unknown fields on purpose.
func closeObjects(v any) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if _, set := s["additionalProperties"]; !set && s["x-kubernetes-preserve-unknown-fields"] != true {
			s["additionalProperties"] = false
		}
		for _, p := range props {
			closeObjects(p)
		}
	}
	closeObjects(s["items"])
	closeObjects(s["additionalProperties"])
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for _, x := range list {
				closeObjects(x)
			}
		}
	}
}

// validate checks manifest against sch; nil, no schema, passes all.
func validate(t *testing.T, sch *jsonschema.Schema, manifest []byte) error {
	t.Helper()
	if sch == nil {
		return nil
	}
	j, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

// Every shape of manifest passes Kubernetes' own schema of batch/v1 Job.
func TestManifestPassesTheSchema(t *testing.T) {
	t.Parallel()
	sch := compileJobSchema(t)
	if sch == nil {
		t.Skip("no schema")
	}
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			m := write(t, j)
			if err := validate(t, sch, m); err != nil {
				t.Errorf("%v\n%s", err, m)
			}
		})
	}
}

// The schema check fails what the API server would refuse: it is a check.
func TestSchemaRefusesBadManifests(t *testing.T) {
	t.Parallel()
	sch := compileJobSchema(t)
	if sch == nil {
		t.Skip("no schema")
	}
	good := string(write(t, jobs["claim and barrier"]))
	for name, bad := range map[string]string{
		"an unknown field":  strings.Replace(good, "  backoffLimit: 0\n", "  backoffLimit: 0\n  retries: 3\n", 1),
		"a misspelt field":  strings.Replace(good, "restartPolicy:", "restartpolicy:", 1),
		"a string for int":  strings.Replace(good, "completions: 4", `completions: "4"`, 1),
		"no container name": strings.Replace(good, `- name: "tokperf"`, `- tty: true`, 1),
	} {
		if bad == good {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		err := validate(t, sch, []byte(bad))
		t.Logf("%s: %v", name, err)
		if err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
