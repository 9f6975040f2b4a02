#!/usr/bin/env bash
# `mcp-trace analyze` on an h2c capture against the HTTP/1.1 capture of the same
# traffic, in one run. See bench/README.md.
#
#   bench/h2.sh [-r ROUNDS] PLAIN.pcap H2C.pcap
#
# Both from examples/gen_capture.rs with the same seed, size and --conns, H2C.pcap
# with `--h2c`. The two ground truths must agree but for bytes, packets,
# connections and the HTTP/2 counts: the captures carry the same requests. Runs
# alternate, ROUNDS times each (default 5): `analyze PLAIN.pcap` and `analyze
# H2C.pcap`, Parquet out. Prints best and median wall time, MB/s of each file,
# requests/s (the same requests in both), peak RSS, and the h2c run against the
# HTTP/1.1 run: throughput (target at least 80%) and peak RSS (target at most 10% above).
# Exits 1 if a run's outcomes differ from the ground truth, 3 if this mcp-trace
# reads no HTTP/2 (no request of the h2c capture found). THREADS=N adds
# `--threads N`, MCP_TRACE_ARGS other arguments, OUT_EXT=jsonl drives a build
# without `parquet`; $MCP_TRACE is the binary (default: the release build in
# ${CARGO_TARGET_DIR:-target}).
set -euo pipefail

rounds=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) rounds="$2"; shift 2 ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) break ;;
  esac
done
usage="usage: bench/h2.sh [-r ROUNDS] PLAIN.pcap H2C.pcap"
plain="${1:?$usage}"
h2c="${2:?$usage}"

target="${CARGO_TARGET_DIR:-$(dirname "$0")/../target}"
MCP_TRACE="${MCP_TRACE:-$target/release/mcp-trace}"
OUT_EXT="${OUT_EXT:-parquet}"
MEASURE="$(dirname "$0")/measure.py"
extra=()
[[ -n "${THREADS:-}" ]] && extra+=(--threads "$THREADS")
# shellcheck disable=SC2206  # word splitting wanted
[[ -n "${MCP_TRACE_ARGS:-}" ]] && extra+=($MCP_TRACE_ARGS)

[[ -x "$MCP_TRACE" ]] || { echo "missing $MCP_TRACE (cargo build --release --bin mcp-trace)" >&2; exit 2; }
for f in "$plain" "$h2c" "${plain%.pcap}.truth.json" "${h2c%.pcap}.truth.json"; do
  [[ -f "$f" ]] || { echo "missing $f (generate with examples/gen_capture.rs, the h2c one with --h2c)" >&2; exit 2; }
done

# The same traffic: the truths agree but for the files' sizes and the connections.
python3 - "${plain%.pcap}.truth.json" "${h2c%.pcap}.truth.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if "http2" in a or "tls" in a or "http2" not in b:
    sys.exit(f"{sys.argv[1]} must be a plaintext HTTP/1.1 capture's truth and {sys.argv[2]} an h2c one's")
if b["h2_streams"] != a["http_exchanges"]:
    sys.exit(f"{b['h2_streams']} streams for {a['http_exchanges']} exchanges")
for t in (a, b):
    for k in ("bytes", "packets", "tcp_connections", "http2", "h2_streams", "h2_header_blocks"):
        t.pop(k, None)
if a != b:
    sys.exit("the two captures do not carry the same traffic (generate them with the same seed, size and --conns)")
PY

work="$(mktemp -d /tmp/mcp-bench-h2.XXXXXX)"
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

echo "HTTP/1.1: $plain ($(stat -c %s "$plain") bytes); h2c: $h2c ($(stat -c %s "$h2c") bytes); rounds: $rounds; args: ${extra[*]:-none}" >&2
for round in $(seq 1 "$rounds"); do
  measure http1 "$round" "$MCP_TRACE" analyze "$plain" -o "$work/http1.$OUT_EXT" \
    --summary "$work/http1.json" ${extra[@]+"${extra[@]}"}
  measure h2c "$round" "$MCP_TRACE" analyze "$h2c" -o "$work/h2c.$OUT_EXT" \
    --summary "$work/h2c.json" ${extra[@]+"${extra[@]}"}
  if [[ "$round" == 1 ]] && python3 -c "import json,sys; sys.exit(0 if sum(json.load(open(sys.argv[1])).get('mcp_exchanges', {}).values()) == 0 else 1)" "$work/h2c.json"; then
    echo "bench/h2.sh: $MCP_TRACE found no request in $h2c: this build reads no HTTP/2," >&2
    echo "so there is no h2c figure to measure (none is made up)." >&2
    exit 3
  fi
done

python3 "$(dirname "$0")/pair_report.py" "$results" "$work" http1 "$plain" "HTTP/1.1" h2c "$h2c" h2c
