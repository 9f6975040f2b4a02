#!/usr/bin/env bash
# `mcp-trace analyze --otlp` against the Parquet run on the same capture. See bench/README.md.
#
#   bench/otlp.sh [-r ROUNDS] CAPTURE.pcap
#
# CAPTURE from examples/gen_capture.rs (its .truth.json beside it). Runs alternate, ROUNDS
# times each (default 5): `analyze CAPTURE -o x.parquet` and `analyze CAPTURE --otlp x.jsonl`
# (spans instead of the table). Prints best and median wall time, MB/s, requests/s, peak RSS,
# and the OTLP run against the Parquet run (targets, issue 34: at least 80% of the throughput,
# at most 10% more memory). Exits 1 if a run's outcomes differ from the ground truth.
# $MCP_TRACE is the binary (default: the release build in ${CARGO_TARGET_DIR:-target}).
set -euo pipefail

rounds=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) rounds="$2"; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) break ;;
  esac
done
capture="${1:?usage: bench/otlp.sh [-r ROUNDS] CAPTURE.pcap}"
target="${CARGO_TARGET_DIR:-$(dirname "$0")/../target}"
MCP_TRACE="${MCP_TRACE:-$target/release/mcp-trace}"
MEASURE="$(dirname "$0")/measure.py"
[[ -x "$MCP_TRACE" ]] || { echo "missing $MCP_TRACE (cargo build --release --bin mcp-trace)" >&2; exit 2; }
[[ -f "${capture%.pcap}.truth.json" ]] || { echo "missing ${capture%.pcap}.truth.json (generate with examples/gen_capture.rs)" >&2; exit 2; }

work="$(mktemp -d /tmp/mcp-bench-otlp.XXXXXX)"
trap 'rm -rf "$work"' EXIT
results="$work/results.tsv"   # run  round  wall_s  rss_kb

measure() {
  local run="$1" round="$2"; shift 2
  local res wall rss
  if ! res=$(python3 "$MEASURE" --err "$work/$run.err" -- "$@"); then
    echo "$run failed:" >&2; cat "$work/$run.err" >&2; exit 1
  fi
  read -r wall rss <<< "$res"
  printf '%s\t%s\t%s\t%s\n' "$run" "$round" "$wall" "$rss" >> "$results"
  printf '  round %s  %-8s %8.3f s  %7.1f MB RSS\n' "$round" "$run" "$wall" "$(echo "$rss/1024" | bc -l)" >&2
}

echo "capture: $capture ($(stat -c %s "$capture") bytes); rounds: $rounds" >&2
for round in $(seq 1 "$rounds"); do
  measure parquet "$round" "$MCP_TRACE" analyze "$capture" --no-progress -o "$work/x.parquet" \
    --summary "$work/parquet.json"
  measure otlp "$round" "$MCP_TRACE" analyze "$capture" --no-progress --otlp "$work/x.jsonl" \
    --summary "$work/otlp.json"
done

python3 "$(dirname "$0")/pair_report.py" "$results" "$work" parquet "$capture" "Parquet" otlp "$capture" "OTLP"
