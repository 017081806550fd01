#!/bin/sh
# Regenerates the README's pictures of the html report: a short sweep of
# the embedded simulator (profile seed) saved as docs/images/example.jsonl,
# then two of its charts drawn by tokperf itself (--format png).
#
#   scripts/readme-image.sh            # a new run, then its pictures
#   scripts/readme-image.sh --redraw   # the pictures of the committed run (after a renderer change)
#
# TestREADMEImagesCurrent (internal/cli) fails when the committed pictures
# are not what the renderer draws of the committed run.
set -eu
cd "$(dirname "$0")/.."
dir=docs/images
bin=$(mktemp -d)/tokperf
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/tokperf
if [ "${1:-}" != "--redraw" ]; then
	"$bin" sweep --sim-profile seed -c 1,4,16,32 --requests 16,16,32,64 --output-tokens 48 \
		--seed 1 --quiet -o "$dir/example.jsonl" >/dev/null
fi
for chart in throughput pareto; do
	"$bin" report "$dir/example.jsonl" --format png --chart "$chart" -o "$dir/report-$chart.png"
	echo "$dir/report-$chart.png"
done
