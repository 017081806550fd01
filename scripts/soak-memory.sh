#!/usr/bin/env bash
# Measures whether memory stays flat in a long run: the simulator and the
# client as two processes, STREAMS requests in flight for DURATION, the
# resident memory (VmRSS) of each sampled every EVERY seconds. It prints
# the samples, then each process's RSS at the first minute, its highest
# after it, and the growth between: flat is a growth of a few percent.
# Streams still queued at the end of DURATION would take many minutes to
# drain at the simulator's pace: 15 s after it the client is interrupted
# (Ctrl-C: its finished requests are kept) and the run's table printed.
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
	--output-tokens "$output" --warmup 0 -o "$dir/run.jsonl" --debug-addr "127.0.0.1:$(( port + 1 ))" \
	>"$dir/run.out" 2>"$dir/run.err" &
client=$!
case $duration in
*m) seconds=$(( ${duration%m} * 60 )) ;;
*s) seconds=${duration%s} ;;
*) seconds=$duration ;;
esac
( sleep $(( seconds + 15 )); kill -INT "$client" 2>/dev/null ) &
# live is the client's live heap in MiB right after a collection (the Go
# profiler's in-use bytes): RSS also holds the runtime's free spans.
live() {
	curl -sf "http://127.0.0.1:$(( port + 1 ))/debug/pprof/heap?gc=1" -o "$dir/heap.pb.gz" &&
		go tool pprof -sample_index=inuse_space -top "$dir/heap.pb.gz" 2>/dev/null |
		awk '/of .* total/ { for (i = 1; i <= NF; i++) if ($i == "total") { v = $(i-1); u = substr(v, length(v)-1); n = v + 0; print (u == "GB" ? n * 1024 : u == "kB" ? n / 1024 : n); exit } }'
}
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; } # KiB
echo "t_s sim_rss_mib client_rss_mib"
start=$SECONDS
: >"$dir/samples"
while kill -0 "$client" 2>/dev/null; do
	t=$(( SECONDS - start ))
	s=$(rss "$sim"); c=$(rss "$client")
	echo "$t $(( s / 1024 )) $(( c / 1024 ))" | tee -a "$dir/samples"
	if [ "$t" -ge 60 ] && [ -z "${live60:-}" ]; then live60=$(live || echo "?"); fi
	if [ "$t" -ge "$seconds" ] && [ -z "${liveEnd:-}" ]; then liveEnd=$(live || echo "?"); fi
	sleep "$every"
done
status=0
wait "$client" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 130 ]; then echo "the client failed ($status):"; tail -5 "$dir/run.err"; exit 1; fi
awk 'function report(name, at60, peak) {
		printf "%s: %d MiB at 60 s, at most %d MiB after, growth %+.1f%%\n", name, at60, peak, at60 ? 100*(peak-at60)/at60 : 0
	}
	$1 >= 60 && !seen { s60 = $2; c60 = $3; seen = 1 }
	$1 >= 60 { if ($2 > smax) smax = $2; if ($3 > cmax) cmax = $3 }
	END {
		if (!seen) { print "the run was shorter than a minute: no figure"; exit 1 }
		report("simulator", s60, smax); report("client", c60, cmax)
	}' "$dir/samples"
echo "client live heap: ${live60:-?} MiB at 60 s, ${liveEnd:-?} MiB at ${seconds} s"
"$dir/tokperf" report "$dir/run.jsonl" | sed -n '4,7p'
grep -o '"status":"[a-z_]*"' "$dir/run.jsonl" | sort | uniq -c
