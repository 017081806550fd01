#!/usr/bin/env bash
# Measures whether memory stays flat in a long run: the simulator and the
# client as two processes, STREAMS requests in flight for DURATION, the
# resident memory (VmRSS) of each sampled every EVERY seconds. It prints
# the samples, then each process's RSS at the first minute, its highest
# after it, and the growth between: flat is a growth of a few percent.
#
# Heavy: 10,000 streams take every core of a small machine and ~1.5 GB.
# Run it alone, on a machine with nothing else to do:
#
#	scripts/soak-memory.sh                      # 10000 streams, 3m
#	STREAMS=2000 DURATION=90s scripts/soak-memory.sh
#	PROFILE=tiny OUTPUT_TOKENS=512 scripts/soak-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${STREAMS:-10000}
duration=${DURATION:-3m}
every=${EVERY:-5}
profile=${PROFILE:-seed}
output=${OUTPUT_TOKENS:-256}
port=${PORT:-30731}
dir=$(mktemp -d)
trap 'kill "${sim:-}" "${client:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT
ulimit -n "$(( streams * 2 + 1024 ))" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
go build -o "$dir/tokperf" ./cmd/tokperf
"$dir/tokperf" sim --profile "$profile" --addr "127.0.0.1:$port" >"$dir/sim.out" 2>"$dir/sim.err" &
sim=$!
sleep 1
"$dir/tokperf" run --url "http://127.0.0.1:$port" -c "$streams" --duration "$duration" \
	--output-tokens "$output" --warmup 0 -o "$dir/run.jsonl" >"$dir/run.out" 2>"$dir/run.err" &
client=$!
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; } # KiB
echo "t_s sim_rss_mib client_rss_mib"
start=$SECONDS
: >"$dir/samples"
while kill -0 "$client" 2>/dev/null; do
	t=$(( SECONDS - start ))
	s=$(rss "$sim"); c=$(rss "$client")
	echo "$t $(( s / 1024 )) $(( c / 1024 ))" | tee -a "$dir/samples"
	sleep "$every"
done
wait "$client" || { echo "the client failed:"; tail -5 "$dir/run.err"; exit 1; }
awk 'function report(name, at60, peak) {
		printf "%s: %d MiB at 60 s, at most %d MiB after, growth %+.1f%%\n", name, at60, peak, at60 ? 100*(peak-at60)/at60 : 0
	}
	$1 >= 60 && !seen { s60 = $2; c60 = $3; seen = 1 }
	$1 >= 60 { if ($2 > smax) smax = $2; if ($3 > cmax) cmax = $3 }
	END {
		if (!seen) { print "the run was shorter than a minute: no figure"; exit 1 }
		report("simulator", s60, smax); report("client", c60, cmax)
	}' "$dir/samples"
tail -3 "$dir/run.out"
