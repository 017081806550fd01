package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
)

// The barrier is a directory on a file system all shards share. For each
// stage S of run ID:
//
//	DIR/ID/stage-S/shard-I   shard I is ready for stage S (barrierShard)
//	DIR/ID/stage-S/start     shard 0's plan: the stage starts then (barrierStart)
//
// Each shard writes its file (to a temporary name, then renamed, so no
// reader sees half a file) once its warm-up is done; shard 0 waits until
// all N are there and writes the start a Lead ahead, on the server's clock
// as it estimates it; every shard waits for that start, then until its
// own estimate of the server's clock reaches it. A shard that waits longer
// than the timeout fails with the shards still missing named.

// barrierShard is DIR/ID/stage-S/shard-I.
type barrierShard struct {
	RunID  string `json:"run_id"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	Host   string `json:"host,omitempty"`
	// AtUnixNs is when it was written, on the server's clock.
	AtUnixNs int64 `json:"at_unix_ns"`
}

// barrierStart is DIR/ID/stage-S/start.
type barrierStart struct {
	RunID  string `json:"run_id"`
	Shards int    `json:"shards"`
	Stage  int    `json:"stage"`
	// StartUnixNs is the stage's start and WrittenUnixNs when shard 0
	// wrote it, both on the server's clock as shard 0 estimates it.
	StartUnixNs   int64 `json:"start_unix_ns"`
	WrittenUnixNs int64 `json:"written_unix_ns"`
}

// parseBarrierShard reads a shard's file; the error names the file and
// the field.
func parseBarrierShard(name string, b []byte) (barrierShard, error) {
	var s barrierShard
	if err := strictJSON(b, &s); err != nil {
		return s, fmt.Errorf("%s: %v", name, err)
	}
	switch {
	case s.RunID == "":
		return s, fmt.Errorf("%s: run_id: empty", name)
	case s.Shards < 1:
		return s, fmt.Errorf("%s: shards: %d, want 1 or more", name, s.Shards)
	case s.Shard < 0 || s.Shard >= s.Shards:
		return s, fmt.Errorf("%s: shard: %d, want 0 to %d", name, s.Shard, s.Shards-1)
	case s.AtUnixNs <= 0:
		return s, fmt.Errorf("%s: at_unix_ns: %d, want a time", name, s.AtUnixNs)
	}
	return s, nil
}

// parseBarrierStart reads shard 0's plan; the error names the file and
// the field.
func parseBarrierStart(name string, b []byte) (barrierStart, error) {
	var s barrierStart
	if err := strictJSON(b, &s); err != nil {
		return s, fmt.Errorf("%s: %v", name, err)
	}
	switch {
	case s.RunID == "":
		return s, fmt.Errorf("%s: run_id: empty", name)
	case s.Shards < 1:
		return s, fmt.Errorf("%s: shards: %d, want 1 or more", name, s.Shards)
	case s.Stage < 0:
		return s, fmt.Errorf("%s: stage: %d is negative", name, s.Stage)
	case s.StartUnixNs <= 0 || s.WrittenUnixNs <= 0:
		return s, fmt.Errorf("%s: start_unix_ns %d, written_unix_ns %d: want times", name, s.StartUnixNs, s.WrittenUnixNs)
	}
	return s, nil
}

// strictJSON decodes one JSON object with no unknown field into v.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// Barrier is one shard's side of the start of each stage.
type Barrier struct {
	shard *Config
	host  string
	// now is the server's clock as this shard estimates it: the local
	// wall clock plus the offset.
	now  func() time.Time
	poll time.Duration
}

// NewBarrier is c's barrier, on the server's clock as the local one plus
// offset (ClockOffset's estimate).
func NewBarrier(c *Config, offset time.Duration) *Barrier {
	host, _ := os.Hostname()
	return &Barrier{shard: c, host: host, now: func() time.Time { return time.Now().Add(offset) }}
}

func (b *Barrier) dir(stage int) string {
	return filepath.Join(b.shard.Barrier, b.shard.RunID, fmt.Sprintf("stage-%d", stage))
}

// Wait is stage's start, once it has come: what the shards agreed on, on
// the server's clock. With no barrier directory, the first stage starts at
// StartAt and the others at once.
func (b *Barrier) Wait(ctx context.Context, stage int) (time.Time, error) {
	s := b.shard
	if s.Barrier == "" {
		at := b.now()
		if stage == 0 && !s.StartAt.IsZero() {
			at = s.StartAt
		}
		return at, b.sleepUntil(ctx, at)
	}
	timeout := s.BarrierTimeout
	if timeout <= 0 {
		timeout = DefaultBarrierTimeout
	}
	dir := b.dir(stage)
	announced, err := b.announce(dir)
	if err != nil {
		return time.Time{}, err
	}
	deadline := time.Now().Add(timeout)
	var at time.Time
	if s.Index == 0 {
		at, err = b.lead(ctx, dir, stage, deadline, timeout)
	} else {
		at, err = b.follow(ctx, dir, stage, announced, deadline, timeout)
	}
	if err != nil {
		return time.Time{}, err
	}
	return at, b.sleepUntil(ctx, at)
}

// announce writes this shard's file in dir, once: a file already there is
// another process's or an earlier run's. It returns when it was written,
// on the server's clock.
func (b *Barrier) announce(dir string) (time.Time, error) {
	s := b.shard
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return time.Time{}, fmt.Errorf("barrier: %w", err)
	}
	me := filepath.Join(dir, fmt.Sprintf("shard-%d", s.Index))
	if _, err := os.Stat(me); err == nil {
		return time.Time{}, fmt.Errorf("barrier: %s exists: another process is %s of run %s, or an earlier run left it; give a new --run-id or empty %s", me, s.Label(), s.RunID, filepath.Join(s.Barrier, s.RunID))
	}
	announced := b.now()
	return announced, writeAtomic(me, barrierShard{RunID: s.RunID, Shard: s.Index, Shards: s.Count, Host: b.host, AtUnixNs: announced.UnixNano()})
}

// lead is shard 0's part: wait until every shard is in dir, then plan
// the stage's start a Lead ahead and write it.
func (b *Barrier) lead(ctx context.Context, dir string, stage int, deadline time.Time, timeout time.Duration) (time.Time, error) {
	s := b.shard
	for {
		missing, err := b.missing(dir)
		if err != nil {
			return time.Time{}, err
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("barrier %s: after %v, shards %s of %d are not there", dir, timeout, ints(missing), s.Count)
		}
		if err := b.sleep(ctx); err != nil {
			return time.Time{}, err
		}
	}
	startFile := filepath.Join(dir, "start")
	if _, err := os.Stat(startFile); err == nil {
		return time.Time{}, fmt.Errorf("barrier: %s exists: an earlier run of id %s left it; give a new --run-id or empty %s", startFile, s.RunID, filepath.Join(s.Barrier, s.RunID))
	}
	lead := s.Lead
	if lead <= 0 {
		lead = DefaultBarrierLead
	}
	now := b.now()
	at := now.Add(lead)
	if stage == 0 && s.StartAt.After(at) {
		at = s.StartAt
	}
	if err := writeAtomic(startFile, barrierStart{RunID: s.RunID, Shards: s.Count, Stage: stage, StartUnixNs: at.UnixNano(), WrittenUnixNs: now.UnixNano()}); err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// follow is every other shard's part: wait for shard 0's start in dir,
// refusing one that is not this run's stage.
func (b *Barrier) follow(ctx context.Context, dir string, stage int, announced, deadline time.Time, timeout time.Duration) (time.Time, error) {
	s := b.shard
	startFile := filepath.Join(dir, "start")
	for {
		data, err := infile.ReadAll(ctx, startFile, infile.Small) // a pipe or a device there is refused, not waited on
		if err == nil {
			return b.started(startFile, data, stage, announced)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return time.Time{}, fmt.Errorf("barrier: %w", err)
		}
		if time.Now().After(deadline) {
			missing, _ := b.missing(dir)
			why := "shard 0 wrote no start"
			if len(missing) > 0 {
				why = fmt.Sprintf("shards %s of %d are not there", ints(missing), s.Count)
			}
			return time.Time{}, fmt.Errorf("barrier %s: after %v, %s", dir, timeout, why)
		}
		if err := b.sleep(ctx); err != nil {
			return time.Time{}, err
		}
	}
}

// started reads shard 0's start file: the stage's start, if it is this
// run's stage, written after this shard announced itself.
func (b *Barrier) started(startFile string, data []byte, stage int, announced time.Time) (time.Time, error) {
	s := b.shard
	st, err := parseBarrierStart(startFile, data)
	if err != nil {
		return time.Time{}, fmt.Errorf("barrier: %w", err)
	}
	switch {
	case st.RunID != s.RunID || st.Shards != s.Count || st.Stage != stage:
		return time.Time{}, fmt.Errorf("barrier: %s is stage %d of run %s of %d shards, this is stage %d of run %s of %d", startFile, st.Stage, st.RunID, st.Shards, stage, s.RunID, s.Count)
	case time.Unix(0, st.WrittenUnixNs).Before(announced.Add(-time.Second)):
		// Shard 0 writes the start only after every shard is
		// there: one written before this one was is an older run's.
		return time.Time{}, fmt.Errorf("barrier: %s was written before this shard arrived: an earlier run of id %s left it; give a new --run-id or empty %s", startFile, s.RunID, filepath.Join(s.Barrier, s.RunID))
	}
	return time.Unix(0, st.StartUnixNs), nil
}

// missing are the shards with no file in dir yet; a file that is there
// but not one of this run's is an error.
func (b *Barrier) missing(dir string) ([]int, error) {
	var out []int
	for i := range b.shard.Count {
		name := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		data, err := infile.ReadAll(context.Background(), name, infile.Small)
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, i)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("barrier: %w", err)
		}
		sh, err := parseBarrierShard(name, data)
		if err != nil {
			return nil, fmt.Errorf("barrier: %w", err)
		}
		if sh.RunID != b.shard.RunID || sh.Shards != b.shard.Count || sh.Shard != i {
			return nil, fmt.Errorf("barrier: %s is shard %d of %d of run %s, this run is %s of %d shards", name, sh.Shard, sh.Shards, sh.RunID, b.shard.RunID, b.shard.Count)
		}
	}
	return out, nil
}

func (b *Barrier) sleep(ctx context.Context) error {
	p := b.poll
	if p <= 0 {
		p = 50 * time.Millisecond
	}
	return sleepCtx(ctx, p)
}

// sleepUntil waits until the server's clock, as estimated, reaches at.
func (b *Barrier) sleepUntil(ctx context.Context, at time.Time) error {
	d := at.Sub(b.now())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeAtomic writes v as JSON to name through a temporary file renamed
// into place, so a reader sees the whole file or none.
func writeAtomic(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", name, os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// ints writes 1, 3 and 4 as "1, 3, 4".
func ints(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}
