package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestStartupAllocs checks that no package of tokperf builds its tables at
// start-up: every command (tokperf version too) pays for what package
// initialisation allocates, in CPU and in resident memory. The test binary
// links the same packages as tokperf; run again with GODEBUG=inittrace=1
// and no test, it prints what each package's init allocated.
func TestStartupAllocs(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var trace bytes.Buffer
	cmd.Stderr = &trace
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s -test.run=^$: %v\n%s", os.Args[0], err, trace.String())
	}
	// A package's own init, not the libraries': tokperf's packages allocate
	// a few kilobytes (errors, small maps), never a table.
	const limit = 64 << 10
	seen := 0
	sc := bufio.NewScanner(&trace)
	for sc.Scan() {
		// init github.com/tokperf/tokperf/internal/sim @21 ms, 0.085 ms clock, 18904 bytes, 135 allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/tokperf/tokperf/") || f[8] != "bytes," {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: bytes %q: %v", sc.Text(), f[7], err)
		}
		if n > limit {
			t.Errorf("%s allocates %d bytes (%s allocs) at start-up, more than %d: build its tables on first use (sync.OnceValue)", f[1], n, f[9], limit)
		}
	}
	if seen == 0 {
		t.Fatalf("no init line of tokperf's packages in GODEBUG=inittrace=1's output:\n%s", trace.String())
	}
}
