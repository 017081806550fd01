// Package release packs a built tokperf binary for the installers people
// already have: a Python wheel that pip installs into a virtual
// environment's bin (the binary as the wheel's script, as Rust and Go tools
// ship theirs), and npm packages (one per platform holding the binary, and
// a launcher package that depends on them all, optionally, and runs the
// one npm installed). It writes files only; nothing here reaches a network.
//
//	w, err := release.Wheel(dir, "dist/tokperf-linux-amd64", "v0.2.0", release.Platform{OS: "linux", Arch: "amd64"})
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Platform is a release target, as Go names it.
type Platform struct{ OS, Arch string }

// Platforms are the targets scripts/release.sh builds.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"}}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// exe is the binary's name on the platform.
func (p Platform) exe() string {
	if p.OS == "windows" {
		return "tokperf.exe"
	}
	return "tokperf"
}

// wheelTags are the wheel platform tags a static binary of p runs under:
// any glibc from 2.17 and any musl (it links no libc), macOS 11 on arm64
// and 10.12 on amd64 (Go 1.26's floor), Windows.
var wheelTags = map[Platform][]string{
	{"linux", "amd64"}:   {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"},
	{"linux", "arm64"}:   {"manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"},
	{"darwin", "amd64"}:  {"macosx_10_12_x86_64"},
	{"darwin", "arm64"}:  {"macosx_11_0_arm64"},
	{"windows", "amd64"}: {"win_amd64"},
	{"windows", "arm64"}: {"win_arm64"},
}

// npmNames are npm's os and cpu for p.
var npmNames = map[string]string{"amd64": "x64", "arm64": "arm64", "windows": "win32", "linux": "linux", "darwin": "darwin"}

// Summary is the one line every package describes tokperf with.
const Summary = "Measures how fast an LLM inference server really is, and says what the numbers mean"

// pep440 is a version Python's packaging accepts.
var pep440 = regexp.MustCompile(`^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$`)

// semver is a version npm accepts.
var semver = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// Versions are a release's version as Python and npm write it, from a git
// tag (v0.2.0, v0.2.0-rc1): an error for one they cannot write, so that a
// release never publishes a version its installers would refuse.
func Versions(tag string) (py, npm string, err error) {
	v := strings.TrimPrefix(tag, "v")
	npm = v
	py = strings.Replace(strings.Replace(v, "-rc", "rc", 1), "-beta", "b", 1)
	py = strings.Replace(py, "-alpha", "a", 1)
	if !pep440.MatchString(py) || !semver.MatchString(npm) {
		return "", "", fmt.Errorf("version %q: a release needs a tag such as v0.2.0 or v0.2.0-rc1", tag)
	}
	return py, npm, nil
}

// Wheel writes the wheel of binary for p into dir and returns its path.
// pip installs the binary into the environment's scripts folder (bin/,
// Scripts\ on Windows) as it is: the wheel's .data/scripts.
func Wheel(dir, binary, tag string, p Platform) (string, error) {
	version, _, err := Versions(tag)
	if err != nil {
		return "", err
	}
	tags, ok := wheelTags[p]
	if !ok {
		return "", fmt.Errorf("no wheel platform for %s", p)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return "", err
	}
	dist := "tokperf-" + version
	info := dist + ".dist-info/"
	var wheelFile strings.Builder
	fmt.Fprintf(&wheelFile, "Wheel-Version: 1.0\nGenerator: tokperf internal/release\nRoot-Is-Purelib: false\n")
	for _, t := range tags {
		fmt.Fprintf(&wheelFile, "Tag: py3-none-%s\n", t)
	}
	metadata := fmt.Sprintf("Metadata-Version: 2.1\nName: tokperf\nVersion: %s\nSummary: %s\nHome-page: https://github.com/tokperf/tokperf\nRequires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n"+
		"tokperf is one static binary; this wheel puts it on the PATH of the environment it is installed in.\n\n    pip install tokperf\n    tokperf sweep   # a sweep on the embedded simulated server\n", version, Summary)
	files := []zipFile{
		{dist + ".data/scripts/" + p.exe(), bin, 0o755},
		{info + "METADATA", []byte(metadata), 0o644},
		{info + "WHEEL", []byte(wheelFile.String()), 0o644},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256(f.body)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	files = append(files, zipFile{info + "RECORD", []byte(record.String()), 0o644})
	out := filepath.Join(dir, fmt.Sprintf("%s-py3-none-%s.whl", dist, strings.Join(tags, ".")))
	return out, writeZip(out, files)
}

type zipFile struct {
	name string
	body []byte
	mode os.FileMode
}

// epoch is every packed file's time: a package is the same bytes for the
// same binary, whenever it is built.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func writeZip(path string, files []zipFile) error {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
		h.SetMode(f.mode)
		w, err := z.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.body); err != nil {
			return err
		}
	}
	if err := z.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// NPMPlatform writes the npm package of binary for p (@tokperf/OS-CPU,
