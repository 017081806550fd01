package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/foreign"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// Explain sets another tool's result file (peer) beside a tokperf result
// file of the same server and attributes each figure's difference to its
// causes (METRICS.md "Why two tools disagree"). stage picks the peer's
// stage (from 0); tokperf's stage is the one at the same level, or its
// only one.
func Explain(ctx context.Context, peer, file string, stage int) (*analyze.Explanation, error) {
	tool, err := foreign.Sniff(peer)
	if err != nil {
		return nil, err
	}
	switch {
	case tool == "":
		return nil, fmt.Errorf("%s is not a result file of vLLM, SGLang, GuideLLM, AIPerf or inference-perf: give the other tool's file first, then tokperf's", peer)
	case tool == foreign.AIPerfRecs:
		return nil, fmt.Errorf("%s is AIPerf's per-request profile_export.jsonl, which holds no AIPerf figures: give its profile_export_aiperf.json", peer)
	}
	if t, err := foreign.Sniff(file); err == nil && t != "" {
		return nil, fmt.Errorf("%s is a %s file, not tokperf's: give the other tool's file first, then tokperf's", file, t)
	}
	p, err := foreign.ReadStated(peer)
	if err != nil {
		return nil, err
	}
	if stage < 0 || stage >= len(p.Stages) {
		return nil, fmt.Errorf("%s has %d stage(s): no stage %d", peer, len(p.Stages), stage+1)
	}
	recs, err := levelRecords(ctx, file, p.Stages[stage])
	if err != nil && len(p.Stages) > 1 {
		return nil, fmt.Errorf("%w (%s has %d stages: --stage picks another)", err, peer, len(p.Stages))
	}
	if err != nil {
		return nil, err
	}
	return analyze.Explain(p, stage, recs, file)
}

// levelRecords are the records of file's stage at the peer's level: its
// concurrency, or its rate; the file's only stage when the peer states
// neither.
func levelRecords(ctx context.Context, file string, ps analyze.Stage) ([]record.Record, error) {
	rd, f, err := results.OpenContext(ctx, file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byStage := map[int][]record.Record{}
	var order []int
	for rd.Next() {
		r := rd.Record()
		if _, ok := byStage[r.Stage]; !ok {
			order = append(order, r.Stage)
		}
		r.Text = "" // the figures need no text
		byStage[r.Stage] = append(byStage[r.Stage], r)
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	var levels []string
	for _, s := range order {
		r := byStage[s][0]
		if (ps.Rate > 0 && r.Rate == ps.Rate) || (ps.Rate == 0 && ps.Concurrency > 0 && r.Rate == 0 && r.Concurrency == ps.Concurrency) {
			return byStage[s], nil
		}
		levels = append(levels, fmt.Sprintf("C=%d rate=%g", r.Concurrency, r.Rate))
	}
	if ps.Concurrency == 0 && ps.Rate == 0 && len(order) == 1 {
		return byStage[order[0]], nil
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s holds no request", file)
	}
	slices.Sort(levels)
	return nil, fmt.Errorf("%s has no stage at the other tool's level (C=%d rate=%g); it has %s", file, ps.Concurrency, ps.Rate, strings.Join(levels, ", "))
}
