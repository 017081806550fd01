#!/usr/bin/env bash
# Compares the client's CPU per output token of two trees side by side, in
# one run: the tokperf of REF (default e5cc3a8, the client before the
# top-layer redesign) and of this work tree, each as `tokperf run` against
# one simulator (this tree's `tokperf sim`, 0.5 ms steps + 0.04 ms per
# stream, 50 output tokens per request). Where the machine has two CPUs the
# simulator is pinned to the second and each client (GOMAXPROCS=1) to the
# first. The runs alternate, ROUNDS times per level, and the CPU figure is
# the client process's user+system time (getrusage of the child) divided by
# the tokens it received (4,000 requests a run, 200,000 tokens): a loaded
# machine moves it less than wall time.
#
#	scripts/client-cpu.sh                     # e5cc3a8 vs the work tree, C = 32 and 256
#	REF=main LEVELS="1 32 256 1024" ROUNDS=5 scripts/client-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${REF:-e5cc3a8}
levels=${LEVELS:-32 256}
rounds=${ROUNDS:-3}
tokens=50
dir=$(mktemp -d)
trap 'kill "${sim:-}" 2>/dev/null || true; git worktree remove --force "$dir/ref" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
git worktree add --detach -q "$dir/ref" "$ref"
(cd "$dir/ref" && go build -o "$dir/old" ./cmd/tokperf)
go build -o "$dir/new" ./cmd/tokperf
cat >"$dir/profile.yaml" <<YAML
name: selftest
engine: vllm
model: selftest
max_running: 2048
kv_tokens: 1000000000
chunked_prefill: 100000000
context_length: 65536
decode: {linear: {a_ms: 0.5, c_ms: 0.04}}
prefill: {per_token_us: 0.01}
YAML
client="" server=""
if [ "$(nproc)" -ge 2 ]; then client="taskset -c 0" server="taskset -c 1"; fi
$server "$dir/new" sim --profile "$dir/profile.yaml" --addr 127.0.0.1:0 >"$dir/sim.out" 2>"$dir/sim.err" &
sim=$!
for _ in $(seq 50); do grep -q http "$dir/sim.out" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$dir/sim.out" | head -1)
# cpu runs one client and prints its CPU µs per output token.
cpu() {
	local exe=$1 c=$2 requests=$(( $2 * 4 > 4000 ? $2 * 4 : 4000 ))
	/usr/bin/time -f "%U %S" -o "$dir/time" env GOMAXPROCS=1 $client "$exe" run --url "$url" \
		--endpoint completions --model selftest -c "$c" --requests "$requests" --warmup 0 \
		--input-tokens 8 --output-tokens "$tokens" -o "$dir/r.jsonl" >/dev/null 2>"$dir/err" ||
		{ echo "$exe failed:" >&2; tail -3 "$dir/err" >&2; exit 1; }
	rm -f "$dir/r.jsonl"
	awk -v n=$(( requests * tokens )) '{ printf "%.2f", ($1 + $2) * 1e6 / n }' "$dir/time"
}
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $ref vs the work tree; CPU µs per output token"
echo "streams  $ref  work-tree  ratio of medians, mean paired ratio ±2 s.e."
for c in $levels; do
	old=() new=()
	for _ in $(seq "$rounds"); do
		old+=("$(cpu "$dir/old" "$c")")
		new+=("$(cpu "$dir/new" "$c")")
	done
	printf '%s\n' "${old[@]}" >"$dir/o"; printf '%s\n' "${new[@]}" >"$dir/n"
	mo=$(sort -g "$dir/o" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	mn=$(sort -g "$dir/n" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	# The mean of the paired ratios (run i of each tree, one after the
	# other) and its 95% interval (±2 standard errors).
	paired=$(paste "$dir/n" "$dir/o" | awk '{ r = $1 / $2; s += r; ss += r * r; n++ } END { m = s / n; v = n > 1 ? (ss - n * m * m) / (n - 1) : 0; printf "%.3f ± %.3f", m, 2 * sqrt(v > 0 ? v / n : 0) }')
	printf '%7d  %s  %s  %.3f   paired %s   (runs: %s | %s)\n' "$c" "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)" "$paired" "${old[*]}" "${new[*]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
