// Command image writes tokperf's container image as a tar file: a static
// tokperf binary on an empty base, no Docker and no registry needed. The
// tar is an OCI image layout (oci-layout, index.json, blobs/sha256/…) that
// also holds Docker's manifest.json, so skopeo (oci-archive:), podman
// load, docker load and crane push all read it. scripts/image.sh builds
// the binary and runs this; it is a module of its own so that the image
// library stays out of tokperf's module graph.
//
//	go run . -binary tokperf -arch amd64 -version v1.2.0 -tag tokperf:v1.2.0 -out tokperf.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout: the binary on PATH (a Kubernetes Job's command is
// "tokperf", looked up on the image's PATH), a home to work in, owned by
// the unprivileged user it runs as.
const (
	binPath = "usr/local/bin/tokperf"
	home    = "home/tokperf"
	uid     = 65532
	caPath  = "etc/ssl/certs/ca-certificates.crt"
)

func main() {
	bin := flag.String("binary", "", "the static tokperf binary (CGO_ENABLED=0, GOOS=linux) to put in the image")
	arch := flag.String("arch", "", "the binary's architecture, as GOARCH: amd64, arm64")
	version := flag.String("version", "", "tokperf's version, for the image's labels")
	tag := flag.String("tag", "", "the image's name, e.g. tokperf:v1.2.0 (docker load names it so)")
	out := flag.String("out", "", "the tar file to write")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates for https targets (\"\": none)")
	created := flag.String("created", "", "the image's creation time, RFC 3339 (default: the Unix epoch, so that one binary makes one image)")
	flag.Parse()
	if err := build(*bin, *arch, *version, *tag, *out, *ca, *created); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func build(bin, arch, version, tag, out, ca, created string) error {
	switch {
	case bin == "" || arch == "" || out == "" || tag == "":
		return fmt.Errorf("give -binary, -arch, -tag and -out")
	case strings.ContainsAny(tag, " \t\n"):
		return fmt.Errorf("-tag %q: an image name has no spaces", tag)
	}
	when := time.Unix(0, 0).UTC()
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("-created %q: want RFC 3339, e.g. 2026-12-01T17:00:00Z", created)
		}
		when = t.UTC()
	}
	files, err := contents(bin, ca, when)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "scripts/image.sh: " + binPath, Comment: "tokperf " + version}})
	if err != nil {
		return fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: when}
	cfg.Config.Entrypoint = []string{"/" + binPath}
	cfg.Config.Cmd = []string{"help"}
	cfg.Config.Env = []string{"PATH=/usr/local/bin", "HOME=/" + home}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cfg.Config.WorkingDir = "/" + home
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "tokperf",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/tokperf/tokperf",
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return write(img, tag, out)
}

// contents is the layer's tar: the directories, the binary and the CA
// certificates, every file dated when.
func contents(bin, ca string, when time.Time) ([]byte, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("-binary: %w", err)
	}
	if len(exe) < 4 || string(exe[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("-binary %s: not a Linux (ELF) binary: build it with GOOS=linux CGO_ENABLED=0", bin)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: when, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: when, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"usr", "usr/local", "usr/local/bin", "etc", "etc/ssl", "etc/ssl/certs", "home"} {
		if err := dir(d, 0o755, 0); err != nil {
			return nil, err
		}
	}
	if err := dir(home, 0o755, uid); err != nil {
		return nil, err
	}
	if err := dir("tmp", 0o1777, 0); err != nil {
		return nil, err
	}
	if err := file(binPath, 0o755, exe); err != nil {
		return nil, err
	}
	if ca != "" {
		certs, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("-ca: %w (-ca \"\" leaves them out: https targets then fail to verify)", err)
		}
		if err := file(caPath, 0o644, certs); err != nil {
			return nil, err
		}
	}
	if err := file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ntokperf:x:%d:%d:tokperf:/%s:/sbin/nologin\n", uid, uid, home))); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// write writes img as an OCI image layout with Docker's manifest.json
// beside it, as one tar.
func write(img v1.Image, tag, out string) error {
	tmp, err := os.MkdirTemp("", "tokperf-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("the OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": tag})); err != nil {
		return fmt.Errorf("the OCI layout: %w", err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	docker := fmt.Sprintf(`[{"Config":"blobs/sha256/%s","RepoTags":[%q],"Layers":[`, cfgName.Hex, tag)
	for i, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if i > 0 {
			docker += ","
		}
		docker += fmt.Sprintf("%q", "blobs/sha256/"+d.Hex)
	}
	docker += "]}]\n"
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), []byte(docker), 0o644); err != nil {
		return err
	}
	return tarDir(tmp, out)
}

// tarDir writes the files under dir into the tar file out, in a fixed
// order and dated the epoch, so the same image makes the same file.
func tarDir(dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
