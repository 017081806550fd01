# Writes inference-perf-stage.json as inference-perf's summarize_requests
# (inference_perf/reportgen/base.py at 7de5ef2) makes a concurrent stage's
# report from these known request timings (seconds on perf_counter), with
# no tokenizer in its config: output_token_times are the text chunks'
# arrivals. Written by tokperf's authors, not inference-perf's output.
# numpy's linear percentile is written out so that the script needs only
# Python: python3 inference-perf-stage.py > inference-perf-stage.json
import json

PCTS = [0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9]

# start, end ([DONE] read), text-chunk arrivals, output tokens, prompt tokens
REQS = [
    (0.000, 0.420, [0.100, 0.180, 0.260, 0.340, 0.410], 5, 32),
    (0.010, 0.450, [0.130, 0.210, 0.290, 0.370, 0.440], 5, 30),
    (0.421, 0.800, [0.500, 0.570, 0.640, 0.710, 0.790], 5, 34),
    (0.451, 0.700, [0.560, 0.620, 0.690], 3, 28),
]
FAILED = [(0.701, 0.720)]  # one HTTP 500, its latency in failures


def pct(xs, p):
    s = sorted(xs)
    at = p / 100 * (len(s) - 1)
    lo = int(at)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (at - lo) * (s[hi] - s[lo])


def summarize(xs):
    if not xs:
        return None
    out = {"mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs)}
    for p in PCTS:
        out["median" if p == 50 else f"p{p:g}"] = pct(xs, p)
    return out


starts = [r[0] for r in REQS] + [f[0] for f in FAILED]
ends = [r[1] for r in REQS] + [f[1] for f in FAILED]
total = max(ends) - min(starts)
lat = [e - s for s, e, _, _, _ in REQS]
ttft = [c[0] - s for s, _, c, _, _ in REQS]
tpot = [(c[-1] - c[0]) / (n - 1) for _, _, c, n, _ in REQS]
ntpot = [(e - s) / n for s, e, _, n, _ in REQS]
itl = [b - a for _, _, c, _, _ in REQS for a, b in zip(c, c[1:])]
out_tokens = [float(n) for *_, n, _ in REQS]
in_tokens = [float(p) for *_, p in REQS]
report = {
    "benchmark_time_seconds": total,
    "load_summary": {
        "count": len(starts),
        "schedule_delay": summarize([0.0] * len(starts)),
        "send_duration": max(starts) - min(starts),
        "requested_rate": 8.0,
        "achieved_rate": len(starts) / (max(starts) - min(starts)),
        "concurrency": 2,
    },
    "successes": {
        "count": len(REQS),
        "latency": {
            "request_latency": summarize(lat),
            "normalized_time_per_output_token": summarize(ntpot),
            "time_per_output_token": summarize(tpot),
            "time_to_first_token": summarize(ttft),
            "inter_token_latency": summarize(itl),
        },
        "throughput": {
            "input_tokens_per_sec": sum(in_tokens) / total,
            "output_tokens_per_sec": sum(out_tokens) / total,
            "total_tokens_per_sec": (sum(in_tokens) + sum(out_tokens)) / total,
            "requests_per_sec": len(REQS) / total,
        },
        "prompt_tokens": {"total": sum(in_tokens), "cached": 0.0, "uncached": sum(in_tokens), **summarize(in_tokens)},
        "output_len": summarize(out_tokens),
        "output_tokens": {"total": sum(out_tokens), **summarize(out_tokens)},
        "token_count_mismatches": 0,
    },
    "failures": {
        "count": len(FAILED),
        "request_latency": summarize([e - s for s, e in FAILED]),
        "prompt_tokens": {"total": 0.0, "cached": 0.0, "uncached": 0.0, **summarize([0.0] * len(FAILED))},
        "by_label": {"500 - Internal Server Error": {"count": 1, "messages": [{"message": "boom"}]}},
    },
}
print(json.dumps(report, indent=2))
