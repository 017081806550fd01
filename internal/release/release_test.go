package release

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tag, py, npm string }{
		{"v0.2.0", "0.2.0", "0.2.0"},
		{"v1.10.3-rc2", "1.10.3rc2", "1.10.3-rc2"},
		{"0.3.0-beta1", "0.3.0b1", "0.3.0-beta1"},
	} {
		py, npm, err := Versions(tc.tag)
		if err != nil || py != tc.py || npm != tc.npm {
			t.Errorf("%s: %q %q %v, want %q %q", tc.tag, py, npm, err, tc.py, tc.npm)
		}
	}
	for _, bad := range []string{"dev", "v0.2.0-3-gabc1234-dirty", "v1", ""} {
		if _, _, err := Versions(bad); err == nil {
			t.Errorf("%q: no error: a release would publish a version pip or npm refuses", bad)
		}
	}
}

// The wheel's RECORD lists every file with its hash, as pip checks.
func TestWheelRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tokperf")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := Wheel(dir, bin, "v0.2.0", Platform{"linux", "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "tokperf-0.2.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64.whl"; filepath.Base(path) != want {
		t.Errorf("wheel %s, want %s", filepath.Base(path), want)
	}
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var record string
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
		if strings.HasSuffix(f.Name, "/RECORD") {
			r, _ := f.Open()
			b := new(strings.Builder)
			buf := make([]byte, 4096)
			for {
				n, err := r.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			record = b.String()
		}
		if strings.HasSuffix(f.Name, "scripts/tokperf") && f.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", f.Name, f.Mode())
		}
	}
	for _, n := range names {
		if !strings.Contains(record, n+",") {
			t.Errorf("RECORD lacks %s:\n%s", n, record)
		}
	}
}

// The real installers, offline: the wheel into a fresh virtual
// environment with no index, the npm packages into a fresh folder, then
// tokperf version and a one-level sweep from each. It builds tokperf for
// this machine (half a minute on a busy machine), so it runs with
// TOKPERF_PACKAGES=1, or TOKPERF_REQUIRE_PACKAGES=1 (.ci/run), where a
// missing python3 or npm fails it instead of skipping it.
func TestInstallersRunTokperf(t *testing.T) {
	t.Parallel()
	need := os.Getenv("TOKPERF_REQUIRE_PACKAGES") == "1"
	if !need && os.Getenv("TOKPERF_PACKAGES") != "1" {
		t.Skip("builds tokperf and installs it with pip and npm: TOKPERF_PACKAGES=1")
	}
	for _, tool := range []string{"python3", "npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			if need {
				t.Fatalf("%s is missing (TOKPERF_REQUIRE_PACKAGES=1)", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
	p := Platform{runtime.GOOS, runtime.GOARCH}
	if _, ok := wheelTags[p]; !ok {
		t.Skipf("no package for %s", p)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, p.exe())
	const tag = "v0.0.1"
	build := exec.Command("go", "build", "-ldflags", "-s -w -X github.com/tokperf/tokperf/internal/cli.version="+tag, "-o", bin, "../../cmd/tokperf")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	wheel, err := Wheel(dir, bin, tag, p)
	if err != nil {
		t.Fatal(err)
	}
	platform, err := NPMPlatform(dir, bin, tag, p)
	if err != nil {
		t.Fatal(err)
	}
	launcher, err := NPMLauncher(dir, tag)
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "npm_config_offline=true", "npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	venv := filepath.Join(dir, "venv")
	run("python3", "-m", "venv", venv)
	run(filepath.Join(venv, "bin", "pip"), "install", "--no-index", "--no-deps", wheel)
	prefix := filepath.Join(dir, "npm")
	run("npm", "install", "--offline", "--no-audit", "--no-fund", "--prefix", prefix, platform, launcher)
	for name, exe := range map[string]string{"pip": filepath.Join(venv, "bin", "tokperf"), "npm": filepath.Join(prefix, "node_modules", ".bin", "tokperf")} {
		if out := run(exe, "version"); !strings.HasPrefix(out, "tokperf "+tag) {
			t.Errorf("%s: tokperf version says %q", name, out)
		}
		out := run(exe, "sweep", "--sim-profile", "tiny", "-c", "2", "--requests", "6", "--output-tokens", "8", "--quiet", "-o", filepath.Join(dir, name+".jsonl"))
		if !strings.Contains(out, "|   2 |") {
			t.Errorf("%s: the one-level sweep printed no level of 2:\n%s", name, out)
		}
	}
}
