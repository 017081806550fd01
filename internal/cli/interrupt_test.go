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

// Ctrl-C during a long prediction ends predict at once: exit 130 (it ran
// to the end of every replay, deaf to it).
func TestInterruptDuringPredict(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	var out, errw bytes.Buffer
	start := time.Now()
	// About 13 s of replay on a 2-core machine, left to run out unread.
	code := Run(ctx, []string{"predict", "--baseline", "seed-qwen3.5-397b-8x-rtxpro6000", "-c", "4096"}, strings.NewReader(""), &out, &errw)
	if took := time.Since(start); code != exitInterrupted || took > 10*time.Second {
		t.Errorf("exit %d after %v, stderr %q; want %d at the interrupt", code, took, errw.String(), exitInterrupted)
	}
}
