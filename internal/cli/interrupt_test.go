package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// Ctrl-C while tokperf asks a server what it is (one that accepts and never
// answers) is an interrupt: exit 130 and "interrupted", not exit 1 with
// "context canceled".
func TestInterruptDuringDetection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	var out, errw bytes.Buffer
	code := Run(ctx, []string{"run", "--url", "http://" + ln.Addr().String(), "--requests", "4", "-o", t.TempDir() + "/r.jsonl"}, strings.NewReader(""), &out, &errw)
	if code != exitInterrupted || !strings.Contains(errw.String(), "interrupted") {
		t.Errorf("exit %d, stderr %q; want %d and interrupted", code, errw.String(), exitInterrupted)
	}
}