// which npm installs only on that OS and CPU) into dir and returns its path.
func NPMPlatform(dir, binary, tag string, p Platform) (string, error) {
	_, version, err := Versions(tag)
	if err != nil {
		return "", err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return "", err
	}
	npmOS, npmCPU := npmNames[p.OS], npmNames[p.Arch]
	manifest := map[string]any{
		"name": npmPlatformName(p), "version": version, "description": Summary + " (" + p.String() + " binary)",
		"repository": "github:tokperf/tokperf", "os": []string{npmOS}, "cpu": []string{npmCPU},
		"files": []string{"bin/" + p.exe()}, "preferUnplugged": true,
	}
	return writeNPM(dir, npmPlatformName(p), version, manifest, map[string][]byte{"bin/" + p.exe(): bin})
}

func npmPlatformName(p Platform) string { return "@tokperf/" + npmNames[p.OS] + "-" + npmNames[p.Arch] }

// launcher runs the binary of the platform package npm installed, with
// the arguments, standard streams, signals and exit code passed through.
const launcher = `#!/usr/bin/env node
"use strict";
// tokperf's launcher: npm installed the binary of this machine's platform
// as an optional dependency; run it as if it were this command.
const { spawnSync } = require("child_process");
const name = "@tokperf/" + process.platform + "-" + process.arch;
const exe = process.platform === "win32" ? "tokperf.exe" : "tokperf";
let bin;
try {
  bin = require.resolve(name + "/bin/" + exe);
} catch (e) {
  console.error("tokperf: no binary for " + process.platform + "/" + process.arch + ": npm did not install " + name +
    " (optional dependencies off?). Download one from the release page instead.");
  process.exit(1);
}
const r = spawnSync(bin, process.argv.slice(2), { stdio: "inherit" });
if (r.error) {
  console.error("tokperf: " + r.error.message);
  process.exit(1);
}
if (r.signal) {
  process.kill(process.pid, r.signal);
}
process.exit(r.status === null ? 1 : r.status);
`

// NPMLauncher writes the tokperf npm package (the launcher, depending on
// every platform's package as optional) into dir and returns its path.
func NPMLauncher(dir, tag string) (string, error) {
	_, version, err := Versions(tag)
	if err != nil {
		return "", err
	}
	optional := map[string]string{}
	for _, p := range Platforms {
		optional[npmPlatformName(p)] = version
	}
	manifest := map[string]any{
		"name": "tokperf", "version": version, "description": Summary,
		"repository": "github:tokperf/tokperf", "bin": map[string]string{"tokperf": "bin/tokperf.js"},
		"files": []string{"bin/tokperf.js"}, "optionalDependencies": optional, "engines": map[string]string{"node": ">=16"},
	}
	return writeNPM(dir, "tokperf", version, manifest, map[string][]byte{"bin/tokperf.js": []byte(launcher)})
}

// writeNPM writes an npm package tarball as npm pack does: every file
// under package/, package.json first.
func writeNPM(dir, name, version string, manifest map[string]any, files map[string][]byte) (string, error) {
	pj, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(path string, body []byte, mode int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + path, Mode: mode, Size: int64(len(body)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, bytes.NewReader(body))
		return err
	}
	if err := add("package.json", append(pj, '\n'), 0o644); err != nil {
		return "", err
	}
	for path, body := range files {
		if err := add(path, body, 0o755); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	file := strings.NewReplacer("@", "", "/", "-").Replace(name) + "-" + version + ".tgz"
	out := filepath.Join(dir, file)
	return out, os.WriteFile(out, buf.Bytes(), 0o644)
}
