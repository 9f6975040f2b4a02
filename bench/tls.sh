#!/usr/bin/env bash
# `mcp-trace analyze` on a TLS capture with its key log against the plaintext
# capture of the same traffic, in one run. See bench/README.md.
#
#   bench/tls.sh [-r ROUNDS] PLAIN.pcap TLS.pcap
#
# Both from examples/gen_capture.rs with the same seed and size, TLS.pcap with
# `--tls` (it writes TLS.keys). The two ground truths must agree but for bytes and
# packets: the captures carry the same exchanges. Runs alternate, ROUNDS times
# each (default 5): `analyze PLAIN.pcap` and `analyze TLS.pcap --keylog TLS.keys`,
# Parquet out. Prints best and median wall time, MB/s of each file, requests/s
# (the same requests in both), peak RSS, and the TLS run against the plaintext
# run: throughput (target at least 80%) and peak RSS (target at most 10% above). Exits 1
# if a run's outcomes differ from the ground truth, 3 if this mcp-trace has no
# `--keylog`. THREADS=N adds `--threads N`, MCP_TRACE_ARGS other arguments,
# OUT_EXT=jsonl drives a build without `parquet`; $MCP_TRACE is the binary
# (default: the release build in ${CARGO_TARGET_DIR:-target}).
set -euo pipefail

rounds=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) rounds="$2"; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) break ;;
  esac
done
usage="usage: bench/tls.sh [-r ROUNDS] PLAIN.pcap TLS.pcap"
plain="${1:?$usage}"
tls="${2:?$usage}"

target="${CARGO_TARGET_DIR:-$(dirname "$0")/../target}"
MCP_TRACE="${MCP_TRACE:-$target/release/mcp-trace}"
OUT_EXT="${OUT_EXT:-parquet}"
MEASURE="$(dirname "$0")/measure.py"
extra=()
[[ -n "${THREADS:-}" ]] && extra+=(--threads "$THREADS")
# shellcheck disable=SC2206  # word splitting wanted
[[ -n "${MCP_TRACE_ARGS:-}" ]] && extra+=($MCP_TRACE_ARGS)

[[ -x "$MCP_TRACE" ]] || { echo "missing $MCP_TRACE (cargo build --release --bin mcp-trace)" >&2; exit 2; }
if ! "$MCP_TRACE" analyze --help 2>&1 | grep -q -- '--keylog'; then
  echo "bench/tls.sh: $MCP_TRACE analyze has no --keylog option: the TLS capture cannot be" >&2
  echo "decrypted by this build, so there is no TLS figure to measure (none is made up)." >&2
  echo "examples/tls_throughput.rs measures the TLS stage alone meanwhile." >&2
  exit 3
fi
keys="${tls%.pcap}.keys"
for f in "$plain" "$tls" "$keys" "${plain%.pcap}.truth.json" "${tls%.pcap}.truth.json"; do
  [[ -f "$f" ]] || { echo "missing $f (generate with examples/gen_capture.rs, the TLS one with --tls)" >&2; exit 2; }
done

# The same traffic: the truths agree but for the files' sizes.
python3 - "${plain%.pcap}.truth.json" "${tls%.pcap}.truth.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if "tls" in a or "tls" not in b:
    sys.exit(f"{sys.argv[1]} must be a plaintext capture's truth and {sys.argv[2]} a TLS one's")
for t in (a, b):
    for k in ("bytes", "packets", "tls"):
        t.pop(k, None)
if a != b:
    sys.exit("the two captures do not carry the same traffic (generate them with the same seed, size and --conns)")
EOF

work="$(mktemp -d /tmp/mcp-bench-tls.XXXXXX)"
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
  printf '  round %s  %-10s %8.3f s  %7.1f MB RSS\n' "$round" "$run" "$wall" "$(echo "$rss/1024" | bc -l)" >&2
}

echo "plaintext: $plain ($(stat -c %s "$plain") bytes); TLS: $tls ($(stat -c %s "$tls") bytes); rounds: $rounds; args: ${extra[*]:-none}" >&2
for round in $(seq 1 "$rounds"); do
  measure plaintext "$round" "$MCP_TRACE" analyze "$plain" -o "$work/plain.$OUT_EXT" \
    --summary "$work/plaintext.json" ${extra[@]+"${extra[@]}"}
  measure tls "$round" "$MCP_TRACE" analyze "$tls" --keylog "$keys" -o "$work/tls.$OUT_EXT" \
    --summary "$work/tls.json" ${extra[@]+"${extra[@]}"}
done

python3 "$(dirname "$0")/pair_report.py" "$results" "$work" plaintext "$plain" "plaintext" tls "$tls" TLS "TLS not decrypted?"
