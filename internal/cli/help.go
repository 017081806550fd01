package cli

// cmdHelp is what a command's help says above and below its flags.
type cmdHelp struct {
	usage    string // after "tokperf "
	summary  string
	examples string
}

// commandHelp is the help of every command, by name.
var commandHelp = map[string]cmdHelp{
	"sweep": {
		usage: "sweep [flags]",
		summary: `One stage per concurrency level (or per --rate), the headline table, warnings and a
verdict on scaling. With no --url the embedded simulated server is measured (profile
"seed"). Per stage, by default: max(100, 4×C) measured requests, or what starts within
--max-stage-time (30s), whichever comes first; the table says how many samples are
behind each percentile and marks one with too few (p99 of fewer than 100).`,
		examples: `  tokperf sweep                                           # the embedded simulator, C = 1, 4, 16, 32
  tokperf sweep --url http://127.0.0.1:30000 -c 1,8,32,64 # SGLang's native /generate
  tokperf sweep --url http://127.0.0.1:8000 --until-saturated --format html -o vllm.jsonl
  tokperf sweep --url http://127.0.0.1:8000 --rate 2,4,8 --slo-ttft 500ms
  tokperf sweep --config bench.yaml --seed 7             # a saved configuration, one flag overridden
  tokperf sweep --url http://vllm:8000 -c 64,256 --shard 0/4 --barrier /shared --run-id job1 -o -`,
	},
	"run": {
		usage:   "run [flags]",
		summary: `One stage: closed loop (-c N requests in flight) or open loop (--rate R per second).`,
		examples: `  tokperf run --url http://127.0.0.1:8000 -c 8 --requests 400
  tokperf run --url http://127.0.0.1:8000 --rate 5 --duration 2m --arrival poisson
  tokperf run --url http://127.0.0.1:8000 --endpoint chat --header 'X-Tenant: bench' \
      --extra-body '{"chat_template_kwargs":{"enable_thinking":false}}'
  tokperf run --url http://vllm:8000 -c 1000 --shard 1/2 --start-at 2026-12-01T17:00:00Z -o shard-1.jsonl`,
	},
	"soak": {
		usage: "soak [flags]",
		summary: `One level for a long time (--duration, default an hour) in time slices of a minute,
each written to the result file as it ends; then the stability verdict: the trend per hour
of throughput and latency with its interval, change points, and server memory growth.`,
		examples: `  tokperf soak --url http://127.0.0.1:8000 -c 32 --duration 8h
  tokperf soak --url http://127.0.0.1:8000 -c 16 --slice 5m --duration 24h -o day.jsonl`,
	},
	"overhead": {
		usage: "overhead [flags]",
		summary: `The raw generation endpoint against the chat API on the same server, paired request
by request: what the chat path adds to TTFT and to each token.`,
		examples: `  tokperf overhead --url http://127.0.0.1:30000 -c 1,8,32`,
	},
	"check": {
		usage: "check [flags]",
		summary: `Smoke and accuracy checks: sensible output, greedy determinism, exact answers under
load (-c, one level), your own questions (--eval), or --against another server.`,
		examples: `  tokperf check --url http://127.0.0.1:8000
  tokperf check --url http://127.0.0.1:8000 -c 16 --min-accuracy 0.95
  tokperf check --url http://new:8000 --against http://old:8000`,
	},
	"experiment": {
		usage: "experiment FILE.yaml [flags]",
		summary: `Start each server configuration in FILE, wait until it is ready, check it, sweep it
(each workload), measure the chat API's overhead, soak it, stop it; then compare them and
give four verdicts: representative, configurations (does MTP help?), fair, stable.
The guide with a worked example: docs/experiments.md.`,
		examples: `  tokperf experiment examples/seed-loop.yaml     # the seed's whole loop on the simulator
  tokperf experiment examples/mtp-ab.yaml        # an A/B of two simulated servers
  tokperf experiment examples/two-servers.yaml -o two-servers --format json`,
	},
	"report": {
		usage: "report FILE... [flags]",
		summary: `Re-render saved result files in any format. The files of one sharded run (--shard I/N,
the same run id) are merged into one run, with a table of the shards.`,
		examples: `  tokperf report tokperf-results/20261201-101500-sweep.jsonl --format markdown
  tokperf report shard-0.jsonl shard-1.jsonl shard-2.jsonl shard-3.jsonl   # one merged run`,
	},
	"compare": {
		usage: "compare A B... [flags] | compare A --baseline NAME [flags]",
		summary: `A/B: each run against the first, per shared level, with significance; or one run
against a published baseline, per GPU, with a fairness list. The files of one sharded run
(--shard I/N) are one run, merged.`,
		examples: `  tokperf compare before.jsonl after.jsonl
  tokperf compare mine.jsonl --baseline catid-qwen3.5-4gpu --gpus 8 --claim 3x`,
	},
	"explain": {
		usage: "explain PEER_FILE TOKPERF_FILE [flags]",
		summary: `Why another tool's figures differ from tokperf's for the same server: the other
tool's result file (vLLM bench serve, SGLang bench_serving, GuideLLM, AIPerf's
profile_export_aiperf.json, an inference-perf stage's lifecycle report) beside a tokperf run at the same level. Each figure (TTFT,
TPOT, ITL, E2E, output tok/s, requests/s) goes from tokperf's value, through each
definition the other tool uses (recomputed from tokperf's own records: TTFT anchor, end
of a request, TPOT formula, ITL per token or per chunk or per request, percentile
method, throughput window) and the workload differences it can estimate, to the other
tool's value; what no cause explains is shown (docs/METRICS.md "Why two tools disagree").`,
		examples: `  tokperf explain vllm-result.json tokperf-results/20261202-run.jsonl
  tokperf explain guidellm-benchmarks.json mine.jsonl --stage 2 --format json`,
	},
	"baselines": {
		usage:    "baselines [NAME...] [flags]",
		summary:  `The published baselines tokperf knows; with NAME, one in full.`,
		examples: `  tokperf baselines catid-qwen3.5-4gpu`,
	},
	"selftest": {
		usage: "selftest [flags]",
		summary: `How many concurrent streams tokperf measures accurately on this machine: the simulator
runs in its own process as the ground truth.`,
		examples: `  tokperf selftest --streams 32,256,1024`,
	},
	"sim": {
		usage:   "sim [flags]",
		summary: `Run the embedded simulated server on its own (its ground truth at /sim/trace).`,
		examples: `  tokperf sim --profile tiny --addr 127.0.0.1:30000
  tokperf sim --list-profiles`,
	},
	"config": {
		usage: "config print [run flags]",
		summary: `Print the effective configuration of a run or sweep as a --config file: the flags
given, over the file given with --config, over the defaults; or, with --from RESULT.jsonl,
the configuration a result file was made with, to run it again.`,
		examples: `  tokperf config print --url http://127.0.0.1:8000 -c 1,8 > bench.yaml
  tokperf config print --from tokperf-results/20261201-101500-sweep.jsonl > again.yaml
  tokperf sweep --config again.yaml`,
	},
	"trace": {
		usage: "trace stats FILE.jsonl",
		summary: `What a Mooncake-format trace holds: its rate and burstiness, the length
distributions, and how much of its prompts a prefix cache could reuse.`,
		examples: `  tokperf trace stats mooncake.jsonl
  tokperf run --url http://127.0.0.1:8000 --trace mooncake.jsonl --speedup 2`,
	},
	"fit": {
		usage: "fit RESULT.jsonl [-o profile.yaml] [flags]",
		summary: `Fit the embedded simulator to a measured closed-loop sweep: its scheduler
replays the run's own requests and the profile's decode step times, prefill
cost and per-request overhead are moved until the replay's figures match the
measured ones (docs/METRICS.md §10). Prints each level measured against the
twin, each parameter with its standard error, what the data could not pin
down, and the profile, which -o writes for tokperf sim.`,
		examples: `  tokperf fit tokperf-results/20261201-sweep.jsonl -o twin.yaml
  tokperf sim --profile twin.yaml
  tokperf fit r.jsonl --fit-levels 1,4,16 --format json`,
	},
	"predict": {
		usage: "predict RESULT.jsonl -c LEVELS [--slo-ttft D] [flags]",
		summary: `The digital twin's figures at concurrency levels the run did not measure,
each with a 95% interval (the fit's uncertainty and its error at the measured
levels); with an SLO, the highest level predicted to keep 90% of requests
within it. Beyond the largest measured level the step time's growth was not
measured: the interval spans it growing straight, along a power law and
compute-bound; check the prediction (sweep --until-saturated runs and
compares it).`,
		examples: `  tokperf predict r.jsonl -c 48,64,128
  tokperf predict r.jsonl --slo-ttft 2s --slo-tpot 50ms
  tokperf predict r.jsonl --fit-levels 1,4,16 -c 32,64`,
	},
	"k8s": {
		usage: "k8s job|slurm --shards N [flags] -- run|sweep [flags]",
		summary: `Print what runs one benchmark as N shards on N nodes, started by the cluster's own batch
machinery: a Kubernetes batch/v1 Indexed Job (kubectl apply -f) or a Slurm array script
(sbatch). Each shard runs its share of the total load given after -- (--shard I/N, the
index from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID); all start together (a barrier in
the shared directory, or --start-in); no shard is retried (a late one would skew the run).
Merge the shards' result files with tokperf report shard-*.jsonl. Files the benchmark's
flags name (--dataset, --config …) are read on the nodes.`,
		examples: `  tokperf k8s job --shards 4 --image reg.example/tokperf --pvc results -- sweep --url http://vllm:8000 -c 64,256,1024
  tokperf k8s job --shards 8 --image reg.example/tokperf --logs --start-in 3m -- run --url http://vllm:8000 --rate 400
  tokperf k8s slurm --shards 4 --dir /shared/bench -- sweep --url http://gpu-node:8000 -c 256,1024`,
	},
	"completion": {
		usage:   "completion bash|zsh|fish",
		summary: `A shell completion script for tokperf's commands and flags.`,
		examples: `  source <(tokperf completion bash)
  tokperf completion zsh > "${fpath[1]}/_tokperf"
  tokperf completion fish > ~/.config/fish/completions/tokperf.fish`,
	},
}
