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

python3 - "$results" "$plain" "$tls" "$work" <<'EOF'
import json, os, statistics, sys
results, plain, tls, work = sys.argv[1:5]
runs = {}
for line in open(results):
    run, _round, wall, rss = line.split("\t")
    r = runs.setdefault(run, {"walls": [], "rss": 0})
    r["walls"].append(float(wall))
    r["rss"] = max(r["rss"], int(rss))
truth = json.load(open(plain[:-5] + ".truth.json"))
requests = truth["requests"]
files = {"plaintext": plain, "tls": tls}
print("\n| run | capture | MB | best wall s | median wall s | MB/s | requests/s | peak RSS MB |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
best = {}
for run in ("plaintext", "tls"):
    r = runs[run]
    mb = os.path.getsize(files[run]) / 1e6
    b = max(min(r["walls"]), 1e-3)
    best[run] = b
    print(f"| {run} | {os.path.basename(files[run])} | {mb:.0f} | {b:.3f} | "
          f"{statistics.median(r['walls']):.3f} | {mb / b:.1f} | {requests / b:,.0f} | {r['rss'] / 1024:.0f} |")
mismatch = False
want = truth["mcp_exchanges"]
for run in ("plaintext", "tls"):
    got = json.load(open(f"{work}/{run}.json"))
    g = got.get("mcp_exchanges", {})
    diff = {k: (want.get(k, 0), g.get(k, 0)) for k in sorted(set(want) | set(g)) if want.get(k, 0) != g.get(k, 0)}
    for key in ("sessions", "retries"):
        if key in truth and truth[key] != got.get(key):
            diff[key] = (truth[key], got.get(key))
    if diff:
        mismatch = True
        print(f"{run}: MISMATCH (name: truth vs mcp-trace): {diff}")
    else:
        print(f"{run}: outcomes, sessions and retries match the ground truth")
if mismatch:
    sys.exit("no ratio: a run does not match the ground truth (TLS not decrypted?)")
share = best["plaintext"] / best["tls"]
rss = runs["tls"]["rss"] / runs["plaintext"]["rss"]
print(f"\nTLS throughput (same requests, best rounds): {100 * share:.0f}% of plaintext "
      f"(target >= 80%: {'met' if share >= 0.8 else 'MISSED'})")
print(f"TLS peak RSS: {100 * (rss - 1):+.1f}% against plaintext "
      f"(target at most +10%: {'met' if rss - 1 <= 0.10 else 'MISSED'})")
sys.exit(1 if mismatch else 0)
EOF
