// Command package packs the binaries scripts/release.sh built into the
// installers' packages: a wheel per platform and the npm packages (one per
// platform and the launcher), next to them in dist/.
//
//	scripts/release.sh v0.2.0 && go run ./scripts/package -tag v0.2.0
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokperf/tokperf/internal/release"
)

func main() {
	tag := flag.String("tag", "", "the release's tag, e.g. v0.2.0 (the version scripts/release.sh stamped)")
	dist := flag.String("dist", "dist", "the folder of scripts/release.sh's binaries, and of the packages")
	flag.Parse()
	if err := pack(*tag, *dist); err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
}

func pack(tag, dist string) error {
	if _, _, err := release.Versions(tag); err != nil {
		return err
	}
	found := 0
	for _, p := range release.Platforms {
		bin := filepath.Join(dist, fmt.Sprintf("tokperf-%s-%s-%s", tag, p.OS, p.Arch))
		if p.OS == "windows" {
			bin += ".exe"
		}
		if _, err := os.Stat(bin); err != nil {
			continue // a release built for fewer targets
		}
		found++
		for _, pkg := range []func(string, string, string, release.Platform) (string, error){release.Wheel, release.NPMPlatform} {
			out, err := pkg(dist, bin, tag, p)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			fmt.Println(out)
		}
	}
	if found == 0 {
		return fmt.Errorf("no binary of %s in %s: run scripts/release.sh %s first", tag, dist, tag)
	}
	out, err := release.NPMLauncher(dist, tag)
	if err == nil {
		fmt.Println(out)
	}
	return err
}
