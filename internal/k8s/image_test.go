package k8s_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The image scripts/image.sh writes, read with nothing but the standard
// library: an OCI image layout (every blob's name its sha256) whose one
// image is named tokperf:VERSION, runs /usr/local/bin/tokperf (on the
// PATH, where a Job's command "tokperf" is looked up) as a user not root,
// for linux on this machine's architecture, as Docker's manifest.json
// says too; the binary in its layer is a static ELF of that architecture
// and, run, says the version the script stamped.
//
// It runs with TOKPERF_IMAGE=1 (TOKPERF_REQUIRE_IMAGE=1 in .ci/run): the
// script builds tokperf for linux and fetches go-containerregistry from
// the Go module proxy, a minute or more the first time.
func TestImageTarball(t *testing.T) {
	t.Parallel()
	if os.Getenv("TOKPERF_IMAGE") != "1" && os.Getenv("TOKPERF_REQUIRE_IMAGE") != "1" {
		t.Skip("builds the image: TOKPERF_IMAGE=1")
	}
	const version = "v0.0.0-imagetest"
	out := filepath.Join(t.TempDir(), "tokperf.tar")
	cmd := exec.Command("scripts/image.sh", version)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "IMAGE_OUT="+out, "IMAGE_ARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, b)
	}
	files := readTar(t, out)

	var lay struct {
		Version string `json:"imageLayoutVersion"`
	}
	unmarshal(t, files, "oci-layout", &lay)
	if lay.Version != "1.0.0" {
		t.Errorf("oci-layout: version %q", lay.Version)
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
	}
	blob := func(d descriptor) []byte {
		t.Helper()
		hexd, ok := strings.CutPrefix(d.Digest, "sha256:")
		b, found := files["blobs/sha256/"+hexd]
		if !ok || !found {
			t.Fatalf("no blob %s in the tar", d.Digest)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexd || int64(len(b)) != d.Size {
			t.Fatalf("blob %s: %d bytes, sha256 %x; the descriptor says %d", d.Digest, len(b), sum, d.Size)
		}
		return b
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	unmarshal(t, files, "index.json", &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json: %d manifests, want 1", len(index.Manifests))
	}
	if m := index.Manifests[0]; m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Annotations["org.opencontainers.image.ref.name"] != "tokperf:"+version {
		t.Errorf("index.json's image: %+v", m)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			Entrypoint []string `json:"Entrypoint"`
			Env        []string `json:"Env"`
			User       string   `json:"User"`
		} `json:"config"`
	}
	if err := json.Unmarshal(blob(manifest.Config), &config); err != nil {
		t.Fatal(err)
	}
	if config.Architecture != runtime.GOARCH || config.OS != "linux" {
		t.Errorf("the image is for %s/%s, want linux/%s", config.OS, config.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(config.Config.Entrypoint, []string{"/usr/local/bin/tokperf"}) {
		t.Errorf("entrypoint %q", config.Config.Entrypoint)
	}
	if !slices.Contains(config.Config.Env, "PATH=/usr/local/bin") {
		t.Errorf("env %q: tokperf is not on the PATH, where a Job's command is looked up", config.Config.Env)
	}
	if u := config.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || u == "root" {
		t.Errorf("runs as user %q, want one not root", u)
	}
	// Docker's manifest.json names the same blobs.
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	unmarshal(t, files, "manifest.json", &docker)
	if len(docker) != 1 || docker[0].Config != "blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:") ||
		!slices.Equal(docker[0].RepoTags, []string{"tokperf:" + version}) || len(docker[0].Layers) != len(manifest.Layers) {
		t.Errorf("manifest.json %+v does not match the OCI manifest %+v", docker, manifest)
	}

	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	l := manifest.Layers[0]
	if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Errorf("layer media type %q", l.MediaType)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(l)))
	if err != nil {
		t.Fatal(err)
	}
	layer := map[string]*tar.Header{}
	var exe []byte
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the layer: %v", err)
		}
		layer[strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == "usr/local/bin/tokperf" {
			exe, _ = io.ReadAll(tr)
		}
	}
	if h := layer["usr/local/bin/tokperf"]; h == nil || h.Mode&0o111 == 0 || exe == nil {
		t.Fatalf("the layer has no executable usr/local/bin/tokperf: %v", layer)
	}
	if h := layer["tmp"]; h == nil || h.Mode&0o1777 != 0o1777 {
		t.Errorf("the layer's /tmp: %+v", h)
	}
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if want != 0 && f.Machine != want {
		t.Errorf("the binary is for %v, want %v", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an interpreter (dynamically linked): the empty base has no libc")
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	path := filepath.Join(t.TempDir(), "tokperf")
	if err := os.WriteFile(path, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("the image's tokperf version: %v", err)
	}
	if !strings.HasPrefix(string(got), "tokperf "+version+" ") || !strings.Contains(string(got), "linux/"+runtime.GOARCH) {
		t.Errorf("the image's tokperf version says %q, want tokperf %s … linux/%s", got, version, runtime.GOARCH)
	}
}

// readTar is every regular file of the tar at path, by name.
func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("%s: %s: %v", path, h.Name, err)
			}
			files[h.Name] = b
		}
	}
}

func unmarshal(t *testing.T, files map[string][]byte, name string, v any) {
	t.Helper()
	b, ok := files[name]
	if !ok {
		t.Fatalf("the tar has no %s", name)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
